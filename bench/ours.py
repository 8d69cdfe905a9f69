"""Our side of the loop-overhead benchmark: the full `Assistant` (traces and working memory
persisted to SQLite in a temporary data directory, grounding check on, long-term memory
off) with a zero-latency scripted model."""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from pathlib import Path

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.model import Message, ModelReply
from assistant.testing import calls, text
from tools.base import tool


@tool(cacheable=False, inline=True)
def add(a: int, b: int) -> dict[str, int]:
    """Add two integers. Call it for any sum."""
    return {"sum": a + b}


ROUNDS = {"a": [1], "b": [5], "c": [1] * 8}


class _ScriptedModel:
    """Replies by step, as the peers' test models do: the scripted calls, then a final
    answer; fresh reply objects each time. `run` rewinds it at the start of every turn."""

    name = "zero-latency"

    def __init__(self, pattern: list[int]) -> None:
        self.pattern = pattern
        self.step = 0

    def complete(self, messages: list[Message], tools: object, **_: object) -> ModelReply:
        step, self.step = self.step, self.step + 1
        if step < len(self.pattern):
            return calls(*[("add", {"a": step, "b": n}) for n in range(self.pattern[step])])
        return text("done")


def make_turn(
    scenario: str, home: Path | None = None
) -> tuple[Callable[[], None], Callable[[], None]]:
    """Return (run one turn, close). Each turn is a fresh session, as in the peers."""
    home = home or Path(tempfile.mkdtemp(prefix="bench-ours-"))
    settings = load_settings({"ASSISTANT_HOME": str(home)})
    settings.loop.max_requests = 12
    settings.memory.enabled = False  # long-term recall is measured in bench/memory_scale.py
    model = _ScriptedModel(ROUNDS[scenario])
    assistant = Assistant(settings, model=model, tools=[add])
    counter = itertools.count()

    def run() -> None:
        model.step = 0
        outcome = assistant.ask("add things", session=f"bench-{next(counter)}")
        assert outcome.stop_reason.value == "final", outcome.stop_reason
        assert len(outcome.tool_calls) == sum(ROUNDS[scenario]), outcome.tool_calls

    return run, assistant.close
