"""The operations behind the CLI commands and the control API, each returning JSON-able
data, so the CLI prints the same thing whether the daemon or this process served it.

An operation receives `Services`: the daemon's (`assistant.daemon.process.Daemon`) or
`LocalServices`, opened in this process for one CLI command when no daemon owns the data
directory. The module level stays light (each operation imports what it needs); `CommandError`
lives in `assistant.errors` and is re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from assistant.errors import CommandError

if TYPE_CHECKING:
    import threading

    from assistant.app import Assistant
    from assistant.config import Settings
    from assistant.daemon.jobs import JobBook, RunHistory
    from assistant.events import TurnObserver
    from assistant.outcome import TurnOutcome
    from assistant.traces import TraceStore
    from memory.conclusions import Conclusion, ConclusionStore
    from tools.confirm import PendingAction


class Services(Protocol):
    """What the operations act on."""

    served_by: str
    settings: Settings

    @property
    def assistant(self) -> Assistant: ...

    @property
    def traces(self) -> TraceStore: ...

    @property
    def jobs(self) -> JobBook: ...

    @property
    def job_history(self) -> RunHistory: ...

    def run_turn(
        self,
        text: str,
        *,
        session: str | None,
        end_session: bool,
        observer: TurnObserver | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnOutcome:
        """The turn's outcome as soon as its answer is there; the memory work it leaves
        (compression, and at a session's end extraction) runs after that."""
        ...

    def end_session(self, session: str) -> int: ...

    def run_job(self, name: str) -> dict[str, Any]: ...

    def confirm_action(self, action_id: str) -> PendingAction:
        """Run a pending action the user said yes to (the daemon: through its work queue)."""
        ...

    def reject_action(self, action_id: str) -> PendingAction: ...

    def watch_state(self) -> dict[str, Any]: ...

    def runtime(self) -> dict[str, Any]: ...


# -- checks shared by the CLI and the control API --------------------------------------------

SESSION_MAX_CHARS = 200
MEMORY_STATUSES = ("active", "superseded", "retired", "all")


def _count(name: str, value: int) -> int:
    """A count asked for (k, limit, n): at least 1, whichever way the call came."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CommandError(
            "BAD_ARGUMENT", f"{name} must be a whole number of at least 1 (got {value!r})"
        )
    return value


def _session_name(session: str | None) -> str | None:
    if session is not None and not 1 <= len(session) <= SESSION_MAX_CHARS:
        raise CommandError(
            "BAD_SESSION",
            f"a session name is 1-{SESSION_MAX_CHARS} characters (this one has {len(session)})",
        )
    return session


# -- turns and sessions -------------------------------------------------------------------------


def ask(
    services: Services,
    text: str,
    session: str | None = None,
    observer: TurnObserver | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """One turn; a turn without a session is a one-shot session, ended (M9) right after.
    `observer` sees the turn's events (`assistant.events`) as they happen; setting
    `cancel` stops the turn (`cancelled`)."""
    _session_name(session)
    if not text.strip():
        raise CommandError("EMPTY", "the question is empty")
    outcome = services.run_turn(
        text, session=session, end_session=session is None, observer=observer, cancel=cancel
    )
    return {**outcome.as_dict(), "served_by": services.served_by}


def end_session(services: Services, session: str) -> dict[str, Any]:
    _session_name(session)
    return {"session": session, "conclusions_stored": services.end_session(session)}


def sessions(services: Services, limit: int = 50) -> list[dict[str, Any]]:
    _count("limit", limit)
    return services.assistant.working.sessions()[:limit]


# -- long-term memory -----------------------------------------------------------------------------


def _store(services: Services) -> ConclusionStore:
    memory = services.assistant.memory
    if memory is None:
        raise CommandError(
            "MEMORY_DISABLED", "long-term memory is disabled ([memory] enabled = false)", 409
        )
    return memory.store


def _row(conclusion: Conclusion) -> dict[str, Any]:
    row = conclusion.as_dict()
    for optional in ("score", "conflicts_with"):
        if row.get(optional) is None:
            row.pop(optional, None)
    return row


def memory_search(
    services: Services,
    query: str,
    k: int = 10,
    kind: str | None = None,
    tag: str | None = None,
    include_all: bool = False,
    as_of: str | None = None,
) -> list[dict[str, Any]]:
    from memory.conclusions import as_of_timestamp

    _count("k", k)
    statuses = ("active", "superseded", "retired") if include_all else ("active",)
    try:
        moment = as_of_timestamp(as_of) if as_of else None
    except ValueError as exc:
        raise CommandError("INVALID_DATE", str(exc)) from None
    found = _store(services).recall(
        query,
        k,
        kinds=[kind] if kind else None,
        tags=[tag] if tag else None,
        statuses=statuses,
        as_of=moment,
    )
    return [_row(c) for c in found]


def memory_history(services: Services, id: str) -> list[dict[str, Any]]:
    """Every value of the thing a conclusion is about, oldest first (issue 15)."""
    chain = _store(services).chain(id)
    if not chain:
        raise CommandError("NOT_FOUND", f"no conclusion {id!r}", 404)
    return [_row(c) for c in chain]


def memory_edit(services: Services, id: str, text: str) -> dict[str, Any]:
    """The user's correction: a new row (source "user") supersedes the conclusion."""
    try:
        edited = _store(services).edit(id, text)
    except KeyError:
        raise CommandError("NOT_FOUND", f"no conclusion {id!r}", 404) from None
    except ValueError as exc:
        raise CommandError("NOT_EDITABLE", str(exc), 409) from None
    assert edited.previous is not None
    return {**_row(edited.conclusion), "replaced": _row(edited.previous)}


def memory_list(
    services: Services, status: str = "active", limit: int = 50
) -> list[dict[str, Any]]:
    if status not in MEMORY_STATUSES:
        raise CommandError(
            "BAD_ARGUMENT", f"status must be one of {', '.join(MEMORY_STATUSES)} (got {status!r})"
        )
    _count("limit", limit)
    chosen = None if status == "all" else status
    return [_row(c) for c in _store(services).list(status=chosen, limit=limit)]


def memory_show(services: Services, id: str) -> dict[str, Any]:
    store = _store(services)
    conclusion = store.get(id)
    if conclusion is None:
        raise CommandError("NOT_FOUND", f"no conclusion {id!r}", 404)
    return {**_row(conclusion), "history": [_row(c) for c in store.history(id)]}


def memory_forget(services: Services, id: str) -> dict[str, Any]:
    """Retire a conclusion; the rows that would otherwise answer in its place (the same
    fact stored again, an older value whose replacement was missed) go with it and are
    listed under `also`."""
    done = _store(services).forget_with(id)
    if not done:
        raise CommandError("NOT_FOUND", f"no active conclusion {id!r}", 404)
    forgotten, *also = done
    row = _row(forgotten)
    if also:
        row["also"] = [_row(other) for other in also]
    return row


def memory_restore(services: Services, id: str) -> dict[str, Any]:
    """Undo a forget (or a replacement): the conclusion is active again."""
    store = _store(services)
    restored = store.restore(id)
    if restored is None:
        found = store.get(id)
        why = (
            f"conclusion {id!r} is {found.status}: only a forgotten or replaced one comes back"
            if found
            else f"no conclusion {id!r}"
        )
        raise CommandError(
            "NOT_FOUND" if found is None else "NOT_RETIRED", why, 404 if found is None else 409
        )
    return _row(restored)


def memory_reindex(services: Services) -> dict[str, Any]:
    return _store(services).reindex()


def memory_stats(services: Services) -> dict[str, Any]:
    return _store(services).stats()


# -- confirmations (S2) -------------------------------------------------------------------------


def pending(services: Services) -> list[dict[str, Any]]:
    """Every action waiting for the user (unattended ones included: shown now, they start
    their time to live) and those that expired within the last day."""
    return [action.as_dict() for action in services.assistant.pending.for_user()]


def _decide(services: Services, id: str, decide: Callable[[str], Any]) -> dict[str, Any]:
    from tools.confirm import ConfirmationError

    try:
        return decide(id).as_dict()
    except ConfirmationError as exc:
        raise CommandError(exc.code, str(exc), 404 if exc.code == "UNKNOWN" else 409) from None


def confirm(services: Services, id: str) -> dict[str, Any]:
    return _decide(services, id, services.confirm_action)


def reject(services: Services, id: str) -> dict[str, Any]:
    return _decide(services, id, services.reject_action)


# -- traces (T) ---------------------------------------------------------------------------------


def trace(services: Services, turn: str = "last", session: str | None = None) -> dict[str, Any]:
    store = services.traces
    turn_id = store.last_turn_id(session) if turn == "last" else turn
    found = store.turn(turn_id) if turn_id else None
    if found is None:
        what = "no turn has been recorded yet" if turn == "last" else f"no turn {turn!r}"
        raise CommandError("NOT_FOUND", f"{what} in {services.settings.database_path}", 404)
    return found


# -- jobs (D2) ------------------------------------------------------------------------------------


def jobs_add(
    services: Services,
    prompt: str,
    cron: str | None = None,
    every: str | None = None,
    name: str | None = None,
    write_scope: list[str] | None = None,
) -> dict[str, Any]:
    return services.jobs.add(name, prompt, cron=cron, every=every, write_scope=write_scope)


def jobs_list(services: Services) -> list[dict[str, Any]]:
    history = services.job_history
    return [{**job, "last_run": history.last(job["name"])} for job in services.jobs.list()]


def jobs_remove(services: Services, name: str) -> dict[str, Any]:
    return services.jobs.remove(name)


def jobs_run(services: Services, name: str) -> dict[str, Any]:
    return services.run_job(name)


def jobs_history(
    services: Services, name: str | None = None, limit: int = 20
) -> list[dict[str, Any]]:
    _count("limit", limit)
    return services.job_history.recent(name, limit)


# -- watch (D3) and status (D6) ---------------------------------------------------------------


def watch_list(services: Services) -> dict[str, Any]:
    return services.watch_state()


def status(services: Services) -> dict[str, Any]:
    settings = services.settings
    assistant = services.assistant
    runtime = services.runtime()
    memory = assistant.memory
    vault_index = getattr(assistant, "vault_index", None)
    vault_status = getattr(vault_index, "status", None)
    return {
        "served_by": services.served_by,
        "daemon": runtime,
        "api_url": runtime.get("api_url"),
        "data_dir": str(settings.home),
        "model": {
            "endpoint": settings.model.base_url,
            "name": assistant.model.name,
            "offline": assistant.offline,
        },
        "jobs": jobs_list(services),
        "watch": {k: v for k, v in services.watch_state().items() if k != "recent"},
        "index": {
            "conclusion_vectors": "open"
            if memory is not None and getattr(memory.vectors, "loaded", True)
            else ("not opened" if memory is not None else "disabled"),
            "vault": vault_status() if callable(vault_status) else None,
            "recovered": list(getattr(getattr(assistant, "space", None), "recoveries", [])),
            # damaged folders kept beside the rebuilt one (by this or an earlier process)
            "moved_aside": sorted(p.name for p in settings.home.glob("chroma.corrupt-*")),
        },
        "memory": memory.store.stats() if memory is not None else None,
        "memory_from_unattended": memory.store.origins() if memory is not None else {},
        "pending": pending(services),
        "extensions": _extensions(assistant),
        "queue": runtime.get("queue"),
        "uptime_s": runtime.get("uptime_s"),
    }


def _extensions(assistant: Any) -> dict[str, Any]:
    """MCP servers (not started by asking) and plugins, each with what went wrong."""
    from assistant.extensions import mcp_status

    return {
        "mcp_servers": mcp_status(assistant.registry),
        "plugins": [report.as_dict() for report in getattr(assistant, "plugins", [])],
    }


# -- vault -----------------------------------------------------------------------------------------


def _vault(services: Services) -> tuple[Any, Any]:
    assistant = services.assistant
    if getattr(assistant, "vault", None) is None:
        raise CommandError(
            "NO_VAULT",
            "no note vault is configured: set ASSISTANT_VAULT (or `vault = ...` in config.toml)",
            409,
        )
    return assistant.vault, assistant.vault_index


_HINTS = {"candidates": "candidates", "did_you_mean": "did you mean", "headings": "headings"}


def _refused(exc: Any) -> CommandError:
    """A vault refusal (a path outside the vault, a missing note) as the CLI/API error,
    with the tool's hints (the candidates of an ambiguous name, did-you-mean, the note's
    headings) on the same line."""
    status = 404 if exc.code == "NOT_FOUND" else 400
    extra = getattr(exc, "extra", None) or {}
    hints = [
        f"{label}: {', '.join(str(item) for item in extra[key][:12])}"
        for key, label in _HINTS.items()
        if isinstance(extra.get(key), list) and extra[key]
    ]
    message = exc.detail + (f" ({'; '.join(hints)})" if hints else "")
    return CommandError(exc.code, message, status)


def vault_list(
    services: Services,
    folder: str | None = None,
    tag: str | None = None,
    recent: bool = False,
    limit: int = 100,
) -> dict[str, Any]:
    from tools.base import ToolError

    _count("limit", limit)
    vault, _ = _vault(services)
    try:
        rows, total = vault.list_notes(folder, tag=tag, recent_first=recent, limit=limit)
    except ToolError as exc:
        raise _refused(exc) from exc
    return {"notes": rows, "total": total}


def vault_read(services: Services, path: str, heading: str | None = None) -> dict[str, Any]:
    """The note as the model sees it (frontmatter as data, optionally one section)."""
    from tools.base import ToolContext, ToolError

    _vault(services)
    read = services.assistant.registry.get("vault_read")
    if read is None:
        raise CommandError("NO_VAULT", "the vault tools are not registered", 409)
    try:
        args = read.args_model.model_validate(
            {"path": path, "heading": heading, "max_chars": 100_000}
        )
        return read.invoke(args, ToolContext())
    except ToolError as exc:
        raise _refused(exc) from exc


def vault_search(
    services: Services,
    query: str,
    k: int = 8,
    folder: str | None = None,
    tag: str | None = None,
) -> list[dict[str, Any]]:
    from tools.base import ToolError

    _count("k", k)
    _, index = _vault(services)
    try:
        return [hit.as_dict() for hit in index.search(query, k, folder=folder, tag=tag)]
    except ToolError as exc:
        raise _refused(exc) from exc


def vault_index(
    services: Services, full: bool = False, progress: Callable[..., None] | None = None
) -> dict[str, Any]:
    """`progress(phase, done, total)`: only in this process (the CLI's progress bar)."""
    _, index = _vault(services)
    return index.index_vault(full=full, progress=progress).as_dict()


def vault_status(services: Services) -> dict[str, Any]:
    _, index = _vault(services)
    return index.status()


def vault_undo(services: Services, n: int = 1, force: bool = False) -> dict[str, Any]:
    _count("n", n)
    vault, _ = _vault(services)
    result = vault.undo(n, force=force)
    return {"undone": result.undone, "stopped": result.stopped}


# -- tools, and serving them over MCP (X1-X3) ---------------------------------------------------

SERVED_GROUPS = ("memory", "vault")
CONFIRM_TOOL = "pending_confirm"


def tools(services: Services) -> dict[str, Any]:
    """Every tool with its source, flags and whether it needs confirmation; MCP servers
    (started here if they were not) and plugins with what went wrong."""
    from assistant.extensions import mcp_status

    assistant = services.assistant
    rows = [
        {
            "name": tool.name,
            "group": tool.group,
            "source": tool.origin,
            "version": tool.version,
            "read_only": tool.read_only,
            "needs_confirmation": tool.dangerous,
            "description": tool.description.split("\n", 1)[0],
        }
        for tool in assistant.registry.tools()
    ]
    return {
        "tools": rows,
        "mcp_servers": mcp_status(assistant.registry),
        "plugins": [report.as_dict() for report in assistant.plugins],
    }


def _annotations(tool: Any) -> dict[str, Any]:
    """MCP hints from our flags: reads are read-only and idempotent, a dangerous tool is
    destructive, and none of ours reaches outside the machine."""
    return {
        "title": tool.name.replace("_", " "),
        "readOnlyHint": tool.read_only,
        "destructiveHint": tool.dangerous,
        "idempotentHint": tool.read_only,
        "openWorldHint": False,
    }


def _served(tool: Any) -> bool:
    return tool.origin == "built-in" and tool.group in SERVED_GROUPS


def served_tools(services: Services) -> list[dict[str, Any]]:
    """The tools an MCP client may call: the memory and vault tools, with their schemas,
    descriptions and hints (and `pending_confirm` only if the user allowed it)."""
    listed = []
    for tool in services.assistant.registry.registered():
        if not _served(tool):
            continue
        description = tool.description
        if tool.dangerous:
            description += (
                "\n\nThis tool only prepares the action: it returns a pending action id, and "
                "nothing changes until the user confirms it (assistant confirm ID)."
            )
        listed.append(
            {
                "name": tool.name,
                "description": description,
                "input_schema": tool.parameters_schema,
                "annotations": _annotations(tool),
            }
        )
    if services.settings.mcp.client_may_confirm:
        listed.append(
            {
                "name": CONFIRM_TOOL,
                "description": "Run a pending action the user has agreed to. Call it only "
                "when the user said yes to exactly this action in this conversation.",
                "input_schema": {
                    "type": "object",
                    "properties": {"action_id": {"type": "string", "description": "a_..."}},
                    "required": ["action_id"],
                },
                "annotations": {
                    "title": "confirm a pending action",
                    "readOnlyHint": False,
                    "destructiveHint": True,
                    "idempotentHint": False,
                    "openWorldHint": False,
                },
            }
        )
    return listed


def served_call(
    services: Services, name: str, arguments: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One call from an MCP client: validated, run or made pending, redacted, cut to
    `[mcp] serve_result_chars`, and logged. A confirmation never comes from here unless
    the user turned `[mcp] client_may_confirm` on."""
    import json
    import logging
    import time
    import uuid

    from tools.base import ToolContext

    if name == CONFIRM_TOOL and services.settings.mcp.client_may_confirm:
        return _served_confirm(services, (arguments or {}).get("action_id"))
    assistant = services.assistant
    tool = assistant.registry.get(name)
    if tool is None or not _served(tool):
        offered = ", ".join(item["name"] for item in served_tools(services))
        raise CommandError(
            "UNKNOWN_TOOL", f"there is no tool named {name!r}; offered: {offered}", 404
        )
    runner = assistant.served_runner
    started = time.perf_counter()
    session, turn_id = "mcp", f"mcp_{uuid.uuid4().hex[:12]}"
    call = runner.prepare(f"call_{uuid.uuid4().hex[:10]}", name, json.dumps(arguments or {}))

    def context_for(prepared: Any) -> ToolContext:
        return ToolContext(
            session=session,
            turn_id=turn_id,
            call_id=prepared.call_id,
            idempotency_key=runner.idempotency_key(session, turn_id, prepared),
        )

    (outcome,) = runner.run([call], context_for)
    logging.getLogger("assistant.mcp").info(
        "MCP client called %s: %s (%.1f ms)",
        name,
        outcome.status,
        (time.perf_counter() - started) * 1000,
    )
    return {"tool": name, "status": outcome.status, "ok": outcome.ok, "content": outcome.content}


def _served_confirm(services: Services, action_id: Any) -> dict[str, Any]:
    import json

    if not isinstance(action_id, str) or not action_id:
        raise CommandError("INVALID_ARGUMENTS", "action_id: a pending action's id is required")
    done = confirm(services, action_id)
    content = json.dumps(
        {"status": done["status"], "summary": done["summary"], "result": done["result"]},
        ensure_ascii=False,
        default=str,
    )
    return {"tool": CONFIRM_TOOL, "status": done["status"], "ok": True, "content": content}


OPERATIONS: dict[str, Callable[..., Any]] = {
    "ask": ask,
    "end_session": end_session,
    "sessions": sessions,
    "memory_search": memory_search,
    "memory_list": memory_list,
    "memory_show": memory_show,
    "memory_history": memory_history,
    "memory_edit": memory_edit,
    "memory_forget": memory_forget,
    "memory_restore": memory_restore,
    "memory_reindex": memory_reindex,
    "memory_stats": memory_stats,
    "pending": pending,
    "confirm": confirm,
    "reject": reject,
    "trace": trace,
    "jobs_add": jobs_add,
    "jobs_list": jobs_list,
    "jobs_remove": jobs_remove,
    "jobs_run": jobs_run,
    "jobs_history": jobs_history,
    "watch_list": watch_list,
    "status": status,
    "vault_list": vault_list,
    "vault_read": vault_read,
    "vault_search": vault_search,
    "vault_index": vault_index,
    "vault_status": vault_status,
    "vault_undo": vault_undo,
    "tools": tools,
    "served_tools": served_tools,
    "served_call": served_call,
}


class LocalServices:
    """The stores opened in this process for one CLI command (no daemon is running).

    Each part opens on first use: `trace` reads the database without taking the data
    directory's lock, everything else opens the `Assistant` (which takes it, waiting for
    another holder up to `[daemon] lock_wait_s`; `lock_yield_to` ends that wait when a
    daemon claims the directory, so the CLI can go through it instead). The memory work
    a turn leaves waits in `_after` until `settle()` (the CLI calls it once the answer
    is printed; `close()` does, for anyone who did not).
    """

    served_by = "in-process"

    def __init__(
        self,
        settings: Settings,
        *,
        lock_notice: Callable[[str], None] | None = None,
        lock_yield_to: Callable[[Any], bool] | None = None,
    ) -> None:
        self.settings = settings
        self._lock_options = {"lock_notice": lock_notice, "lock_yield_to": lock_yield_to}
        self._assistant: Assistant | None = None
        self._jobs: JobBook | None = None
        self._history: RunHistory | None = None
        self._reader: Any = None
        self._after: list[Callable[[], Any]] = []

    def __enter__(self) -> LocalServices:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def holds_lock(self) -> bool:
        return self._assistant is not None

    @property
    def assistant(self) -> Assistant:
        if self._assistant is None:
            from assistant.app import Assistant

            self._assistant = Assistant(self.settings, **self._lock_options)
        return self._assistant

    @property
    def traces(self) -> TraceStore:
        if self._assistant is not None:
            return self._assistant.traces
        from assistant.traces import TraceStore
        from memory.db import Database

        if self._reader is None:
            self._reader = Database(self.settings.database_path)
        return TraceStore(self._reader)

    @property
    def jobs(self) -> JobBook:
        if self._jobs is None:
            from assistant.daemon.jobs import JobBook

            self.assistant  # noqa: B018 - hold the data directory's lock while editing jobs
            self._jobs = JobBook(self.settings)
            self._jobs.start(paused=True)
        return self._jobs

    @property
    def job_history(self) -> RunHistory:
        if self._history is None:
            from assistant.daemon.jobs import RunHistory

            self._history = RunHistory(self.assistant.database)
        return self._history

    def run_turn(
        self,
        text: str,
        *,
        session: str | None,
        end_session: bool,
        observer: TurnObserver | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnOutcome:
        assistant = self.assistant
        outcome = assistant.ask(
            text, session=session, observer=observer, cancel=cancel, settle=False
        )
        self._after.append(lambda: assistant.after_turn(outcome, end_session=end_session))
        return outcome

    def settle(self) -> None:
        """Run the memory work the turns left, in order (their answers are out)."""
        while self._after:
            self._after.pop(0)()

    def end_session(self, session: str) -> int:
        return self.assistant.end_session(session)

    def confirm_action(self, action_id: str) -> PendingAction:
        return self.assistant.confirm(action_id)

    def reject_action(self, action_id: str) -> PendingAction:
        return self.assistant.reject(action_id)

    def run_job(self, name: str) -> dict[str, Any]:
        from assistant.daemon.jobs import JobRunner

        job = self.jobs.find(name)
        runner = JobRunner(self.assistant, self.job_history)
        return runner.run(
            name, job.kwargs["prompt"], manual=True, write_scope=job.kwargs.get("write_scope")
        )

    def watch_state(self) -> dict[str, Any]:
        from assistant.daemon.watch import watch_state

        note = "no daemon is running: rules apply only while `assistant daemon` runs"
        return {**watch_state(self.settings, None), "note": note}

    def runtime(self) -> dict[str, Any]:
        return {"running": False}

    def close(self) -> None:
        try:
            self.settle()
        finally:
            self._close()

    def _close(self) -> None:
        try:
            if self._jobs is not None:
                self._jobs.shutdown()
            if self._reader is not None:
                self._reader.close()
        finally:
            if self._assistant is not None:
                self._assistant.close()
