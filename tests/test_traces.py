"""The trace store's layout (SPEC T1): one row per turn, its requests and tool calls in it,
kept up to date while the turn runs and carried over from the old per-request tables."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from older import database_as_of

from assistant import traces
from assistant.testing import ScriptedModel, calls, text
from memory.db import Database
from tools.base import tool


def _turn_on_disk(home: Path) -> dict[str, Any] | None:
    """The newest turn row as another process would read it right now."""
    with sqlite3.connect(home / "assistant.db") as conn:
        conn.row_factory = sqlite3.Row
        row = conn.execute("SELECT * FROM turns ORDER BY rowid DESC LIMIT 1").fetchone()
    return dict(row) if row else None


def test_the_row_on_disk_follows_the_turn_while_it_runs(
    make_assistant: Any, tmp_path: Path
) -> None:
    """Before each request to a remote model the row holds every earlier request, reply
    and tool call, and says the turn has not finished; the end fills in the rest."""
    home = tmp_path / "home"
    seen: dict[str, Any] = {}

    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        return {"definition": f"{word}: a letter"}

    def second(messages: Any, tools: Any) -> Any:
        seen["mid-turn"] = _turn_on_disk(home)
        return text("x is a letter.")

    model = ScriptedModel([calls(("lookup", {"word": "x"})), second])
    model.remote = True  # type: ignore[attr-defined]
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    assistant.settings.memory.unsaved_ms = 60_000  # only the commit before a request counts
    outcome = assistant.ask("define x", session="s")

    mid = seen["mid-turn"]
    assert mid["id"] == outcome.turn_id and mid["finished_at"] is None
    [request] = json.loads(mid["request_log"])
    assert request["reply"]["tool_calls"][0]["function"]["name"] == "lookup"
    [call] = json.loads(mid["call_log"])
    assert call["result"] == {"definition": "x: a letter"} and call["status"] == "ok"

    end = assistant.traces.turn(outcome.turn_id)
    assert end["stop_reason"] == "final" and end["answer"] == "x is a letter."
    assert [r["idx"] for r in end["requests"]] == [0, 1]
    assert end["requests"][1]["new_messages"][-1]["role"] == "tool"
    assert [c["call_id"] for c in end["tool_calls"]] == [call["call_id"]]


def test_old_per_request_rows_are_carried_into_their_turns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = database_as_of(
        path, "traces", traces.m001_turns_requests_tool_calls, traces.m002_turns_in_insertion_order
    )
    reply = {"role": "assistant", "content": None, "tool_calls": [{"id": "c1"}]}
    old.write_many(
        [
            (
                "INSERT INTO turns (id, session, started_at, user_input, answer, stop_reason, "
                "requests) VALUES ('t1', 's', 1.0, 'what is 2+2', '4', 'final', 2)",
                (),
            ),
            (
                "INSERT INTO requests (turn_id, idx, prefix_count, new_messages, tools, reply, "
                "duration_ms) VALUES ('t1', 1, 2, ?, '[]', NULL, 3.5)",
                (json.dumps([{"role": "tool", "tool_call_id": "c1", "content": "4"}]),),
            ),
            (
                "INSERT INTO requests (turn_id, idx, prefix_count, new_messages, tools, reply, "
                "duration_ms) VALUES ('t1', 0, 0, ?, '[\"calc\"]', ?, 2.0)",
                (json.dumps([{"role": "user", "content": "what is 2+2"}]), json.dumps(reply)),
            ),
            (
                "INSERT INTO tool_calls (turn_id, request_idx, call_id, tool, arguments, status, "
                "result, truncated, cached, executed) VALUES ('t1', 0, 'c1', 'calc', ?, 'ok', "
                "?, 0, 1, 1)",
                (json.dumps({"expression": "2+2"}), json.dumps({"value": 4})),
            ),
            # a request whose turn row never made it (foreign keys were not enforced)
            (
                "INSERT INTO requests (turn_id, idx, prefix_count, new_messages, tools) "
                "VALUES ('orphan', 0, 0, '[]', '[]')",
                (),
            ),
        ]
    )
    old.close()

    upgraded = Database(path)
    store = traces.TraceStore(upgraded)
    turn = store.turn("t1")
    assert turn is not None and (turn["answer"], turn["stop_reason"]) == ("4", "final")
    assert [r["idx"] for r in turn["requests"]] == [0, 1]
    assert turn["requests"][0]["reply"] == reply and turn["requests"][0]["tools"] == ["calc"]
    assert turn["requests"][1]["new_messages"][0]["content"] == "4"
    assert turn["requests"][1]["reply"] is None and turn["requests"][1]["duration_ms"] == 3.5
    [call] = turn["tool_calls"]
    assert call["arguments"] == {"expression": "2+2"} and call["result"] == {"value": 4}
    assert (call["cached"], call["truncated"], call["executed"]) == (True, False, True)
    orphan = store.turn("orphan")
    assert orphan is not None and len(orphan["requests"]) == 1
    tables = {row["name"] for row in upgraded.query("SELECT name FROM sqlite_master")}
    assert not tables & {"requests", "tool_calls", "tool_calls_by_turn"}
    upgraded.close()


def test_turn_ids_sort_in_the_order_turns_start(monkeypatch: Any) -> None:
    """New ids land at the end of the id index (a page in memory), not at random pages."""
    from assistant import loop

    clock = iter([1_700_000_000_000_000_000 + n * 1_000_000 for n in range(50)])
    monkeypatch.setattr(loop.time, "time_ns", lambda: next(clock))
    ids = [loop.new_id() for _ in range(50)]
    assert ids == sorted(ids) and len(set(ids)) == 50
    assert all(len(i) == len("turn_") + 16 for i in ids)
