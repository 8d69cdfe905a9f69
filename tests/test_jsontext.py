"""JSON text: written by orjson, with the standard library wherever orjson refuses, and
never read by orjson where its reading would change a value."""

from __future__ import annotations

import json

from memory.jsontext import dumps, with_members
from tools.base import tool
from tools.registry import ToolRegistry
from tools.runner import ToolRunner

HUGE = 2**70


def test_values_orjson_refuses_are_written_by_the_standard_library() -> None:
    assert json.loads(dumps({"n": HUGE, 1: "non-string key"})) == {"n": HUGE, "1": "non-string key"}


def test_members_written_once_are_spliced_in_as_json() -> None:
    text = with_members(dumps({"idx": 0}), reply='{"role":"assistant"}', error="null")
    assert json.loads(text) == {"idx": 0, "reply": {"role": "assistant"}, "error": None}


def test_a_tool_call_with_an_integer_past_64_bits_keeps_every_digit() -> None:
    """orjson would read it as a rounded float; the arguments must not change."""

    @tool
    def add(a: int, b: int) -> dict[str, int]:
        """Add two integers. Call it for any sum."""
        return {"sum": a + b}

    runner = ToolRunner(ToolRegistry([add]))
    call = runner.prepare("c1", "add", json.dumps({"a": HUGE, "b": 1}))
    assert call.error is None and call.arguments == {"a": HUGE, "b": 1}
