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


def _looping_model(pattern: list[int]) -> Callable[..., ModelReply]:
    """Replies by position in the turn: the scripted calls, then a final answer."""

    class Model:
        name = "zero-latency"

        def complete(self, messages: list[Message], tools: object, **_: object) -> ModelReply:
            user_index = max(i for i, m in enumerate(messages) if m["role"] == "user")
            done = sum(1 for m in messages[user_index:] if m.get("tool_calls"))
            if done < len(pattern):
                return calls(*[("add", {"a": done, "b": n}) for n in range(pattern[done])])
            return text("done")

    return Model()


def make_turn(
    scenario: str, home: Path | None = None
) -> tuple[Callable[[], None], Callable[[], None]]:
    """Return (run one turn, close). Each turn is a fresh session, as in the peers."""
    home = home or Path(tempfile.mkdtemp(prefix="bench-ours-"))
    settings = load_settings({"ASSISTANT_HOME": str(home)})
    settings.loop.max_requests = 12
    settings.memory.enabled = False  # long-term recall is measured in bench/memory_scale.py
    assistant = Assistant(settings, model=_looping_model(ROUNDS[scenario]), tools=[add])
    counter = itertools.count()

    def run() -> None:
        outcome = assistant.ask("add things", session=f"bench-{next(counter)}")
        assert outcome.stop_reason.value == "final", outcome.stop_reason

    return run, assistant.close
