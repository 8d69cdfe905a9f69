"""Working memory (SPEC M1): persisted as the turn runs, repaired on load."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memory.db import Database
from memory.tokens import estimate_tokens
from memory.working import WorkingMemory


@pytest.fixture
def working(tmp_path: Path) -> WorkingMemory:
    return WorkingMemory(Database(tmp_path / "assistant.db"))


def _call(call_id: str) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "calc_evaluate", "arguments": "{}"},
    }


def test_a_crash_mid_tool_call_is_repaired_on_load(
    working: WorkingMemory, caplog: pytest.LogCaptureFixture
) -> None:
    working.database.write_many(
        working.start_turn_statements("s", "t1", {"role": "user", "content": "2+2?"})
    )
    working.append(
        "s", "t1", [{"role": "assistant", "content": None, "tool_calls": [_call("a"), _call("b")]}]
    )
    working.append("s", "t1", [{"role": "tool", "tool_call_id": "a", "content": '{"value": 4}'}])
    with caplog.at_level(logging.WARNING):
        messages = working.load("s")
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool"]
    assert messages[3]["tool_call_id"] == "b"
    assert json.loads(messages[3]["content"])["error"] == "INTERRUPTED"
    assert "had no result" in caplog.text


def test_an_orphan_result_is_dropped_and_logged(
    working: WorkingMemory, caplog: pytest.LogCaptureFixture
) -> None:
    working.database.write_many(
        working.start_turn_statements("s", "t1", {"role": "user", "content": "hi"})
    )
    working.append("s", "t1", [{"role": "tool", "tool_call_id": "ghost", "content": "{}"}])
    working.append("s", "t1", [{"role": "assistant", "content": "hello"}])
    with caplog.at_level(logging.WARNING):
        messages = working.load("s")
    assert [m["role"] for m in messages] == ["user", "assistant"]
    assert "ghost" in caplog.text
    assert len(working.rows("s")) == 3, "repair happens on load; the store keeps every row"


def test_messages_persist_across_reopening(tmp_path: Path) -> None:
    first = WorkingMemory(Database(tmp_path / "a.db"))
    first.database.write_many(
        first.start_turn_statements("s", "t1", {"role": "user", "content": "记住这个"})
    )
    first.database.close()
    again = WorkingMemory(Database(tmp_path / "a.db"))
    assert again.load("s") == [{"role": "user", "content": "记住这个"}]
    assert again.sessions()[0]["turns"] == 1


def test_token_estimate_counts_chinese_per_character() -> None:
    assert estimate_tokens("你好世界") == 4
    assert estimate_tokens("hello world, this is text") == 7
    assert estimate_tokens("") == 0
