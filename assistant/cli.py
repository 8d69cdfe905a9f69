"""`assistant` on the command line. Stdout carries only the answer (or one JSON object);
logs and errors go to stderr, and errors exit non-zero.

Imports stay light at module level: the heavy parts load only in the command that needs them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from assistant import __version__

EXIT_ERROR = 1
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="assistant", description="A local, memory-tiered personal assistant."
    )
    parser.add_argument("--version", action="version", version=f"assistant {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress to stderr")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    ask = commands.add_parser("ask", help="ask one question and print the answer")
    ask.add_argument("text", nargs="+", help="the question")
    ask.add_argument("--session", help="continue this session (default: a new one)")
    ask.add_argument("--json", action="store_true", help="print one JSON object")

    chat = commands.add_parser("chat", help="a multi-turn conversation at a prompt")
    chat.add_argument("--session", help="continue this session (default: a new one)")

    trace = commands.add_parser("trace", help="show what happened in a turn")
    trace.add_argument("turn", help="'last' or a turn id")
    trace.add_argument("--session", help="with 'last': the last turn of this session")
    trace.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=str))


def _open_assistant() -> Any:
    from assistant.app import Assistant
    from assistant.config import load_settings

    return Assistant(load_settings())


def cmd_ask(args: argparse.Namespace) -> int:
    assistant = _open_assistant()
    try:
        outcome = assistant.ask(" ".join(args.text), session=args.session)
    finally:
        assistant.close()
    if args.json:
        _print_json({**outcome.as_dict(), "served_by": "in-process"})
    elif outcome.ok:
        print(outcome.answer)
    if not outcome.ok:
        print(f"error: {outcome.stop_detail}", file=sys.stderr)
        return EXIT_ERROR
    if outcome.stop_reason.value != "final":
        print(
            f"note: stopped early ({outcome.stop_reason.value}): {outcome.stop_detail}",
            file=sys.stderr,
        )
    return 0


def cmd_chat(args: argparse.Namespace) -> int:
    from assistant.app import new_session_id

    assistant = _open_assistant()
    session = args.session or new_session_id()
    print(f"session {session} — empty line or Ctrl-D to leave", file=sys.stderr)
    try:
        while True:
            try:
                text = input("> ").strip()
            except EOFError:
                break
            if not text or text in {"exit", "quit", "/exit", "/quit"}:
                break
            outcome = assistant.ask(text, session=session)
            if outcome.ok:
                print(outcome.answer, flush=True)
            else:
                print(f"error: {outcome.stop_detail}", file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        print(file=sys.stderr)
    finally:
        assistant.close()
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    from assistant.config import load_settings
    from assistant.trace_view import render_turn
    from assistant.traces import TraceStore
    from memory.db import Database

    settings = load_settings()
    database = Database(settings.database_path)
    try:
        store = TraceStore(database)
        turn_id = store.last_turn_id(args.session) if args.turn == "last" else args.turn
        turn = store.turn(turn_id) if turn_id else None
    finally:
        database.close()
    if turn is None:
        what = "no turn has been recorded yet" if args.turn == "last" else f"no turn {args.turn!r}"
        print(f"error: {what} in {settings.database_path}", file=sys.stderr)
        return EXIT_ERROR
    if args.json:
        _print_json(turn)
    else:
        print(render_turn(turn))
    return 0


COMMANDS = {"ask": cmd_ask, "chat": cmd_chat, "trace": cmd_trace}


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    from assistant.errors import AssistantError, ConfigError
    from memory.errors import StorageError

    try:
        return COMMANDS[args.command](args)
    except ConfigError as exc:
        print(f"error: configuration: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (AssistantError, StorageError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
