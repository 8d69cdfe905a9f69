"""Public test doubles: `ScriptedModel` plays back replies and records what it was sent.

Used by our tests and benchmarks, and by anyone scripting the assistant without a model.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from assistant.model import Message, ModelReply, ToolCall, Usage

Script = ModelReply | Callable[[Sequence[Message], Sequence[dict[str, Any]] | None], ModelReply]


def text(content: str) -> ModelReply:
    return ModelReply(content=content, usage=Usage(10, 5), finish_reason="stop")


def calls(*specs: tuple[str, dict[str, Any] | str], prefix: str = "call") -> ModelReply:
    """A reply with tool calls; arguments given as a dict are JSON-encoded, a str is sent as is."""
    return ModelReply(
        tool_calls=tuple(
            ToolCall(
                id=f"{prefix}_{n}",
                name=name,
                arguments=arguments if isinstance(arguments, str) else json.dumps(arguments),
            )
            for n, (name, arguments) in enumerate(specs, start=1)
        ),
        usage=Usage(10, 5),
        finish_reason="tool_calls",
    )


class ScriptedModel:
    """Returns the scripted replies in order; fails loudly when the script runs out."""

    def __init__(
        self, replies: Iterable[Script] = (), *, name: str = "scripted", record: bool = True
    ):
        self.name = name
        self._replies: list[Script] = list(replies)
        self._lock = threading.Lock()
        self.record = record
        self.requests: list[dict[str, Any]] = []

    def enqueue(self, *replies: Script) -> ScriptedModel:
        with self._lock:
            self._replies.extend(replies)
        return self

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        temperature: float = 0.0,
        timeout_s: float | None = None,
    ) -> ModelReply:
        with self._lock:
            if self.record:
                self.requests.append({"messages": copy.deepcopy(list(messages)), "tools": tools})
            if not self._replies:
                raise AssertionError("ScriptedModel: the script has no reply left for this request")
            reply = self._replies.pop(0)
        return reply if isinstance(reply, ModelReply) else reply(messages, tools)

    def assert_complete(self) -> None:
        if self._replies:
            raise AssertionError(f"ScriptedModel: {len(self._replies)} scripted replies unused")
