"""One gate per model endpoint: at most `limit` requests of ours in flight (issue 12, D4).

A single-slot server (llama.cpp, llama-cpp-python) runs one request at a time: a second
one queues behind the first, and a second stream can cut the first short
(llama-cpp-python's `interrupt_requests`). The answer path and the memory work that runs
after the answer (extraction, summary, the memory judge) therefore share one gate, in a
one-process `chat` as in the daemon. `[model] max_in_flight` (default 1) sets it; a cloud
endpoint can take more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from assistant.errors import ModelTimeout
from assistant.model import ChatModel, Message, ModelReply

GATED_CALLS = ("complete_json",)  # besides `complete`, every call that sends a request


class GatedModel:
    """The model endpoint behind a semaphore shared by every caller of this object."""

    def __init__(self, model: ChatModel, limit: int) -> None:
        self.inner = model
        self.name = model.name
        self.limit = limit
        self._slots = threading.BoundedSemaphore(limit)

    def complete(
        self,
        messages: Sequence[Message],
        tools: Sequence[dict[str, Any]] | None,
        *,
        temperature: float,
        timeout_s: float,
        on_delta: Callable[[str], None] | None = None,
    ) -> ModelReply:
        streaming = {} if on_delta is None else {"on_delta": on_delta}
        left = self._enter(timeout_s)
        try:
            return self.inner.complete(
                messages, tools, temperature=temperature, timeout_s=left, **streaming
            )
        finally:
            self._slots.release()

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name in GATED_CALLS:  # structured requests take a slot too

            def gated(*args: Any, **kwargs: Any) -> Any:
                left = self._enter(kwargs.get("timeout_s"))
                if left is not None:
                    kwargs["timeout_s"] = left
                try:
                    return value(*args, **kwargs)
                finally:
                    self._slots.release()

            return gated
        return value

    def _enter(self, timeout_s: float | None) -> float | None:
        """Take a slot within the caller's budget; what is left of it for the request
        (the wait counts: a turn stays inside `turn_timeout_s`)."""
        if timeout_s is None:
            self._slots.acquire()
            return None
        started = time.monotonic()
        if not self._slots.acquire(timeout=timeout_s):
            raise ModelTimeout(
                f"waited {timeout_s:.3g} s for the model endpoint: {self.limit} request(s) "
                "of ours still running there ([model] max_in_flight)"
            )
        return max(timeout_s - (time.monotonic() - started), 0.05)


def gated(model: ChatModel, limit: int) -> ChatModel:
    """`model` behind a gate of `limit`, unless it already is behind one or runs in this
    process (the offline planner, a test double: no endpoint to protect, no slot to pay)."""
    if isinstance(model, GatedModel) or not getattr(model, "remote", False):
        return model
    return GatedModel(model, limit)
