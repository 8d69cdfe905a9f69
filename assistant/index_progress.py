"""Progress of `assistant vault index` (issue 14): a rich progress bar on a terminal, one
line per phase with `-v`, nothing otherwise.

In this process the index reports each step (`phase, done, total`); through the daemon the
same steps are read from `vault status` (its `indexing` field) while the request runs.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

PHASES = {"scan": "scanning the vault", "text": "full text (notes)", "vectors": "meaning (chunks)"}
POLL_S = 0.5


class IndexProgress:
    """Shows indexing steps. `bar`: a live progress bar (a terminal); `verbose`: a line
    on stderr as each phase ends (and when a run is seen through the daemon)."""

    def __init__(self, *, bar: bool, verbose: bool, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.verbose = verbose
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._last: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()
        if bar:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self._bar = Progress(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(file=self.stream),
                transient=False,
            )

    def __enter__(self) -> IndexProgress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
        if self.verbose:
            for phase, (done, total) in self._last.items():
                if phase != "scan":
                    print(f"{PHASES.get(phase, phase)}: {done}/{total}", file=self.stream)

    def update(self, phase: str, done: int, total: int) -> None:
        with self._lock:
            previous = next(reversed(self._last), None) if self._last else None
            self._last[phase] = (done, total)
            if self.verbose and previous not in (None, phase, "scan"):
                ended = self._last[previous]
                print(f"{PHASES.get(previous, previous)}: {ended[0]}/{ended[1]}", file=self.stream)
                self._last.pop(previous)
            if self._bar is None or phase == "scan":
                return
            task = self._tasks.get(phase)
            if task is None:
                task = self._tasks[phase] = self._bar.add_task(
                    PHASES.get(phase, phase), total=total
                )
            self._bar.update(task, completed=done, total=total)

    @contextmanager
    def polling(self, read: Callable[[], dict[str, Any] | None]) -> Iterator[None]:
        """While the block runs (a request to the daemon), read its progress now and then."""
        stop = threading.Event()

        def poll() -> None:
            while not stop.wait(POLL_S):
                try:
                    state = read()
                except Exception:  # noqa: BLE001 - progress is a courtesy, never an error
                    return
                if state:
                    self.update(str(state["phase"]), int(state["done"]), int(state["total"]))

        thread = threading.Thread(target=poll, name="index-progress", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(2)
