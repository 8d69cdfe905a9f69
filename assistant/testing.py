"""Public test doubles: `ScriptedModel` plays back replies and records what it was sent.

Used by our tests and benchmarks, and by anyone scripting the assistant without a model.
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from assistant.model import Message, ModelReply, ToolCall, Usage


@dataclass(frozen=True)
class Streamed:
    """A reply whose text arrives in these pieces (each one an `on_delta` call)."""

    pieces: tuple[str, ...]
    reply: ModelReply


Script = (
    ModelReply
    | Streamed
    | Callable[[Sequence[Message], Sequence[dict[str, Any]] | None], ModelReply]
)


def text(content: str) -> ModelReply:
    return ModelReply(content=content, usage=Usage(10, 5), finish_reason="stop")


def streamed(*pieces: str) -> Streamed:
    """A final text answer delivered piece by piece, as a streaming endpoint sends it."""
    return Streamed(pieces, text("".join(pieces)))


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
    """Returns the scripted replies in order; fails loudly when the script runs out.

    With `on_delta`, a `Streamed` item's pieces are delivered one by one; any other reply
    with text is delivered as one piece, as a model that does not stream would.
    """

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
        on_delta: Callable[[str], None] | None = None,
    ) -> ModelReply:
        with self._lock:
            if self.record:
                self.requests.append({"messages": copy.deepcopy(list(messages)), "tools": tools})
            if not self._replies:
                raise AssertionError("ScriptedModel: the script has no reply left for this request")
            item = self._replies.pop(0)
        if isinstance(item, Streamed):
            pieces, reply = item.pieces, item.reply
        else:
            reply = item if isinstance(item, ModelReply) else item(messages, tools)
            pieces = (reply.content,) if reply.content else ()
        if on_delta is not None:
            for piece in pieces:
                on_delta(piece)
        return reply

    def assert_complete(self) -> None:
        if self._replies:
            raise AssertionError(f"ScriptedModel: {len(self._replies)} scripted replies unused")
