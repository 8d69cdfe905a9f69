"""The chat-model protocol the loop speaks, and the reply it expects back.

Messages are plain OpenAI chat-completions dicts, so history stored in SQLite, requests
on the wire and traces are one format.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol, runtime_checkable

from tools.arguments import escape_surrogates, replace_surrogates

Message = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str

    def __post_init__(self) -> None:
        """A model may send lone surrogates; every string of a call must stay storable.
        In the arguments they become their JSON escapes (the same JSON value, refused with
        a clear error when the call is prepared); in id and name, U+FFFD."""
        object.__setattr__(self, "id", replace_surrogates(self.id))
        object.__setattr__(self, "name", replace_surrogates(self.name))
        object.__setattr__(self, "arguments", escape_surrogates(self.arguments))

    def as_message_part(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": "function",
            "function": {"name": self.name, "arguments": self.arguments},
        }


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ModelReply:
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    finish_reason: str | None = None
    reasoning: str | None = None  # think text, kept out of `content` (trace and -v only)

    @property
    def truncated(self) -> bool:
        """The server stopped at the token limit: the answer is cut."""
        return self.finish_reason == "length"

    def __post_init__(self) -> None:
        if self.content:  # lone surrogates cannot be stored, hashed or sent: U+FFFD
            object.__setattr__(self, "content", replace_surrogates(self.content))

    @cached_property
    def message(self) -> Message:
        """The reply as a chat message, built once: the loop and its trace share it. The
        reasoning rides along for the trace; it is never stored as content or sent back."""
        message: Message = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            message["tool_calls"] = [call.as_message_part() for call in self.tool_calls]
        if self.reasoning:
            message["reasoning_content"] = self.reasoning
        return message


@runtime_checkable
class ChatModel(Protocol):
    """Anything that turns messages (and offered tools) into one reply.

    A model whose requests leave the process sets `remote = True`: the turn's rows are
    then committed before each request, where a commit hides behind the network.

    `on_delta`, when given, is called with each new piece of answer text as it arrives
    (a model that does not stream calls it once with the whole text); the reply returned
    is still the whole of it. The loop passes it only when someone observes the turn.
    """

    name: str

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        temperature: float,
        timeout_s: float,
        on_delta: Callable[[str], None] | None = None,
    ) -> ModelReply: ...
