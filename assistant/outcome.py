"""How a turn ends: one named stop reason and what the user gets (SPEC L8)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from assistant.model import Usage
from tools.runner import CallOutcome


class StopReason(StrEnum):
    FINAL = "final"
    MAX_REQUESTS = "max_requests"
    MAX_TOOL_CALLS = "max_tool_calls"
    REPEATED_CALL = "repeated_call"
    TOOL_FAILURES = "tool_failures"
    TIMEOUT = "timeout"
    CANCELLED = "cancelled"
    MODEL_ERROR = "model_error"


@dataclass
class GroundingCheck:
    """The L16 check of a final answer against this turn's tool results."""

    mismatches: list[str] = field(default_factory=list)
    corrected: bool = False
    original_answer: str | None = None

    @property
    def passed(self) -> bool:
        return not self.mismatches


@dataclass
class TurnOutcome:
    answer: str
    stop_reason: StopReason
    session: str
    turn_id: str
    tool_calls: list[CallOutcome] = field(default_factory=list)
    requests: int = 0
    usage: Usage = field(default_factory=Usage)
    stop_detail: str | None = None
    error_code: str | None = None
    grounding: GroundingCheck | None = None
    truncated: bool = False  # the answer was cut at the model's token limit

    @property
    def ok(self) -> bool:
        return self.stop_reason is not StopReason.MODEL_ERROR

    def as_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "stop_reason": self.stop_reason.value,
            "stop_detail": self.stop_detail,
            "error_code": self.error_code,
            "truncated": self.truncated,
            "session": self.session,
            "turn_id": self.turn_id,
            "requests": self.requests,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
                "estimated": self.usage.estimated,
            },
            "tool_calls": [
                {
                    "id": call.call_id,
                    "tool": call.name,
                    "version": call.version,
                    "arguments": call.arguments,
                    "status": call.status,
                    "cached": call.cached,
                    "result": call.result,
                }
                for call in self.tool_calls
            ],
            "grounding": None
            if self.grounding is None
            else {
                "mismatches": self.grounding.mismatches,
                "corrected": self.grounding.corrected,
            },
        }
