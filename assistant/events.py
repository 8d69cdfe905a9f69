"""What a turn reports while it runs: a small typed set of events, for whoever shows it.

The loop calls an observer (any `Callable[[TurnEvent], None]`) with these as the turn
unfolds; the CLI prints them, the daemon streams them as NDJSON lines (`as_dict` /
`from_dict` are the wire format). No observer, no events: the loop then does no work for
them. Standard library only: the light CLI client imports this module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class RequestStarted:
    """A request to the model is about to be sent (`index` counts from 0 in the turn).
    `purpose`: "turn" (the loop's own), "retry" (the reply was empty: asked once more
    without tools), "check" (the answer contradicted a tool result and is asked again,
    L16) or "wrap_up" (a bound was hit; the answer without tools)."""

    index: int
    tools: int
    purpose: str = "turn"


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A new piece of the model's text, as it arrives (of request `index`)."""

    text: str
    index: int


@dataclass(frozen=True, slots=True)
class ToolStarted:
    name: str
    call_id: str


@dataclass(frozen=True, slots=True)
class ToolFinished:
    name: str
    call_id: str
    status: str
    ms: float


@dataclass(frozen=True, slots=True)
class TurnStopped:
    """The turn is over; `answer` is the one stored and returned (it may differ from the
    streamed text, e.g. after a grounding correction)."""

    stop_reason: str
    answer: str
    detail: str | None = None


TurnEvent = RequestStarted | TextDelta | ToolStarted | ToolFinished | TurnStopped
TurnObserver = Callable[[TurnEvent], None]

KINDS: dict[str, type[Any]] = {
    "request": RequestStarted,
    "delta": TextDelta,
    "tool_started": ToolStarted,
    "tool_finished": ToolFinished,
    "stop": TurnStopped,
}
_NAMES = {kind: name for name, kind in KINDS.items()}


def as_dict(event: TurnEvent) -> dict[str, Any]:
    """The event as one JSON object: `{"event": "delta", "text": ..., "index": 0}`."""
    return {"event": _NAMES[type(event)], **asdict(event)}


def from_dict(data: Mapping[str, Any]) -> TurnEvent | None:
    """The event a line of the stream carries; None for a kind this version does not know
    (a newer daemon may send more)."""
    kind = KINDS.get(str(data.get("event")))
    if kind is None:
        return None
    fields = {name: data[name] for name in kind.__dataclass_fields__ if name in data}
    try:
        return kind(**fields)
    except TypeError:
        return None
