"""One work queue for every turn the daemon runs (SPEC D4).

Interactive asks, scheduled jobs and file events all come through `WorkQueue.submit`: at
most `max_concurrent` run at once, and items on the same lane (a session, a job, a file)
run one after another in arrival order, so two turns never interleave their messages in
one session. A waiting item does not occupy a worker: only the head of each lane is
handed to the workers. Workers are daemon threads, so a turn that ignores its cancel
event cannot keep the process alive past the shutdown timeout.

`ThrottledModel` puts the model endpoint behind a semaphore; the openai SDK already
retries 429 and 5xx replies with backoff (`[model] max_retries`).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from typing import Any

from assistant.model import ChatModel, Message, ModelReply

log = logging.getLogger(__name__)

Work = Callable[[threading.Event], Any]


class QueueClosed(RuntimeError):
    """The daemon is shutting down and takes no new work."""


@dataclass(eq=False)
class WorkItem:
    lane: str
    kind: str
    work: Work
    label: str = ""
    future: Future = field(default_factory=Future)
    cancel: threading.Event = field(default_factory=threading.Event)
    queued_at: float = field(default_factory=time.time)
    started_at: float | None = None


class WorkQueue:
    def __init__(self, max_concurrent: int) -> None:
        self.max_concurrent = max_concurrent
        self._ready: queue.SimpleQueue[WorkItem | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._lanes: dict[str, deque[WorkItem]] = {}
        self._items: set[WorkItem] = set()
        self._closed = False
        self._workers = [
            threading.Thread(target=self._work, name=f"turn-{n}", daemon=True)
            for n in range(max_concurrent)
        ]
        for worker in self._workers:
            worker.start()

    def submit(
        self,
        lane: str,
        work: Work,
        *,
        kind: str,
        label: str = "",
        cancel: threading.Event | None = None,
    ) -> Future:
        """Queue `work(cancel_event)`; its future resolves to what it returns. `cancel`:
        the caller's own event (set it to stop the work), else a new one."""
        item = WorkItem(lane=lane, kind=kind, work=work, label=label)
        if cancel is not None:
            item.cancel = cancel
        with self._lock:
            if self._closed:
                raise QueueClosed("the daemon is shutting down and takes no new work")
            self._items.add(item)
            waiting = self._lanes.setdefault(lane, deque())
            waiting.append(item)
            if len(waiting) == 1:  # the lane was idle: its head goes to the workers now
                self._ready.put(item)
        return item.future

    def _work(self) -> None:
        while (item := self._ready.get()) is not None:
            item.started_at = time.time()
            try:
                if item.future.set_running_or_notify_cancel():
                    try:
                        item.future.set_result(item.work(item.cancel))
                    except BaseException as exc:  # noqa: BLE001 - handed to the waiter
                        item.future.set_exception(exc)
            finally:
                self._done(item)

    def _done(self, item: WorkItem) -> None:
        with self._lock:
            self._items.discard(item)
            waiting = self._lanes[item.lane]
            waiting.popleft()
            if waiting:
                self._ready.put(waiting[0])
            else:
                del self._lanes[item.lane]

    def stats(self) -> dict[str, Any]:
        with self._lock:
            running = [i for i in self._items if i.started_at is not None]
            return {
                "running": len(running),
                "waiting": len(self._items) - len(running),
                "max_concurrent_turns": self.max_concurrent,
                "turns": [
                    {"kind": i.kind, "label": i.label, "started_at": i.started_at}
                    for i in sorted(running, key=lambda i: i.started_at or 0)
                ],
            }

    def close(self) -> list[WorkItem]:
        """Take no new work and ask every queued or running turn to stop (`cancelled`)."""
        with self._lock:
            self._closed = True
            items = list(self._items)
        for item in items:
            item.cancel.set()
        return items

    def join(self, timeout_s: float) -> bool:
        """Wait for the accepted work to finish; True when all of it did."""
        with self._lock:
            futures = [item.future for item in self._items]
        _, pending = wait(futures, timeout=timeout_s)
        for _ in self._workers:
            self._ready.put(None)
        return not pending


class ThrottledModel:
    """The model endpoint behind a semaphore: at most `limit` requests in flight (D4)."""

    def __init__(self, model: ChatModel, limit: int) -> None:
        self.inner = model
        self.name = model.name
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
        with self._slots:
            return self.inner.complete(
                messages, tools, temperature=temperature, timeout_s=timeout_s, **streaming
            )

    def __getattr__(self, name: str) -> Any:
        value = getattr(self.inner, name)
        if name == "complete_json":  # structured requests take a slot too (D4)

            def throttled(*args: Any, **kwargs: Any) -> Any:
                with self._slots:
                    return value(*args, **kwargs)

            return throttled
        return value
