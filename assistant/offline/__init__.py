"""The offline planner (SPEC O2): a deterministic rule engine behind the `ChatModel` protocol.

With no model endpoint configured it reads the conversation like a model would, asks for
tool calls through the same loop, then composes the answer from the tool results. Each
capability is an `Intent`; later features add intents without touching the loop.
"""

from __future__ import annotations

from assistant.offline.planner import Intent, OfflinePlanner, PlannerStep, PlannerView

__all__ = ["Intent", "OfflinePlanner", "PlannerStep", "PlannerView"]
