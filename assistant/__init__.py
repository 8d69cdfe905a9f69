"""A local, memory-tiered personal assistant with a bounded tool-calling loop."""

from __future__ import annotations

__version__ = "0.1.0"
