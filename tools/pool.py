"""A bounded pool of daemon worker threads for tool calls.

`concurrent.futures.ThreadPoolExecutor` joins its threads at interpreter exit, so one tool
that hangs past its timeout would keep the CLI from exiting. Here a timed-out call is
abandoned: its thread is a daemon, and a fresh worker takes its place so the pool keeps
its width.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class Job:
    __slots__ = ("abandoned", "done", "fn", "future", "started_at")

    def __init__(self, fn: Callable[[], Any], done: queue.SimpleQueue[Job] | None) -> None:
        self.fn = fn
        self.done = done
        self.future: Future[Any] = Future()
        self.started_at: float | None = None
        self.abandoned = False


class WorkerPool:
    def __init__(self, width: int, name: str = "tool") -> None:
        self._width = width
        self._name = name
        self._ready = threading.Condition()
        self._queue: deque[Job] = deque()
        self._healthy = 0
        self._waiting = 0

    def submit(self, fn: Callable[[], Any], done: queue.SimpleQueue[Job] | None = None) -> Job:
        """Queue `fn`; when it finishes, the job is also put on `done` (cheaper than waiting)."""
        job = Job(fn, done)
        with self._ready:
            self._queue.append(job)
            self._grow()
            self._ready.notify()
        return job

    def abandon(self, job: Job) -> None:
        """Give up on a running job: its worker leaves the pool when (if ever) it returns,
        and a fresh worker takes its place so queued calls still start."""
        with self._ready:
            if job.abandoned or job.started_at is None or job.future.done():
                return
            job.abandoned = True
            self._healthy -= 1
            self._grow()

    def _grow(self) -> None:
        """Start a worker when more jobs wait than workers do (called with the lock held)."""
        if len(self._queue) > self._waiting and self._healthy < self._width:
            self._healthy += 1
            worker = threading.Thread(target=self._work, name=f"{self._name}-tool", daemon=True)
            worker.start()

    def _take(self) -> Job:
        with self._ready:
            while not self._queue:
                self._waiting += 1
                try:
                    self._ready.wait()
                finally:
                    self._waiting -= 1
            job = self._queue.popleft()
            job.started_at = time.monotonic()
            return job

    def _work(self) -> None:
        while True:
            job = self._take()
            if job.future.set_running_or_notify_cancel():
                try:
                    job.future.set_result(job.fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                    job.future.set_exception(exc)
            with self._ready:
                if job.abandoned:
                    return
            if job.done is not None:
                job.done.put(job)
