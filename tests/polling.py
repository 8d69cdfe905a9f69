"""Waiting for something another thread or process does: a liveness check with a
generous cap, never a timing assertion."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest


def wait_for(
    check: Callable[[], Any], what: str, timeout_s: float = 60.0, interval_s: float = 0.05
) -> Any:
    """Poll until `check()` returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not (value := check()):
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(interval_s)
    return value
