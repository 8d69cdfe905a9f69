"""`assistant` on the command line. Stdout carries only the answer (or one JSON object);
logs and errors go to stderr, and errors exit non-zero.

Every command runs in the daemon when one owns the data directory (through the light
client, `assistant.client`), and in this process otherwise; both run the same operations
(`assistant.commands`) and print the same data. Imports stay light at module level: the
heavy parts load only in the command that needs them, and only in-process.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from assistant import __version__

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # Ctrl-C, as shells report a SIGINT


def _positive(text: str) -> int:
    """A count (-k, --limit, n): a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


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

    commands.add_parser("daemon", help="run the background daemon in the foreground")
    status = commands.add_parser("status", help="model, daemon, jobs, watched folders, memory")
    status.add_argument("--json", action="store_true")

    memory = commands.add_parser("memory", help="long-term memory: search, list, forget")
    memory_commands = memory.add_subparsers(dest="memory_command", metavar="ACTION", required=True)
    search = memory_commands.add_parser("search", help="hybrid search of conclusions")
    search.add_argument("query", nargs="+")
    search.add_argument("-k", type=_positive, default=10, help="how many (default 10)")
    search.add_argument("--kind", choices=["fact", "preference", "decision", "note"])
    search.add_argument("--tag")
    search.add_argument("--all", action="store_true", help="include superseded and retired")
    search.add_argument("--as-of", metavar="DATE", help="the values valid then (YYYY-MM-DD)")
    search.add_argument("--json", action="store_true")
    listing = memory_commands.add_parser("list", help="the most recent conclusions")
    listing.add_argument(
        "--status", default="active", choices=["active", "superseded", "retired", "all"]
    )
    listing.add_argument("--limit", type=_positive, default=50)
    listing.add_argument("--json", action="store_true")
    show = memory_commands.add_parser("show", help="one conclusion with its history")
    show.add_argument("id")
    show.add_argument("--json", action="store_true")
    history = memory_commands.add_parser("history", help="every value of a conclusion, dated")
    history.add_argument("id")
    history.add_argument("--json", action="store_true")
    edit = memory_commands.add_parser("edit", help="correct a conclusion (the old one is kept)")
    edit.add_argument("id")
    edit.add_argument("text", nargs="+")
    edit.add_argument("--json", action="store_true")
    forget = memory_commands.add_parser("forget", help="retire a conclusion")
    forget.add_argument("id")
    forget.add_argument("--json", action="store_true")
    restore = memory_commands.add_parser("restore", help="bring back a forgotten conclusion")
    restore.add_argument("id")
    restore.add_argument("--json", action="store_true")
    memory_commands.add_parser("reindex", help="rebuild the search indexes from SQLite")
    stats = memory_commands.add_parser("stats", help="counts by status and kind")
    stats.add_argument("--json", action="store_true")

    vault = commands.add_parser("vault", help="the note vault: list, read, search, index, undo")
    vault_commands = vault.add_subparsers(dest="vault_command", metavar="ACTION", required=True)
    vlist = vault_commands.add_parser("list", help="notes in a folder, with a tag, or recent")
    vlist.add_argument("folder", nargs="?", help="a folder of the vault (default: all)")
    vlist.add_argument("--tag")
    vlist.add_argument("--recent", action="store_true", help="most recently changed first")
    vlist.add_argument("--limit", type=_positive, default=100)
    vlist.add_argument("--json", action="store_true")
    vread = vault_commands.add_parser("read", help="print a note (or one heading's section)")
    vread.add_argument("path")
    vread.add_argument("--heading")
    vread.add_argument("--json", action="store_true")
    vsearch = vault_commands.add_parser("search", help="full-text and semantic search")
    vsearch.add_argument("query", nargs="+")
    vsearch.add_argument("-k", type=_positive, default=8)
    vsearch.add_argument("--folder")
    vsearch.add_argument("--tag")
    vsearch.add_argument("--json", action="store_true")
    vindex = vault_commands.add_parser("index", help="index changed notes (--full: all)")
    vindex.add_argument("--full", action="store_true")
    vindex.add_argument("--json", action="store_true")
    vstatus = vault_commands.add_parser("status", help="index counts, last run, skipped notes")
    vstatus.add_argument("--json", action="store_true")
    vundo = vault_commands.add_parser("undo", help="undo the last N writes (default 1)")
    vundo.add_argument("n", nargs="?", type=_positive, default=1)
    vundo.add_argument("--force", action="store_true", help="even over later edits")
    vundo.add_argument("--json", action="store_true")

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

    jobs = commands.add_parser("jobs", help="scheduled prompts: add, list, remove, run, history")
    job_commands = jobs.add_subparsers(dest="jobs_command", metavar="ACTION", required=True)
    add = job_commands.add_parser("add", help="schedule a prompt")
    when = add.add_mutually_exclusive_group(required=True)
    when.add_argument("--cron", metavar="EXPR", help="crontab: 'minute hour day month weekday'")
    when.add_argument("--every", metavar="DURATION", help="an interval: 30s, 15m, 1h30m, 1d")
    add.add_argument("--prompt", required=True, help="what to ask at each run")
    add.add_argument("--name", help="the job's name (default: a generated one)")
    add.add_argument(
        "--write-scope",
        action="append",
        metavar="FOLDER",
        help="a vault folder its runs may write in (repeatable; default: [safety] write_scope)",
    )
    add.add_argument("--json", action="store_true")
    job_list = job_commands.add_parser("list", help="jobs with next run and last outcome")
    job_list.add_argument("--json", action="store_true")
    remove = job_commands.add_parser("remove", help="delete a job (its history stays)")
    remove.add_argument("name")
    remove.add_argument("--json", action="store_true")
    run = job_commands.add_parser("run", help="run a job now and wait for it")
    run.add_argument("name")
    run.add_argument("--json", action="store_true")
    history = job_commands.add_parser("history", help="recent runs (of one job)")
    history.add_argument("name", nargs="?")
    history.add_argument("--limit", type=_positive, default=20)
    history.add_argument("--json", action="store_true")

    watch = commands.add_parser("watch", help="file-triggered rules")
    watch_commands = watch.add_subparsers(dest="watch_command", metavar="ACTION", required=True)
    watch_list = watch_commands.add_parser("list", help="rules and recent triggers")
    watch_list.add_argument("--json", action="store_true")

    commands.add_parser(
        "mcp", help="serve the memory and vault tools over MCP on stdio (for MCP clients)"
    )
    tools = commands.add_parser("tools", help="every tool: source, flags, confirmation")
    tools.add_argument("--json", action="store_true")

    evaluate = commands.add_parser("eval", help="run evaluation cases against the model")
    evaluate.add_argument("cases", nargs="+", help="case files (.json, .yaml, .yml)")
    evaluate.add_argument("--category", action="append", help="only this category (repeatable)")
    evaluate.add_argument("--vault", help="the vault copied for vault cases (default: the file's)")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _print_json(value: Any) -> None:
    from assistant.terminal import json_text

    print(json_text(value))


def _emit(args: argparse.Namespace, data: Any, lines: list[str], empty: str = "") -> int:
    if getattr(args, "json", False):
        _print_json(data)
    elif lines:
        print("\n".join(lines))
    elif empty:
        print(empty, file=sys.stderr)
    return 0


def _say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class Backend:
    """Where a command runs: the daemon that owns the data directory, or this process.

    In-process, the data directory's lock is waited for; a daemon that takes it (or
    waits for it) meanwhile is gone through instead, and an open in-process backend hands
    the directory over to a daemon that waits for it (`hand_over`).
    """

    def __init__(self) -> None:
        from assistant.client import discover
        from assistant.paths import data_home

        self.home = data_home()
        self.client = discover(self.home, notice=_say)
        self._local: Any = None

    def __enter__(self) -> Backend:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._local is not None:
            self._local.close()

    def call(self, operation: str, **params: Any) -> Any:
        if self.client is not None:
            return self.client.call(operation, params)
        from assistant.commands import OPERATIONS, LocalServices
        from memory.lock import DataDirectoryBusy

        if self._local is None:
            from assistant.client import daemon_claims
            from assistant.config import load_settings

            self._local = LocalServices(
                load_settings(),
                lock_notice=_say,
                lock_yield_to=lambda holder: daemon_claims(self.home, holder),
            )
        try:
            return OPERATIONS[operation](self._local, **params)
        except DataDirectoryBusy:  # raised before the operation did anything
            if not self._to_daemon():
                raise
        return self.client.call(operation, params)

    def _to_daemon(self) -> bool:
        """Close what runs here and go through the daemon that claims the directory."""
        from assistant.client import discover

        wait = 120.0
        if self._local is not None:
            wait = self._local.settings.daemon.lock_wait_s
            self._local.close()
            self._local = None
        self.client = discover(self.home, wait_s=wait, notice=_say)
        return self.client is not None

    def hand_over(self) -> bool:
        """If a daemon waits for the directory this process holds, let it have it."""
        from memory.lock import waiting_daemon

        if self._local is None or not self._local.holds_lock:
            return False
        daemon = waiting_daemon(self.home)
        if daemon is None:
            return False
        _say(f"the daemon (pid {daemon.pid}) is starting: handing the data directory over")
        return self._to_daemon()

    def ask(self, text: str, session: str | None, observer: Any = None) -> dict[str, Any]:
        """A turn whose events `observer` sees as they happen (the daemon streams them)."""
        if observer is None:
            return self.call("ask", text=text, session=session)
        if self.client is not None:
            return self.client.ask_stream({"text": text, "session": session}, observer)
        return self.call("ask", text=text, session=session, observer=observer)

    def settle(self, *, spinner: bool = False) -> None:
        """In this process, the memory work the turns left runs now, after their answers
        were printed; the daemon queues it by itself."""
        if self._local is not None:
            from assistant.live import working

            with working("saving what this conversation concluded…", enabled=spinner):
                self._local.settle()


def _call(operation: str, **params: Any) -> Any:
    with Backend() as backend:
        return backend.call(operation, **params)


# -- turns ---------------------------------------------------------------------------------


def _pending_notes(outcome: dict[str, Any]) -> None:
    for call in outcome["tool_calls"]:
        if call["status"] == "pending_confirmation":
            action = call["result"]["action_id"]
            print(
                f"pending: {call['result']['would']} — run `assistant confirm {action}` to do it",
                file=sys.stderr,
            )


def _turn(backend: Backend, args: argparse.Namespace, text: str, session: str | None) -> Any:
    """One turn, shown as it happens where `assistant.live` says so; (outcome, view)."""
    from assistant.live import view_for

    view = view_for(args)
    try:
        return backend.ask(text, session, view), view
    finally:
        if view is not None:
            view.close()


def cmd_ask(args: argparse.Namespace) -> int:
    with Backend() as backend:
        outcome, view = _turn(backend, args, " ".join(args.text), args.session)
        failed = outcome["stop_reason"] == "model_error"
        if args.json:
            _print_json(outcome)
        elif not failed and not (view is not None and view.shown):
            print(outcome["answer"])
        sys.stdout.flush()  # the answer is out before the memory work below
        if failed:
            print(f"error: {outcome['stop_detail']}", file=sys.stderr)
            return EXIT_ERROR
        _pending_notes(outcome)
        if outcome["stop_reason"] != "final":
            print(
                f"note: stopped early ({outcome['stop_reason']}): {outcome['stop_detail']}",
                file=sys.stderr,
            )
        backend.settle(spinner=view is not None and view.tokens)
    return EXIT_ERROR if outcome["stop_reason"] == "cancelled" else 0


def cmd_chat(args: argparse.Namespace) -> int:
    from assistant.app import new_session_id

    session = args.session or new_session_id()
    with Backend() as backend:
        where = "through the daemon" if backend.client is not None else "in this process"
        print(f"session {session} ({where}) — empty line or Ctrl-D to leave", file=sys.stderr)
        turn = threading.Lock()  # a hand-over happens between turns, never during one
        done = threading.Event()
        threading.Thread(
            target=_hand_over_when_asked, args=(backend, turn, done), daemon=True
        ).start()
        try:
            while True:
                try:
                    text = input("> ").strip()  # a constant prompt: nothing to escape
                except EOFError:
                    break
                if not text or text in {"exit", "quit", "/exit", "/quit"}:
                    break
                with turn:  # a hand-over waits for the turn, its confirmations, its memory
                    outcome, view = _turn(backend, args, text, session)
                    if outcome["stop_reason"] == "model_error":
                        print(f"error: {outcome['stop_detail']}", file=sys.stderr, flush=True)
                    elif not (view is not None and view.shown):
                        print(outcome["answer"], flush=True)
                    _offer_confirmations(backend, outcome)
                    backend.settle()
        except KeyboardInterrupt:
            print(file=sys.stderr)
            return EXIT_INTERRUPTED
        finally:
            done.set()
            with turn:
                backend.call("end_session", session=session)
    return 0


def _hand_over_when_asked(backend: Backend, turn: threading.Lock, done: threading.Event) -> None:
    """An in-process chat keeps the data directory only until a daemon asks for it."""
    while not done.wait(0.5):
        if turn.acquire(blocking=False):
            try:
                if backend.hand_over():
                    return
            except Exception as exc:  # noqa: BLE001 - the chat goes on in-process
                _say(f"error: could not hand the chat over to the daemon: {exc}")
            finally:
                turn.release()


def _offer_confirmations(backend: Backend, outcome: dict[str, Any]) -> None:
    """A yes at the chat prompt confirms what the turn left pending (SPEC S2)."""
    from assistant.errors import CommandError

    for call in outcome["tool_calls"]:
        if call["status"] != "pending_confirmation":
            continue
        action_id = call["result"]["action_id"]
        if call["result"].get("diff"):
            print(call["result"]["diff"], file=sys.stderr)
        from assistant.terminal import visible

        try:  # input() may write its prompt straight to the terminal, past sys.stdout
            reply = input(visible(f"confirm: {call['result']['would']}? [y/N] ")).strip().lower()
        except EOFError:
            reply = ""
        try:
            if reply in {"y", "yes", "是", "好"}:
                done = backend.call("confirm", id=action_id)
                print(f"{done['status']}: {done['summary']}", flush=True)
            else:
                backend.call("reject", id=action_id)
                print(f"rejected: nothing changed ({action_id})", flush=True)
        except CommandError as exc:
            print(f"error: {exc}", file=sys.stderr, flush=True)


def cmd_daemon(args: argparse.Namespace) -> int:
    from assistant.config import load_settings
    from assistant.daemon.process import run

    code = run(load_settings(), verbose=args.verbose)
    # Everything is closed and the lock released: skip the interpreter's teardown of
    # chromadb, onnxruntime and numpy, which takes seconds (SIGTERM: out within 2 s).
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


# -- confirmations and traces -----------------------------------------------------------------


def _when(epoch: float | None, fmt: str = "%H:%M") -> str:
    return time.strftime(fmt, time.localtime(epoch)) if epoch else "-"


def _action_line(action: dict[str, Any]) -> str:
    asked_by = f"{action['origin']}, unattended; " if action.get("origin") else ""
    if action["status"] == "expired":
        due = f"; expired {_when(action['expires_at'], '%Y-%m-%d %H:%M')}, ask again"
    elif action["status"] == "pending":
        due = f"; expires {_when(action['expires_at'])}"
    else:
        due = ""
    return (
        f"{action['id']}  {action['status']:<9} {action['summary']}  "
        f"({asked_by}from {action['tool']}, {_when(action['created_at'])}{due})"
    )


def cmd_confirm(args: argparse.Namespace) -> int:
    action = _call("reject" if args.reject else "confirm", id=args.id)
    lines = [_action_line(action)]
    if action.get("result") is not None and not args.json:
        lines.append(json.dumps(action["result"], ensure_ascii=False))
    _emit(args, action, lines)
    return 0 if action["status"] in {"confirmed", "rejected"} else EXIT_ERROR


def cmd_pending(args: argparse.Namespace) -> int:
    actions = _call("pending")
    return _emit(
        args,
        actions,
        [_action_line(a) for a in actions],
        empty="nothing is waiting for confirmation",
    )


def cmd_trace(args: argparse.Namespace) -> int:
    turn = _call("trace", turn=args.turn, session=args.session)
    if args.json:
        _print_json(turn)
    else:
        from assistant.trace_view import render_turn

        print(render_turn(turn))
    return 0


# -- memory -------------------------------------------------------------------------------------


def _memory_line(conclusion: dict[str, Any]) -> str:
    day = _when(conclusion["valid_from"], "%Y-%m-%d")
    stored_by = f", stored by {conclusion['origin']}" if conclusion.get("origin") else ""
    line = (
        f"{conclusion['id']}  [{conclusion['kind']}] {conclusion['text']}  "
        f"({conclusion['status']}, {day}{stored_by})"
    )
    score = conclusion.get("score")
    line += f"  score {score:.4f}" if score is not None else ""
    newer = conclusion.get("conflicts_with")
    return line + (f"  (conflicts with newer {newer})" if newer else "")


def _memory_history_line(conclusion: dict[str, Any]) -> str:
    """One value of a chain: valid from, valid to (or "now"), its source and its text."""
    start = _when(conclusion["valid_from"], "%Y-%m-%d %H:%M")
    end = _when(conclusion["valid_to"], "%Y-%m-%d %H:%M") if conclusion["valid_to"] else "now"
    source = (
        conclusion.get("source")
        or conclusion.get("source_path")
        or (f"session {conclusion['source_session']}" if conclusion.get("source_session") else "")
        or "unknown"
    )
    return (
        f"{start} -> {end}  {conclusion['id']}  {conclusion['text']}  "
        f"({conclusion['status']}, source: {source})"
    )


def cmd_memory(args: argparse.Namespace) -> int:
    action = args.memory_command
    if action == "search":
        found = _call(
            "memory_search",
            query=" ".join(args.query),
            k=args.k,
            kind=args.kind,
            tag=args.tag,
            include_all=args.all,
            as_of=args.as_of,
        )
        lines = [_memory_line(c) for c in found]
        return _emit(args, found, lines, empty="no conclusion matches")
    if action == "history":
        chain = _call("memory_history", id=args.id)
        return _emit(args, chain, [_memory_history_line(c) for c in chain])
    if action == "edit":
        edited = _call("memory_edit", id=args.id, text=" ".join(args.text))
        lines = [
            f"edited: {_memory_line(edited)}",
            f"  replaced {_memory_line(edited['replaced'])}",
        ]
        return _emit(args, edited, lines)
    if action == "list":
        found = _call("memory_list", status=args.status, limit=args.limit)
        lines = [_memory_line(c) for c in found]
        return _emit(args, found, lines, empty="no conclusions stored")
    if action == "show":
        shown = _call("memory_show", id=args.id)
        lines = [_memory_line(shown)]
        lines += [f"  replaced {_memory_line(c)}" for c in shown["history"]]
        return _emit(args, shown, lines)
    if action == "forget":
        forgotten = _call("memory_forget", id=args.id)
        lines = [f"forgotten: {_memory_line(forgotten)}"]
        lines += [
            f"  with it ({other['status']}): {_memory_line(other)}"
            for other in forgotten.get("also", [])
        ]
        return _emit(args, forgotten, lines)
    if action == "restore":
        restored = _call("memory_restore", id=args.id)
        return _emit(args, restored, [f"restored: {_memory_line(restored)}"])
    if action == "reindex":
        result = _call("memory_reindex")
        print(f"reindexed: {result['added']} conclusions embedded", file=sys.stderr)
        return 0
    stats = _call("memory_stats")
    return _emit(args, stats, [f"{key}: {value}" for key, value in stats.items()])


def cmd_vault(args: argparse.Namespace) -> int:
    action = args.vault_command
    if action == "list":
        data = _call(
            "vault_list", folder=args.folder, tag=args.tag, recent=args.recent, limit=args.limit
        )
        lines = [_note_line(note) for note in data["notes"]]
        if data["total"] > len(data["notes"]):
            lines.append(f"… {data['total'] - len(data['notes'])} more (--limit)")
        return _emit(args, data, lines, empty="no notes")
    if action == "read":
        note = _call("vault_read", path=args.path, heading=args.heading)
        return _emit(args, note, [note.get("content") or note.get("text") or ""])
    if action == "search":
        hits = _call(
            "vault_search", query=" ".join(args.query), k=args.k, folder=args.folder, tag=args.tag
        )
        lines = [_hit_line(hit) for hit in hits]
        return _emit(args, hits, lines, empty="no note matches")
    if action == "index":
        report = _vault_index(args)
        lines = [f"{key}: {value}" for key, value in report.items()]
        return _emit(args, report, lines)
    if action == "status":
        state = _call("vault_status")
        return _emit(args, state, [f"{key}: {value}" for key, value in state.items()])
    result = _call("vault_undo", n=args.n, force=args.force)
    lines = [f"undone: {json.dumps(write, ensure_ascii=False)}" for write in result["undone"]]
    if result["stopped"]:
        lines.append(f"stopped: {result['stopped']}")
    _emit(args, result, lines, empty="nothing to undo")
    return EXIT_ERROR if result["stopped"] else 0


def _vault_index(args: argparse.Namespace) -> dict[str, Any]:
    """`vault index` with its progress: a bar on a terminal, phase counts with -v."""
    from assistant.index_progress import IndexProgress

    shown = IndexProgress(bar=sys.stderr.isatty() and not args.json, verbose=args.verbose)
    with Backend() as backend, shown:
        if backend.client is None:  # in this process: the index reports each step
            return backend.call("vault_index", full=args.full, progress=shown.update)
        with shown.polling(lambda: (backend.call("vault_status") or {}).get("indexing")):
            return backend.call("vault_index", full=args.full)


def _note_line(note: dict[str, Any]) -> str:
    tags = " ".join(f"#{tag}" for tag in note.get("tags") or ())
    return f"{note.get('path')}  {note.get('title', '')}  {tags}".rstrip()


def _hit_line(hit: dict[str, Any]) -> str:
    where = hit.get("path", "")
    if hit.get("heading"):
        where += f" › {hit['heading']}"
    snippet = " ".join(str(hit.get("snippet", "")).split())
    return f"{where}: {snippet[:160]}"


# -- jobs, watch, status ----------------------------------------------------------------------


def _run_line(run: dict[str, Any] | None) -> str:
    if not run:
        return "never run"
    reason = f" ({run['stop_reason']})" if run.get("stop_reason") else ""
    return f"{run['status']}{reason} at {run['started']}"


def _job_line(job: dict[str, Any]) -> str:
    last = _run_line(job.get("last_run")) if "last_run" in job else ""
    return (
        f"{job['name']}  {job['schedule']}  next {job['next_run'] or '-'}"
        + (f"  last: {last}" if last else "")
        + f"\n    {job['prompt']}"
    )


def _history_line(run: dict[str, Any]) -> str:
    reason = f" ({run['stop_reason']})" if run.get("stop_reason") else ""
    answer = (run.get("outcome") or run.get("error") or "").replace("\n", " ")
    return f"{run['started']}  {run['job']}  {run['status']}{reason}  {answer[:80]}".rstrip()


def cmd_jobs(args: argparse.Namespace) -> int:
    action = args.jobs_command
    if action == "add":
        job = _call(
            "jobs_add",
            prompt=args.prompt,
            cron=args.cron,
            every=args.every,
            name=args.name,
            write_scope=args.write_scope,
        )
        return _emit(args, job, [f"added: {_job_line(job)}"])
    if action == "list":
        jobs = _call("jobs_list")
        return _emit(args, jobs, [_job_line(j) for j in jobs], empty="no jobs scheduled")
    if action == "remove":
        job = _call("jobs_remove", name=args.name)
        return _emit(args, job, [f"removed: {job['name']}"])
    if action == "run":
        run = _call("jobs_run", name=args.name)
        _emit(args, run, [_history_line(run)])
        return 0 if run["status"] == "ok" else EXIT_ERROR
    runs = _call("jobs_history", name=args.name, limit=args.limit)
    return _emit(args, runs, [_history_line(r) for r in runs], empty="no runs recorded")


def _rule_line(rule: dict[str, Any]) -> str:
    return f"{rule['glob']}  on {','.join(rule['on'])}  debounce {rule['debounce_s']:g}s" + (
        f"\n    {rule['prompt']}"
    )


def cmd_watch(args: argparse.Namespace) -> int:
    state = _call("watch_list")
    vault = state["vault"] or "(no vault configured)"
    lines = [f"vault: {vault} ({'watching' if state['watching'] else 'not watching'})"]
    lines += [_rule_line(rule) for rule in state["rules"]] or ["no [[watch]] rules"]
    if state.get("note"):
        lines.append(state["note"])
    for entry in state["recent"]:
        lines.append(f"{entry['at']}  {entry['event']:<10} {entry['path']}  {entry['status']}")
    return _emit(args, state, lines)


def _status_lines(data: dict[str, Any]) -> list[str]:
    daemon = data["daemon"]
    if daemon["running"]:
        lines = [
            f"daemon: running, pid {daemon['pid']}, up {daemon['uptime_s']:.0f} s, "
            f"API {data['api_url']}"
        ]
        queue = data["queue"]
        lines.append(
            f"queue: {queue['running']} running, {queue['waiting']} waiting "
            f"(at most {queue['max_concurrent_turns']} at once)"
        )
    else:
        lines = ["daemon: not running (this command ran in-process)"]
    model = data["model"]
    where = "offline planner" if model["offline"] else f"{model['name']} at {model['endpoint']}"
    lines.append(f"model: {where}")
    lines.append(f"jobs: {len(data['jobs'])}")
    lines += ["  " + _job_line(job).replace("\n", "\n  ") for job in data["jobs"]]
    watch = data["watch"]
    lines.append(
        f"watch: {watch['vault'] or '(no vault)'} "
        f"({'watching' if watch['watching'] else 'not watching'}), {len(watch['rules'])} rule(s)"
    )
    lines += ["  " + _rule_line(rule).replace("\n", "\n  ") for rule in watch["rules"]]
    index = data["index"]
    lines.append(
        f"index: conclusion vectors {index['conclusion_vectors']}"
        + (f"; vault {index['vault']}" if index.get("vault") else "")
    )
    for event in index.get("recovered") or ():
        lines.append(
            f"  recovered at {event['at']}: the vector index was corrupt, moved aside to "
            f"{event['moved_to']} and rebuilt from SQLite"
        )
    if index.get("moved_aside") and not index.get("recovered"):
        lines.append(
            f"  kept aside after a corrupt vector index: {', '.join(index['moved_aside'])} "
            "(delete when no longer needed)"
        )
    memory = data["memory"]
    if memory is not None:
        lines.append(
            f"memory: {memory['active']} active, {memory['superseded']} superseded, "
            f"{memory['retired']} retired"
        )
        origins = data.get("memory_from_unattended") or {}
        if origins:
            shown = ", ".join(f"{origin} {count}" for origin, count in origins.items())
            lines.append(f"  stored by unattended runs: {shown} (assistant memory list)")
    waiting = data.get("pending") or []
    open_ = [a for a in waiting if a["status"] == "pending"]
    lines.append(
        f"pending: {len(open_)} waiting for your confirmation"
        + (f", {len(waiting) - len(open_)} expired today" if len(waiting) > len(open_) else "")
    )
    lines += ["  " + _action_line(a) for a in waiting]
    extensions = data.get("extensions") or {}
    servers, plugins = extensions.get("mcp_servers", []), extensions.get("plugins", [])
    if servers or plugins:
        lines.append(f"extensions: {len(servers)} MCP server(s), {len(plugins)} plugin(s)")
        lines += [_server_line(server) for server in servers]
        lines += [_plugin_line(plugin) for plugin in plugins]
    lines.append(f"data: {data['data_dir']}")
    return lines


def cmd_mcp(args: argparse.Namespace) -> int:
    """Serve MCP on stdio. Each request goes to the daemon when one runs, else into this
    process; one at a time, holding the data directory only while it runs, so `assistant
    confirm` (or a daemon that starts) can take it between requests."""
    import threading

    from assistant.mcp_server import serve_stdio

    one_at_a_time = threading.Lock()

    def call(operation: str, **params: Any) -> Any:
        with one_at_a_time, Backend() as backend:
            return backend.call(operation, **params)

    return serve_stdio(call)


def _server_line(server: dict[str, Any]) -> str:
    line = f"  mcp {server['name']} ({server['transport']}): {server['state']}"
    if server.get("tools") is not None:
        line += f", {server['tools']} tool(s)"
    if server.get("crashes"):
        line += f", {server['crashes']} crash(es)"
    if server.get("error"):
        line += f" — {server['error']}"
    lines = [line]
    lines += [f"    skipped {s['tool']}: {s['reason']}" for s in server.get("skipped") or ()]
    return "\n".join(lines)


def _plugin_line(plugin: dict[str, Any]) -> str:
    where = plugin["distribution"] or plugin["value"]
    if plugin["error"]:
        return f"  plugin {plugin['name']} ({where}): broken, skipped — {plugin['error']}"
    line = f"  plugin {plugin['name']} ({where}): {', '.join(plugin['tools']) or 'no tools'}"
    return "\n".join([line, *(f"    skipped {t}" for t in plugin["skipped_tools"])])


def cmd_tools(args: argparse.Namespace) -> int:
    data = _call("tools")
    lines = []
    for tool in data["tools"]:
        flags = "read-only" if tool["read_only"] else "writes"
        if tool["needs_confirmation"]:
            flags += ", needs your yes"
        lines.append(f"{tool['name']}  [{tool['source']}] {flags}  ({tool['version']})")
    lines += [_server_line(server) for server in data["mcp_servers"]]
    lines += [_plugin_line(plugin) for plugin in data["plugins"]]
    return _emit(args, data, lines)


def cmd_status(args: argparse.Namespace) -> int:
    data = _call("status")
    return _emit(args, data, _status_lines(data))


def cmd_eval(args: argparse.Namespace) -> int:
    """Always in this process, daemon or not: every case needs its own data directory."""
    from assistant.evaluation import run_from_cli

    return run_from_cli(
        args.cases,
        categories=args.category,
        vault=args.vault,
        as_json=args.json,
        progress=args.verbose or sys.stderr.isatty(),
    )


COMMANDS = {
    "ask": cmd_ask,
    "chat": cmd_chat,
    "daemon": cmd_daemon,
    "status": cmd_status,
    "trace": cmd_trace,
    "memory": cmd_memory,
    "vault": cmd_vault,
    "confirm": cmd_confirm,
    "pending": cmd_pending,
    "jobs": cmd_jobs,
    "watch": cmd_watch,
    "eval": cmd_eval,
    "mcp": cmd_mcp,
    "tools": cmd_tools,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Everything printed goes through `assistant.terminal.visible`: no control character
    from a note, a file name or the model reaches the terminal as a command."""
    from assistant.terminal import VisibleStream

    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = VisibleStream(sys.stdout), VisibleStream(sys.stderr)  # type: ignore[assignment]
    try:
        return _main(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_LogLine("%(levelname)s %(name)s: %(message)s", full=args.verbose))
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, handlers=[handler])
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
    except BrokenPipeError:  # `assistant vault list | head`: the reader left; not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # a bug, not a user error: one line, the traceback with -v
        if args.verbose:
            logging.exception("unexpected error")
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        print(f"error: {type(exc).__name__}: {first} (details with -v)", file=sys.stderr)
        return EXIT_ERROR


class _LogLine(logging.Formatter):
    """A log record as one line (its first), unless -v asked for the details: a warning
    must not bury the answer under a multi-line dump."""

    def __init__(self, fmt: str, *, full: bool) -> None:
        super().__init__(fmt)
        self.full = full

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        if self.full:
            return text
        lines = text.splitlines() or [""]
        return lines[0] + (" (details with -v)" if len(lines) > 1 else "")
