"""What a crash mid-turn can lose (SPEC M1): never a step that changed something.

A second SQLite connection looks at the data directory while the turn runs, as a process
restarted after a crash would: what it sees is what survives a `kill -9` at that moment.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from polling import wait_for

from assistant.testing import ScriptedModel, calls, text
from tools.base import ToolContext, tool
from tools.registry import ToolRegistry
from tools.runner import ToolRunner


def _on_disk(home: Path, session: str) -> list[tuple[str, str | None]]:
    """Rows of the session as another process would read them right now."""
    with sqlite3.connect(home / "assistant.db") as conn:
        return [
            (role, tool_call_id)
            for role, tool_call_id in conn.execute(
                "SELECT role, tool_call_id FROM messages WHERE session = ? ORDER BY id",
                [session],
            )
        ]


def test_a_call_that_changes_something_is_on_disk_before_it_runs(
    make_assistant: Any, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    home = tmp_path / "home"

    @tool(read_only=False)
    def note_write(title: str) -> dict[str, str]:
        """Write a note. Call it to save something."""
        seen["while running"] = _on_disk(home, "s")
        return {"written": title}

    def second(messages: Any, tools: Any) -> Any:
        seen["before next request"] = _on_disk(home, "s")
        return text("Saved.")

    model = ScriptedModel([calls(("note_write", {"title": "x"})), second])
    assistant = make_assistant(tools=[note_write], model=model, home=home)
    assert assistant.ask("save x", session="s").answer == "Saved."
    assert seen["while running"] == [("user", None), ("assistant", None)]
    assert [role for role, _ in seen["before next request"]] == ["user", "assistant", "tool"]


def test_read_only_steps_are_committed_every_step_when_asked(
    make_assistant: Any, tmp_path: Path
) -> None:
    seen: dict[str, Any] = {}
    home = tmp_path / "home"

    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        seen["while running"] = _on_disk(home, "s")
        return {"word": word}

    model = ScriptedModel([calls(("lookup", {"word": "x"})), text("Found it.")])
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    assistant.settings.memory.unsaved_ms = 0
    assert assistant.ask("define x", session="s").answer == "Found it."
    assert seen["while running"] == [("user", None), ("assistant", None)]


def test_a_fast_read_only_turn_still_stores_every_message(
    make_assistant: Any, tmp_path: Path
) -> None:
    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        return {"word": word}

    home = tmp_path / "home"
    model = ScriptedModel(
        [calls(("lookup", {"word": "a"}), ("lookup", {"word": "b"})), text("Both found.")]
    )
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    outcome = assistant.ask("define a and b", session="s")
    assert outcome.answer == "Both found."
    rows = _on_disk(home, "s")
    assert [role for role, _ in rows] == ["user", "assistant", "tool", "tool", "assistant"]
    call_ids = [c.call_id for c in outcome.tool_calls]
    assert [tool_call_id for _, tool_call_id in rows[2:4]] == call_ids


def test_inline_tools_run_beside_pool_calls_and_keep_call_order() -> None:
    release = threading.Event()
    order: list[str] = []

    @tool(inline=True)
    def quick(n: int) -> dict[str, int]:
        """Double a number. Call it for doubling."""
        order.append(f"quick {n}")
        if n == 2:
            release.set()  # the pooled call is waiting for this inline one to have run
        return {"double": 2 * n}

    @tool
    def slow(n: int) -> dict[str, int]:
        """Wait for the quick one. Call it to test."""
        assert release.wait(10), "the inline call did not run while the pool worked"
        order.append(f"slow {n}")
        return {"n": n}

    @tool(inline=True)
    def broken(n: int) -> dict[str, int]:
        """Always fails. Call it to test failures."""
        raise RuntimeError("inline boom")

    runner = ToolRunner(ToolRegistry([quick, slow, broken]))
    prepared = [
        runner.prepare("c1", "slow", '{"n": 1}'),
        runner.prepare("c2", "quick", '{"n": 2}'),
        runner.prepare("c3", "broken", '{"n": 3}'),
    ]
    outcomes = runner.run(prepared, lambda call: ToolContext(call_id=call.call_id))
    assert [o.call_id for o in outcomes] == ["c1", "c2", "c3"]
    assert outcomes[0].result == {"n": 1} and outcomes[1].result == {"double": 4}
    assert outcomes[2].status == "TOOL_EXCEPTION" and "inline boom" in outcomes[2].content
    assert order == ["quick 2", "slow 1"]


def test_only_bounded_read_only_tools_may_run_inline() -> None:
    def write(title: str) -> str:
        """Write. Call it to write."""
        return title

    with pytest.raises(ValueError, match="inline"):
        tool(write, read_only=False, inline=True)
    with pytest.raises(ValueError, match="inline"):
        tool(write, inline=True, timeout_s=5)


def test_a_turn_that_fails_unexpectedly_keeps_the_steps_it_ran(
    make_assistant: Any, tmp_path: Path
) -> None:
    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        return {"word": word}

    def broken(messages: Any, tools: Any) -> Any:
        raise RuntimeError("a bug in a model client")

    home = tmp_path / "home"
    model = ScriptedModel([calls(("lookup", {"word": "a"})), broken])
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    with pytest.raises(RuntimeError, match="a bug"):
        assistant.ask("define a", session="s")
    assert [role for role, _ in _on_disk(home, "s")] == ["user", "assistant", "tool"]


def test_a_waiting_turn_reaches_disk_on_its_own_deadline(
    make_assistant: Any, tmp_path: Path
) -> None:
    """Deferred rows are not held back by a slow model: the flusher commits them."""
    home = tmp_path / "home"
    model_may_answer = threading.Event()

    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        return {"word": word}

    def slow_second_request(messages: Any, tools: Any) -> Any:
        wait_for(
            lambda: [r for r, _ in _on_disk(home, "s")] == ["user", "assistant", "tool"],
            "the user's message and the read-only step on disk while the model thinks",
        )
        model_may_answer.set()
        return text("Found it.")

    model = ScriptedModel([calls(("lookup", {"word": "x"})), slow_second_request])
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    assert assistant.ask("define x", session="s").answer == "Found it."
    assert model_may_answer.is_set()


def test_every_stored_row_points_at_an_existing_parent(make_assistant: Any, tmp_path: Path) -> None:
    """Foreign keys are not enforced per row (it costs), so check the links here."""
    home = tmp_path / "home"

    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        if word == "boom":
            raise RuntimeError("lookup failed")
        return {"word": word}

    model = ScriptedModel(
        [
            calls(("lookup", {"word": "a"}), ("lookup", {"word": "boom"})),
            calls(("missing_tool", {})),
            text("Done."),
            text("Hello again."),
        ]
    )
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    assistant.ask("define a", session="s1")
    assistant.ask("hello", session="s2")
    assistant.close()
    with sqlite3.connect(home / "assistant.db") as conn:
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        counts = conn.execute(
            "SELECT count(*), sum(json_array_length(request_log)), "
            "sum(json_array_length(call_log)), (SELECT count(*) FROM messages) FROM turns"
        ).fetchone()
    assert counts == (2, 4, 3, 9)  # turns, requests, tool calls, messages


def test_the_last_turn_is_the_newest_overall_and_per_session(
    make_assistant: Any, tmp_path: Path
) -> None:
    model = ScriptedModel([text("one"), text("two"), text("three")])
    assistant = make_assistant(tools=[], model=model, home=tmp_path / "home")
    first = assistant.ask("1", session="a").turn_id
    second = assistant.ask("2", session="a").turn_id
    third = assistant.ask("3", session="b").turn_id
    assert first != second
    assert assistant.traces.last_turn_id() == third
    assert assistant.traces.last_turn_id("a") == second
    assert assistant.traces.last_turn_id("nobody") is None


def test_before_a_request_to_a_remote_model_the_turn_is_on_disk(
    make_assistant: Any, tmp_path: Path
) -> None:
    """A network request hides a commit: nothing before it is left to the flusher."""
    home = tmp_path / "home"
    seen: dict[str, Any] = {}

    @tool
    def lookup(word: str) -> dict[str, str]:
        """Look a word up. Call it for definitions."""
        return {"word": word}

    def first(messages: Any, tools: Any) -> Any:
        seen["first request"] = _on_disk(home, "s")
        return calls(("lookup", {"word": "x"}))

    def second(messages: Any, tools: Any) -> Any:
        seen["second request"] = _on_disk(home, "s")
        return text("Found it.")

    model = ScriptedModel([first, second])
    model.remote = True  # type: ignore[attr-defined]
    assistant = make_assistant(tools=[lookup], model=model, home=home)
    assistant.settings.memory.unsaved_ms = 60_000  # the flusher would never come in time
    assert assistant.ask("define x", session="s").answer == "Found it."
    assert seen["first request"] == [("user", None)]
    assert [role for role, _ in seen["second request"]] == ["user", "assistant", "tool"]
