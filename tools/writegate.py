"""A write either happens whole or not at all, whatever a timeout says (issue 13, item 2).

The runner gives every call of a tool with effects a `WriteGate` (through a context
variable: the tool's own thread sees it). A tool that writes asks `begin()` just before
its first effect. When the call's time is up, the runner asks `give_up()`: a write not
begun is refused for good (`begin()` then says no, nothing is written, and the timeout
result says so); a write already begun is waited for, and its real result is reported.
Without a gate (a direct call, a confirmation), `begin()` always says yes.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

IDLE, WRITING, DONE, GIVEN_UP = "idle", "writing", "done", "given_up"


class WriteGate:
    """One call's write: idle, then writing and done, or given up before it began."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.state = IDLE
        self.consulted = False  # the tool writes through this gate

    def watch(self) -> None:
        """The tool says it writes through this gate (so a timeout before `begin` can
        truthfully report that nothing was written)."""
        with self._lock:
            self.consulted = True

    def begin(self) -> bool:
        """May the write start now? False once the caller gave up: write nothing."""
        with self._lock:
            self.consulted = True
            if self.state == GIVEN_UP:
                return False
            self.state = WRITING
            return True

    def finish(self) -> None:
        with self._lock:
            if self.state == WRITING:
                self.state = DONE

    def give_up(self) -> str:
        """The caller's time is up. Returns the state the write was in: `idle` (it will
        never start now), `writing` (wait for it), or `done`."""
        with self._lock:
            state = self.state
            if state == IDLE:
                self.state = GIVEN_UP
            return state


_GATE: ContextVar[WriteGate | None] = ContextVar("write_gate", default=None)


def current_gate() -> WriteGate | None:
    return _GATE.get()


def begin_write() -> bool:
    """For a tool, just before its first effect: may it start? (True without a gate.)"""
    gate = _GATE.get()
    return True if gate is None else gate.begin()


def watch_writes() -> None:
    """For a tool at its start: it writes through the gate, if there is one."""
    gate = _GATE.get()
    if gate is not None:
        gate.watch()


@contextmanager
def gated(gate: WriteGate | None) -> Iterator[None]:
    """Run the block (a tool call) with `gate` as its write gate."""
    token = _GATE.set(gate)
    try:
        yield
    finally:
        _GATE.reset(token)
        if gate is not None:
            gate.finish()
