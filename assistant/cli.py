"""`assistant` on the command line. Stdout carries only the answer (or one JSON object);
logs and errors go to stderr, and errors exit non-zero.

Imports stay light at module level: the heavy parts load only in the command that needs them.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
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

    memory = commands.add_parser("memory", help="long-term memory: search, list, forget")
    memory_commands = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    search = memory_commands.add_parser("search", help="hybrid search of conclusions")
    search.add_argument("query", nargs="+")
    search.add_argument("-k", type=int, default=10, help="how many (default 10)")
    search.add_argument("--kind", choices=["fact", "preference", "decision", "note"])
    search.add_argument("--tag")
    search.add_argument("--all", action="store_true", help="include superseded and retired")
    search.add_argument("--json", action="store_true")
    listing = memory_commands.add_parser("list", help="the most recent conclusions")
    listing.add_argument(
        "--status", default="active", choices=["active", "superseded", "retired", "all"]
    )
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--json", action="store_true")
    show = memory_commands.add_parser("show", help="one conclusion with its history")
    show.add_argument("id")
    show.add_argument("--json", action="store_true")
    forget = memory_commands.add_parser("forget", help="retire a conclusion")
    forget.add_argument("id")
    forget.add_argument("--json", action="store_true")
    memory_commands.add_parser("reindex", help="rebuild the search indexes from SQLite")
    stats = memory_commands.add_parser("stats", help="counts by status and kind")
    stats.add_argument("--json", action="store_true")

    confirm = commands.add_parser("confirm", help="run (or reject) a pending dangerous action")
    confirm.add_argument("id", help="the action id the assistant gave")
    confirm.add_argument("--reject", action="store_true", help="say no instead")
    confirm.add_argument("--json", action="store_true")
    pending = commands.add_parser("pending", help="actions waiting for your confirmation")
    pending.add_argument("--json", action="store_true")

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
        if args.session is None:
            assistant.end_session(outcome.session)
    finally:
        assistant.close()
    if args.json:
        _print_json({**outcome.as_dict(), "served_by": "in-process"})
    elif outcome.ok:
        print(outcome.answer)
    if not outcome.ok:
        print(f"error: {outcome.stop_detail}", file=sys.stderr)
        return EXIT_ERROR
    for call in outcome.tool_calls:
        if call.status == "pending_confirmation":
            action = call.result["action_id"]
            print(f"pending: {call.result['would']} — run `assistant confirm {action}` to do it",
                  file=sys.stderr)
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
            _offer_confirmations(assistant, outcome)
    except KeyboardInterrupt:
        print(file=sys.stderr)
    finally:
        try:
            assistant.end_session(session)
        finally:
            assistant.close()
    return 0


def _offer_confirmations(assistant: Any, outcome: Any) -> None:
    """A yes at the chat prompt confirms what the turn left pending (SPEC S2)."""
    from tools.confirm import ConfirmationError

    for call in outcome.tool_calls:
        if call.status != "pending_confirmation":
            continue
        action_id = call.result["action_id"]
        if call.result.get("diff"):
            print(call.result["diff"], file=sys.stderr)
        try:
            reply = input(f"confirm: {call.result['would']}? [y/N] ").strip().lower()
        except EOFError:
            reply = ""
        try:
            if reply in {"y", "yes", "是", "好"}:
                done = assistant.confirm(action_id)
                print(f"{done.status}: {done.summary}", flush=True)
            else:
                assistant.reject(action_id)
                print(f"rejected: nothing changed ({action_id})", flush=True)
        except ConfirmationError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)


def _action_line(action: Any) -> str:
    when = time.strftime("%H:%M", time.localtime(action.created_at))
    return f"{action.id}  {action.status:<9} {action.summary}  (from {action.tool}, {when})"


def cmd_confirm(args: argparse.Namespace) -> int:
    from tools.confirm import ConfirmationError

    assistant = _open_assistant()
    try:
        action = assistant.reject(args.id) if args.reject else assistant.confirm(args.id)
    except ConfirmationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        assistant.close()
    lines = [_action_line(action)]
    if action.result is not None and not args.json:
        lines.append(json.dumps(action.result, ensure_ascii=False))
    _emit(args, action.as_dict(), lines)
    return 0 if action.status in {"confirmed", "rejected"} else EXIT_ERROR


def cmd_pending(args: argparse.Namespace) -> int:
    assistant = _open_assistant()
    try:
        actions = assistant.pending.list()
    finally:
        assistant.close()
    return _emit(
        args,
        [a.as_dict() for a in actions],
        [_action_line(a) for a in actions],
        empty="nothing is waiting for confirmation",
    )


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


def _memory_row(conclusion: Any) -> dict[str, Any]:
    row = conclusion.as_dict()
    if row.get("score") is None:
        row.pop("score", None)
    return row


def _memory_line(conclusion: Any) -> str:
    day = time.strftime("%Y-%m-%d", time.localtime(conclusion.valid_from))
    line = f"{conclusion.id}  [{conclusion.kind}] {conclusion.text}  ({conclusion.status}, {day})"
    return line + (f"  score {conclusion.score:.4f}" if conclusion.score is not None else "")


def cmd_memory(args: argparse.Namespace) -> int:
    assistant = _open_assistant()
    try:
        if assistant.memory is None:
            print("error: long-term memory is disabled ([memory] enabled = false)", file=sys.stderr)
            return EXIT_ERROR
        store = assistant.memory.store
        action = args.memory_command
        if action == "search":
            statuses = ("active", "superseded", "retired") if args.all else ("active",)
            kinds = [args.kind] if args.kind else None
            tags = [args.tag] if args.tag else None
            found = store.recall(
                " ".join(args.query), args.k, kinds=kinds, tags=tags, statuses=statuses
            )
            return _emit(
                args,
                [_memory_row(c) for c in found],
                [_memory_line(c) for c in found],
                empty="no conclusion matches",
            )
        if action == "list":
            status = None if args.status == "all" else args.status
            found = store.list(status=status, limit=args.limit)
            return _emit(
                args,
                [_memory_row(c) for c in found],
                [_memory_line(c) for c in found],
                empty="no conclusions stored",
            )
        if action == "show":
            conclusion = store.get(args.id)
            if conclusion is None:
                print(f"error: no conclusion {args.id!r}", file=sys.stderr)
                return EXIT_ERROR
            history = store.history(args.id)
            data = {**_memory_row(conclusion), "history": [_memory_row(c) for c in history]}
            lines = [_memory_line(conclusion), *(f"  replaced {_memory_line(c)}" for c in history)]
            return _emit(args, data, lines)
        if action == "forget":
            forgotten = store.forget(args.id)
            if forgotten is None:
                print(f"error: no active conclusion {args.id!r}", file=sys.stderr)
                return EXIT_ERROR
            return _emit(args, _memory_row(forgotten), [f"forgotten: {_memory_line(forgotten)}"])
        if action == "reindex":
            result = store.reindex()
            print(f"reindexed: {result['added']} conclusions embedded", file=sys.stderr)
            return 0
        stats = store.stats()
        lines = [f"{key}: {value}" for key, value in stats.items()]
        return _emit(args, stats, lines)
    finally:
        assistant.close()


def _emit(args: argparse.Namespace, data: Any, lines: list[str], empty: str = "") -> int:
    if getattr(args, "json", False):
        _print_json(data)
    elif lines:
        print("\n".join(lines))
    elif empty:
        print(empty, file=sys.stderr)
    return 0


COMMANDS = {
    "ask": cmd_ask,
    "chat": cmd_chat,
    "trace": cmd_trace,
    "memory": cmd_memory,
    "confirm": cmd_confirm,
    "pending": cmd_pending,
}


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
