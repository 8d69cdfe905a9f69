"""Working memory (SPEC M1): persisted as the turn runs, repaired on load."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from older import database_as_of

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


def test_upgrading_an_older_store_keeps_every_session_and_message(tmp_path: Path) -> None:
    """m003 rebuilds the two tables; ids, order and sessions must come through intact."""
    from memory import working

    path = tmp_path / "old.db"
    old = database_as_of(
        path, "working", working.m001_sessions_and_messages, working.m002_extraction_mark
    )
    # rows as the store wrote them before m003
    insert = (
        "INSERT INTO messages (session, turn_id, role, content, created_at) "
        "VALUES ('s', 't1', ?, ?, 0)"
    )
    old.write_many(
        [
            ("INSERT INTO sessions (id, created_at, updated_at, turns) VALUES ('s', 0, 0, 1)", ()),
            (insert, ("user", "hi")),
            (insert, ("assistant", "hello")),
            ("UPDATE sessions SET extracted_through = 2 WHERE id = 's'", ()),
        ]
    )
    before = old.query("SELECT id, role, content FROM messages ORDER BY id")
    old.close()

    upgraded = Database(path)
    store = WorkingMemory(upgraded)
    rows = upgraded.query("SELECT id, role, content FROM messages ORDER BY id")
    assert rows == before and [r["content"] for r in rows] == ["hi", "hello"]
    session = store.sessions()[0]
    assert (session["id"], session["turns"], session["extracted_through"]) == ("s", 1, 2)
    store.append("s", "t2", [{"role": "user", "content": "again"}])
    ids = [r["id"] for r in store.rows("s")]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert [m["content"] for m in store.load("s")] == ["hi", "hello", "again"]
    upgraded.close()
