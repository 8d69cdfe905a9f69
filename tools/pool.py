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
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._healthy = 0
        self._idle = 0

    def submit(self, fn: Callable[[], Any], done: queue.SimpleQueue[Job] | None = None) -> Job:
        """Queue `fn`; when it finishes, the job is also put on `done` (cheaper than waiting)."""
        job = Job(fn, done)
        self._jobs.put(job)
        self._grow()
        return job

    def abandon(self, job: Job) -> None:
        """Give up on a running job: its worker leaves the pool when (if ever) it returns,
        and a fresh worker takes its place so queued calls still start."""
        with self._lock:
            if job.abandoned or job.started_at is None or job.future.done():
                return
            job.abandoned = True
            self._healthy -= 1
        self._grow()

    def _grow(self) -> None:
        with self._lock:
            if self._jobs.qsize() > self._idle and self._healthy < self._width:
                self._healthy += 1
                self._idle += 1
                worker = threading.Thread(target=self._work, name=f"{self._name}-tool", daemon=True)
                worker.start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            with self._lock:
                self._idle -= 1
            job.started_at = time.monotonic()
            if job.future.set_running_or_notify_cancel():
                try:
                    job.future.set_result(job.fn())
                except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                    job.future.set_exception(exc)
            with self._lock:
                if job.abandoned:
                    return
                self._idle += 1
            if job.done is not None:
                job.done.put(job)
