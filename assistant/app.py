"""The composition root: the one place that wires settings, model, tools and stores.

The CLI (and later the daemon) builds one `Assistant`; everything below it receives what
it needs as arguments, so tests hand in fakes or temporary stores instead.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Iterable
from typing import Any

from assistant.config import Settings
from assistant.loop import SYSTEM_PROMPT, Turn, run_turn
from assistant.model import ChatModel
from assistant.outcome import TurnOutcome
from assistant.traces import Recorder, TraceStore
from memory.db import Database
from memory.redact import Redactor
from memory.working import WorkingMemory
from tools.base import Tool
from tools.registry import ToolRegistry
from tools.runner import ToolRunner


def default_tools() -> list[Tool]:
    from tools.calc import calc_evaluate

    return [calc_evaluate]


def build_model(settings: Settings) -> ChatModel:
    """The configured endpoint, or the offline planner when none is configured (O2)."""
    if settings.model.offline:
        from assistant.offline import OfflinePlanner
        from assistant.offline.intents import core_intents

        config_path = settings.config_file or settings.home / "config.toml"
        return OfflinePlanner(core_intents(), config_path=str(config_path))
    from assistant.openai_model import OpenAIChatModel

    return OpenAIChatModel(settings.model)


def new_session_id() -> str:
    return time.strftime("s-%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def system_prompt(now: float | None = None) -> str:
    today = time.strftime("%Y-%m-%d (%A)", time.localtime(now))
    return f"{SYSTEM_PROMPT}\nToday is {today}."


class Assistant:
    def __init__(
        self,
        settings: Settings,
        *,
        model: ChatModel | None = None,
        tools: Iterable[Tool] | None = None,
    ) -> None:
        self.settings = settings
        settings.home.mkdir(parents=True, exist_ok=True)
        self.model = model or build_model(settings)
        self.redactor = Redactor()
        self.registry = ToolRegistry(default_tools() if tools is None else tools)
        limits = settings.loop
        self.runner = ToolRunner(
            self.registry,
            result_budget=limits.result_budget_chars,
            default_timeout_s=limits.tool_timeout_s,
            workers=limits.parallel_tools,
            cache_ttl_s=limits.cache_ttl_s,
        )
        self.database = Database(settings.database_path)
        self.working = WorkingMemory(self.database)
        self.traces = TraceStore(self.database, self.redactor)

    @property
    def offline(self) -> bool:
        return self.model.name == "offline-planner"

    def ask(
        self,
        text: str,
        *,
        session: str | None = None,
        trigger: dict[str, Any] | None = None,
        cancel: threading.Event | None = None,
        unattended: bool = False,
    ) -> TurnOutcome:
        session = session or new_session_id()
        recorder = Recorder(
            self.traces,
            self.working,
            trigger=trigger,
            debug_stream=sys.stderr if self.settings.debug else None,
        )
        turn = Turn(
            user_text=text,
            model=self.model,
            runner=self.runner,
            limits=self.settings.loop,
            history=self.working.load(session),
            system_prompt=system_prompt(),
            recorder=recorder,
            session=session,
            temperature=self.settings.model.temperature,
            cancel=cancel,
            unattended=unattended,
        )
        return run_turn(turn)

    def close(self) -> None:
        self.database.close()
