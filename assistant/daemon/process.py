"""`assistant daemon` (SPEC D1): the long-running owner of the data directory.

It builds the one `Assistant` (taking the data-directory lock as "daemon"), opens the
vector index at once (so drift is repaired at start, M5/D7), marks job runs that a dead
process left `running` as `interrupted`, then starts the work queue, the scheduler, the
vault watcher and the control API, and publishes `api.json` (url, pid, started) once the
API answers. SIGTERM/SIGINT: stop taking work, cancel queued and running turns (they end
with the `cancelled` stop reason), wait for them up to `[daemon] shutdown_timeout_s`,
unpublish, and release the lock.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import secrets
import signal
import threading
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import Future
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assistant.client import API_FILE, TOKEN_FILE
from assistant.config import Settings
from assistant.daemon.jobs import JobBook, JobRunner, QueueExecutor, RunHistory
from assistant.daemon.watch import FileTask, Watcher, watch_state
from assistant.daemon.workqueue import QueueClosed, ThrottledModel, WorkQueue
from assistant.events import TurnObserver
from assistant.model import ChatModel
from assistant.outcome import TurnOutcome
from assistant.traces import TraceStore
from memory.index import Vectors
from tools.base import Tool

if TYPE_CHECKING:
    from assistant.app import Assistant
    from assistant.daemon.api import ApiServer
    from tools.confirm import PendingAction

log = logging.getLogger("assistant.daemon")

LOG_FILE = "daemon.log"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET_LOGGERS = ("apscheduler", "watchdog", "httpx", "openai", "chromadb", "urllib3")


def _write_private(path: Path, text: str) -> None:
    """Write a file readable by its owner only (0600), atomically."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)


def _write_public(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


class Daemon:
    """Everything the daemon runs, and the `Services` the control API serves from."""

    served_by = "daemon"

    def __init__(
        self,
        settings: Settings,
        *,
        model: ChatModel | None = None,
        tools: Iterable[Tool] | None = None,
        vectors: Vectors | None = None,
        log_file: bool = True,
    ) -> None:
        self.settings = settings
        self._parts = (model, tools, vectors)
        self._log_file = log_file
        self._log_handler: logging.Handler | None = None
        self.assistant: Assistant | None = None
        self.queue: WorkQueue | None = None
        self.jobs: JobBook | None = None
        self.job_history: RunHistory | None = None
        self.runner: JobRunner | None = None
        self.watcher: Watcher | None = None
        self.api: ApiServer | None = None
        self.api_url: str | None = None
        self.started_at: float | None = None
        self._stopped = False

    # -- start and stop --------------------------------------------------------------------

    def start(self) -> None:
        from assistant.app import Assistant, build_model

        settings = self.settings
        model, tools, vectors = self._parts
        limit = settings.daemon.model_concurrency
        throttled = ThrottledModel(model or build_model(settings), limit)
        # A CLI command holding the data directory is waited for (it says so), not a
        # reason to exit; such commands yield to a daemon that waits (memory.lock). Another
        # daemon is not short-lived: this one is refused at once, naming it.
        self.assistant = Assistant(
            settings,
            model=throttled,
            tools=tools,
            vectors=vectors,
            role="daemon",
            lock_notice=log.warning,
            lock_yield_to=lambda holder: (
                holder is not None and holder.role == "daemon" and holder.alive
            ),
        )
        try:
            if self._log_file:  # only the owner of the data directory writes its log
                self._log_handler = add_file_log(settings)
            log.info("starting: data directory %s, pid %d", settings.home, os.getpid())
            self._open_indexes()
            self.job_history = RunHistory(self.assistant.database)
            if interrupted := self.job_history.mark_interrupted():
                log.warning("marked %d job run(s) left running by a stopped daemon", interrupted)
            self.queue = WorkQueue(settings.daemon.max_concurrent_turns)
            self.runner = JobRunner(self.assistant, self.job_history)
            self.jobs = JobBook(settings, QueueExecutor(self.queue.submit, self.runner))
            self.jobs.start(paused=False)
            self.watcher = self._start_watcher()
            self._start_api()
            self.started_at = time.time()
            log.info("ready: control API %s", self.api_url)
        except BaseException:
            self.stop()
            raise

    def _open_indexes(self) -> None:
        """Open the conclusions' vector index now: opening it repairs drift from SQLite."""
        memory = self.assistant.memory
        if memory is not None and not getattr(memory.vectors, "loaded", True):
            started = time.perf_counter()
            memory.vectors.ids()
            log.info("vector index open (%.1f s)", time.perf_counter() - started)
        index = getattr(self.assistant, "vault_index", None)
        if index is not None:  # catch up with edits made while no daemon watched the vault
            threading.Thread(
                target=self._index_vault, args=(index,), name="vault-index", daemon=True
            ).start()

    @staticmethod
    def _index_vault(index: Any) -> None:
        try:
            report = index.index_vault()
        except Exception:  # a failed catch-up must not stop the daemon; the watcher goes on
            log.exception("indexing the vault at start failed")
            return
        log.info("vault index up to date: %s", report.as_dict())

    def _start_watcher(self) -> Watcher | None:
        settings = self.settings
        vault = settings.vault
        if vault is None:
            if settings.watch:
                log.warning("[[watch]] rules are set but no vault is (ASSISTANT_VAULT or vault =)")
            return None
        if not vault.is_dir():
            log.warning("the vault %s is not a folder: not watching it", vault)
            return None
        own = getattr(self.assistant, "vault", None)
        index = getattr(self.assistant, "vault_index", None)
        watcher = Watcher(
            vault,
            settings.watch,
            self._submit_file_task,
            debounce_s=settings.daemon.watch_debounce_s,
            index=index if hasattr(index, "index_note") and hasattr(index, "remove_note") else None,
            own_writes=own if hasattr(own, "was_own_write") else None,
            recent=settings.daemon.recent_triggers,
        )
        watcher.start()
        return watcher

    def _start_api(self) -> None:
        from assistant.daemon.api import ApiServer, create_app

        home = self.settings.home
        token = secrets.token_urlsafe(32)
        _write_private(home / TOKEN_FILE, token + "\n")
        from assistant.commands import OPERATIONS
        from assistant.mcp_server import HttpEndpoint

        def call(operation: str, **params: Any) -> Any:
            return OPERATIONS[operation](self, **params)

        mcp = HttpEndpoint(call)  # /mcp: our tools over streamable HTTP (X1)
        app = create_app(
            self, token, routers=self.routers(), routes=[mcp.route()], lifespan=mcp.lifespan
        )
        daemon = self.settings.daemon
        self.api = ApiServer(app, daemon.host, daemon.port)
        self.api.start()
        self.api_url = self.api.url
        published = {
            "url": self.api_url,
            "pid": os.getpid(),
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        _write_public(home / API_FILE, json.dumps(published) + "\n")

    def routers(self) -> list[Any]:
        """More API routers (the vault's endpoints, issue 4, belong here)."""
        return []

    def stop(self) -> None:
        """Idempotent; safe after a partial start."""
        if self._stopped or self.assistant is None:
            return
        self._stopped = True
        log.info("stopping")
        for name in (API_FILE, TOKEN_FILE):  # new CLI calls stop coming here first
            (self.settings.home / name).unlink(missing_ok=True)
        try:
            if self.watcher is not None:
                self.watcher.stop()
            if self.jobs is not None:
                self.jobs.shutdown()
            if self.queue is not None:
                if cancelled := self.queue.close():
                    log.info("cancelling %d turn(s)", len(cancelled))
                timeout = self.settings.daemon.shutdown_timeout_s
                if not self.queue.join(timeout):
                    log.warning("turns still running after %.0f s; stopping anyway", timeout)
            if self.api is not None:
                self.api.stop()
        finally:
            if self.assistant is not None:
                self.assistant.close()
            log.info("stopped")
            if self._log_handler is not None:
                logging.getLogger().removeHandler(self._log_handler)
                self._log_handler.close()

    # -- turns through the queue (Services) ------------------------------------------------

    def _queue(self) -> WorkQueue:
        assert self.queue is not None, "the daemon is not started"
        return self.queue

    def _one_shot(
        self,
        text: str,
        session: str,
        cancel: threading.Event,
        *,
        end_session: bool = True,
        trigger: dict[str, Any] | None = None,
        unattended: bool = False,
        observer: TurnObserver | None = None,
    ) -> TurnOutcome:
        """A turn, then its memory work (compression; unless cancelled, the session's end:
        its conclusions are kept, M9) queued behind it on the session's lane: the answer
        goes out first, and the session's next turn still waits for that work."""
        assistant = self.assistant
        outcome = assistant.ask(
            text,
            session=session,
            trigger=trigger,
            cancel=cancel,
            unattended=unattended,
            observer=observer,
            settle=False,
        )

        origin = assistant.unattended_run(trigger)[0] if unattended else None

        def memory_work(cancel: threading.Event) -> int:
            return assistant.after_turn(outcome, end_session=end_session, origin=origin)

        try:
            later = self._queue().submit(session, memory_work, kind="memory", label=session)
        except QueueClosed:  # stopping: do it now rather than lose the session's conclusions
            memory_work(cancel)
            return outcome
        later.add_done_callback(_log_failure)
        return outcome

    def run_turn(
        self,
        text: str,
        *,
        session: str | None,
        end_session: bool,
        observer: TurnObserver | None = None,
        cancel: threading.Event | None = None,
    ) -> TurnOutcome:
        from assistant.app import new_session_id

        chosen = session or new_session_id()

        def work(cancel: threading.Event) -> TurnOutcome:
            return self._one_shot(text, chosen, cancel, end_session=end_session, observer=observer)

        queued = self._queue().submit(chosen, work, kind="ask", label=chosen, cancel=cancel)
        return queued.result()

    def end_session(self, session: str) -> int:
        future = self._queue().submit(
            session, lambda cancel: self.assistant.end_session(session), kind="end", label=session
        )
        return future.result()

    def confirm_action(self, action_id: str) -> PendingAction:
        """A confirmed action runs as work of the queue, so shutdown waits for it (a move
        half done is worse than a late stop); one not yet started when shutdown begins
        does not start, and stays pending."""

        def work(cancel: threading.Event) -> PendingAction:
            if cancel.is_set():
                raise QueueClosed(
                    f"the daemon is shutting down: action {action_id} did not run and is "
                    "still pending; confirm it again once the daemon is back"
                )
            return self.assistant.confirm(action_id)

        lane = f"action:{action_id}"
        return self._queue().submit(lane, work, kind="confirm", label=action_id).result()

    def reject_action(self, action_id: str) -> PendingAction:
        return self.assistant.reject(action_id)

    def run_job(self, name: str) -> dict[str, Any]:
        assert self.jobs is not None and self.runner is not None, "the daemon is not started"
        kwargs = self.jobs.find(name).kwargs
        runner = self.runner

        def work(cancel: threading.Event) -> dict[str, Any]:
            return runner.run(
                name,
                kwargs["prompt"],
                cancel=cancel,
                manual=True,
                write_scope=kwargs.get("write_scope"),
            )

        return self._queue().submit(f"job:{name}", work, kind="job", label=name).result()

    def _submit_file_task(self, task: FileTask) -> Future:
        session = f"file-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"

        def work(cancel: threading.Event) -> TurnOutcome:
            return self._one_shot(
                task.prompt, session, cancel, trigger=task.trigger, unattended=True
            )

        return self._queue().submit(f"file:{task.path}", work, kind="file", label=task.path)

    # -- state (Services) ------------------------------------------------------------------

    @property
    def traces(self) -> TraceStore:
        assert self.assistant is not None, "the daemon is not started"
        return self.assistant.traces

    def watch_state(self) -> dict[str, Any]:
        return watch_state(self.settings, self.watcher)

    def runtime(self) -> dict[str, Any]:
        started = self.started_at
        return {
            "running": True,
            "pid": os.getpid(),
            "started": datetime.fromtimestamp(started).astimezone().isoformat(timespec="seconds")
            if started
            else None,
            "uptime_s": round(time.time() - started, 1) if started else None,
            "api_url": self.api_url,
            "log_file": str(self.settings.home / LOG_FILE) if self._log_file else None,
            "queue": {
                **self._queue().stats(),
                "model_concurrency": self.settings.daemon.model_concurrency,
            },
        }


def _log_failure(future: Future) -> None:
    """Background memory work has no waiter: its failure goes to the log."""
    if not future.cancelled() and (error := future.exception()) is not None:
        log.error("memory work after a turn failed: %s", error, exc_info=error)


def configure_logging(verbose: bool) -> None:
    """The daemon logs its lifecycle at INFO to stderr (journald/launchd keep it)."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO, format=LOG_FORMAT, force=True
    )
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.INFO if verbose else logging.WARNING)


def add_file_log(settings: Settings) -> logging.Handler:
    daemon = settings.daemon
    handler = logging.handlers.RotatingFileHandler(
        settings.home / LOG_FILE,
        maxBytes=daemon.log_max_bytes,
        backupCount=daemon.log_backups,
        encoding="utf-8",
    )
    handler.setFormatter(logging.Formatter(LOG_FORMAT))
    logging.getLogger().addHandler(handler)
    return handler


def run(settings: Settings, *, verbose: bool = False) -> int:
    """Run in the foreground until SIGTERM or SIGINT; 0 after a clean stop."""
    configure_logging(verbose or settings.debug)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():
            log.warning("%s again: already stopping", signal.Signals(signum).name)
            return
        log.info("%s received", signal.Signals(signum).name)
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    daemon = Daemon(settings)
    try:
        daemon.start()
        while not stop.wait(1.0):
            pass
    finally:
        daemon.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 0
