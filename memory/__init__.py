"""The memory tiers and their stores; imports neither `tools` nor `assistant`."""

from __future__ import annotations
