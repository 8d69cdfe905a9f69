"""The composition root: the one place that wires settings, model, tools and stores.

The CLI (and later the daemon) builds one `Assistant`; everything below it receives what
it needs as arguments, so tests hand in fakes or temporary stores instead.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from assistant.config import Settings
from assistant.errors import ConfigError
from assistant.events import TurnObserver
from assistant.loop import SYSTEM_PROMPT, Turn, run_turn
from assistant.model import ChatModel
from assistant.outcome import StopReason, TurnOutcome
from assistant.remembering import MemoryService, VectorSpace
from assistant.traces import Recorder, TraceStore
from memory.db import Database
from memory.errors import StorageError
from memory.index import LazyVectors, Vectors
from memory.lock import DataDirectoryLock, Owner
from memory.redact import Redactor
from memory.working import WorkingMemory
from tools.arguments import replace_surrogates
from tools.base import Tool
from tools.confirm import PendingAction, PendingActions
from tools.registry import ToolRegistry
from tools.runner import ToolRunner

OFFLINE_MODEL_NAME = "offline-planner"


def default_tools() -> list[Tool]:
    from tools.calc import calc_evaluate

    return [calc_evaluate]


def build_model(settings: Settings) -> ChatModel:
    """The configured endpoint, or the offline planner when none is configured (O2)."""
    if settings.model.offline:
        from assistant.offline import OfflinePlanner
        from assistant.offline.intents import ArithmeticIntent, SmallTalkIntent
        from assistant.offline.memory_intents import memory_intents
        from assistant.offline.vault_intents import vault_intents

        config_path = settings.config_file or settings.home / "config.toml"
        intents = [SmallTalkIntent(), *vault_intents(), *memory_intents(), ArithmeticIntent()]
        return OfflinePlanner(intents, config_path=str(config_path))
    from assistant.openai_model import OpenAIChatModel

    return OpenAIChatModel(settings.model, caps_path=settings.home / "endpoints.json")


def new_session_id() -> str:
    return time.strftime("s-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def system_prompt(memory_block: str = "", summary: str | None = None) -> str:
    today = time.strftime("%Y-%m-%d (%A)")
    parts = [SYSTEM_PROMPT, f"Today is {today}."]
    if memory_block:
        parts.append(memory_block)
    if summary:
        parts.append(f"Summary of the earlier conversation in this session:\n{summary}")
    return "\n\n".join(parts)


class Assistant:
    """Owns the data directory for its lifetime (one owner at a time, SPEC M6b)."""

    def __init__(
        self,
        settings: Settings,
        *,
        model: ChatModel | None = None,
        tools: Iterable[Tool] | None = None,
        vectors: Vectors | None = None,
        role: str = "cli",
        lock_notice: Callable[[str], None] | None = None,
        lock_yield_to: Callable[[Owner | None], bool] | None = None,
    ) -> None:
        self.settings = settings
        self.role = role
        self.lock = DataDirectoryLock(settings.home, role).acquire(
            settings.daemon.lock_wait_s, notice=lock_notice, yield_to=lock_yield_to
        )
        try:
            self._open(model, tools, vectors)
        except BaseException:
            self.lock.release()
            raise

    def _open(
        self, model: ChatModel | None, tools: Iterable[Tool] | None, vectors: Vectors | None
    ) -> None:
        settings = self.settings
        self.model = model or build_model(settings)
        safety = settings.safety
        self.redactor = Redactor(safety.patterns, enabled=safety.redact)
        self.database = Database(settings.database_path)
        self.working = WorkingMemory(self.database)
        self.traces = TraceStore(self.database, self.redactor)
        self.memory: MemoryService | None = None
        self.space = VectorSpace(settings)
        registered = list(default_tools() if tools is None else tools)
        if settings.memory.enabled:
            self.memory = MemoryService(
                settings,
                self.database,
                self.working,
                self.model,
                self.redactor,
                offline=self.offline,
                space=self.space,
                vectors=vectors,
            )
            if tools is None:
                from tools.memory_tools import memory_tools

                registered += memory_tools(self.memory.store)
        self.vault, self.vault_index = self._open_vault()
        if self.vault is not None and tools is None:
            from tools.vault import vault_tools

            registered += vault_tools(self.vault, self.vault_index)
        from assistant.extensions import mcp_sources, plugin_tools

        self.plugins: list[Any] = []
        if tools is None:
            found, self.plugins = plugin_tools({t.name for t in registered})
            registered += found
        self.registry = ToolRegistry(registered, sources=mcp_sources(settings))
        self.pending = PendingActions(self.database)
        limits = settings.loop
        sequential = threading.Lock()  # sequential tools never overlap, turn or MCP client
        self.runner = ToolRunner(
            self.registry,
            result_budget=limits.result_budget_chars,
            default_timeout_s=limits.tool_timeout_s,
            workers=limits.parallel_tools,
            cache_ttl_s=limits.cache_ttl_s,
            pending=self.pending,
            redact=self.redactor.data if safety.redact_tool_results else None,
            sequential_lock=sequential,
        )
        # Calls from MCP clients (X1): the same tools and confirmations, a larger result.
        self.served_runner = ToolRunner(
            self.registry,
            result_budget=settings.mcp.serve_result_chars,
            default_timeout_s=limits.tool_timeout_s,
            workers=limits.parallel_tools,
            cache_ttl_s=0,
            pending=self.pending,
            redact=self.redactor.data if safety.redact_tool_results else None,
            sequential_lock=sequential,
        )

    def _open_vault(self) -> tuple[Any, Any]:
        """The note vault and its index, when one is configured (ASSISTANT_VAULT)."""
        root = self.settings.vault
        if root is None:
            return None, None
        if not root.is_dir():
            raise ConfigError(
                f"the vault {root} is not a folder (set ASSISTANT_VAULT or `vault` in config.toml)"
            )
        from tools.vault import Vault, VaultIndex

        vault = Vault(root, self.database)
        vectors = LazyVectors(lambda: self.space.collection("vault"))
        # The daemon's watcher keeps the index current; a one-off process refreshes it
        # (changed notes only) before its first search. After a write, the index follows
        # in the background: a tool never waits for the embedding model.
        index = VaultIndex(
            vault,
            self.database,
            vectors,
            refresh_before_search=self.role != "daemon",
            background=True,
        )
        self.space.on_rebuild("vault", index.repair_vectors)
        return vault, index

    def _offline_groups(self) -> list[str] | None:
        """The offline planner never calls a foreign tool: offering them would only start
        every configured MCP server for nothing."""
        if not self.registry.sources:
            return None
        return sorted({tool.group for tool in self.registry.registered()})

    @property
    def offline(self) -> bool:
        return self.model.name == OFFLINE_MODEL_NAME

    def unattended_run(self, trigger: dict[str, Any] | None) -> tuple[str, tuple[str, ...]]:
        """Which unattended run a trigger is (`job:NAME`, `watch:RULE`), and the vault
        folders it may write in: its own scope, else `[safety] write_scope`."""
        trigger = trigger or {}
        kind = trigger.get("kind")
        if kind == "job":
            origin = f"job:{trigger.get('job')}"
        elif kind == "file":
            origin = f"watch:{trigger.get('rule_name') or trigger.get('rule')}"
        else:
            origin = str(kind or "unattended")
        scope = trigger.get("write_scope")
        if scope is None:
            scope = self.settings.safety.write_scope
        return origin, tuple(scope)

    def ask(
        self,
        text: str,
        *,
        session: str | None = None,
        trigger: dict[str, Any] | None = None,
        cancel: threading.Event | None = None,
        unattended: bool = False,
        observer: TurnObserver | None = None,
        settle: bool = True,
    ) -> TurnOutcome:
        """One turn. With `settle=False` the memory work it leaves (compression) is the
        caller's to run, with `after_turn`, once the answer is out (SPEC: off the answer
        path)."""
        session = session or new_session_id()
        # a file name with undecodable bytes (os.fsdecode's \udcXX) in a watch prompt, or a
        # lone surrogate through the API, must not make the turn unstorable
        text = replace_surrogates(text)
        origin, scope = self.unattended_run(trigger) if unattended else ("", None)
        if self.memory is not None:
            context = self.memory.compressor.context(session)
            history, summary = context.messages, context.summary
            block = self.memory.memory_block(self.memory.relevant(text))
        else:
            history, summary, block = self.working.load(session), None, ""
        recorder = Recorder(
            self.traces,
            self.working,
            trigger=trigger,
            debug_stream=sys.stderr if self.settings.debug else None,
            unsaved_s=self.settings.memory.unsaved_ms / 1000,
        )
        turn = Turn(
            user_text=text,
            model=self.model,
            runner=self.runner,
            limits=self.settings.loop,
            history=history,
            system_prompt=system_prompt(block, summary),
            recorder=recorder,
            session=session,
            temperature=self.settings.model.temperature,
            cancel=cancel,
            unattended=unattended,
            origin=origin,
            write_scope=scope,
            tool_groups=self._offline_groups() if self.offline else None,
            observer=observer,
        )
        try:
            outcome = run_turn(turn)
        except StorageError:  # reported as failed: none of it may land later
            recorder.abandon()
            raise
        except BaseException:
            recorder.save_what_ran()
            raise
        if settle:
            self.after_turn(outcome)
        return outcome

    def after_turn(
        self, outcome: TurnOutcome, *, end_session: bool = False, origin: str | None = None
    ) -> int:
        """The memory work a turn leaves: compress its session's history and, when the
        turn ended the session, keep its conclusions (M9). Slow with a real model (one or
        two requests), so it runs after the answer is shown; the conclusions stored."""
        if self.memory is None or not outcome.ok:  # a failed turn says nothing worth keeping
            return 0
        self.memory.compressor.maybe_compress(outcome.session)
        if end_session and outcome.stop_reason is not StopReason.CANCELLED:
            return self.end_session(outcome.session, origin=origin)
        return 0

    def confirm(self, action_id: str, *, unattended: bool = False) -> PendingAction:
        """Run a pending dangerous action the user said yes to (SPEC S2)."""
        return self.pending.confirm(action_id, self.registry, unattended=unattended)

    def reject(self, action_id: str) -> PendingAction:
        return self.pending.reject(action_id)

    def end_session(self, session: str, *, origin: str | None = None) -> int:
        """The session is over: keep what it concluded (SPEC M9); `origin` marks what an
        unattended run (job:NAME, watch:RULE) concluded."""
        if self.memory is None:
            return 0
        return self.memory.end_session(session, origin=origin)

    def close(self) -> None:
        try:
            from assistant.extensions import close_sources

            close_sources(self.registry)
            if self.memory is not None:
                self.memory.store.close()
            if self.vault_index is not None:
                self.vault_index.close()
            self.database.close()
        finally:
            self.lock.release()
