"""Every bound of a turn (SPEC L7) ends it gracefully with its stop reason (L8).

When a bound trips the loop says why tools stopped, asks the model once more without
tools, and returns a typed outcome; a cancelled turn stops without that last request.
Whatever the stop, the stored session history pairs every tool call with one result.
"""

from __future__ import annotations

import itertools
import json
import threading
from typing import Any

import pytest
from fake_openai import assert_paired, calls, completion, delay

from assistant.app import Assistant
from assistant.outcome import StopReason
from assistant.testing import ScriptedModel, text
from assistant.testing import calls as scripted_calls
from tools.base import tool
from tools.calc import calc_evaluate

WRAP_UP = "Here is what I have so far."


def stored_history(assistant: Assistant, session: str) -> list[dict[str, Any]]:
    """The session as stored, checked raw (no load-time repair) and as loaded for the model."""
    raw = []
    for row in assistant.working.rows(session):
        message: dict[str, Any] = {"role": row["role"], "content": row["content"]}
        if row["tool_calls"]:
            message["tool_calls"] = json.loads(row["tool_calls"])
        if row["tool_call_id"]:
            message["tool_call_id"] = row["tool_call_id"]
        raw.append(message)
    assert_paired(raw)
    loaded = assistant.working.load(session)
    assert loaded == raw, "the stored history needed repair on load"
    return loaded


def runtime_notes(messages: list[dict[str, Any]]) -> list[str]:
    return [
        m["content"]
        for m in messages
        if m["role"] == "user" and (m.get("content") or "").startswith("[runtime note]")
    ]


@pytest.fixture
def never_set() -> Any:
    event = threading.Event()
    yield event
    event.set()


def test_max_requests_stops_a_model_that_always_calls_tools(fake_openai, make_assistant):
    numbers = itertools.count(1)

    def keep_calling(request: dict[str, Any]) -> Any:
        if "tools" not in request:
            return completion(WRAP_UP)
        return calls(("calc_evaluate", {"expression": f"{next(numbers)}+1"}))

    fake_openai.script(*[keep_calling] * 20)
    assistant = make_assistant(tools=[calc_evaluate], max_requests=4)
    outcome = assistant.ask("keep adding")

    requests = fake_openai.requests
    assert len(requests) == 4
    assert all("tools" in r for r in requests[:-1])
    last = requests[-1]
    assert "tools" not in last
    [note] = runtime_notes(last["messages"])
    assert "4 model requests" in note
    assert_paired(last["messages"])
    assert outcome.stop_reason is StopReason.MAX_REQUESTS
    assert outcome.answer == WRAP_UP
    assert outcome.requests == 4
    history = stored_history(assistant, outcome.session)
    assert history[-1] == {"role": "assistant", "content": WRAP_UP}
    assert runtime_notes(history) == []


def test_max_tool_calls_runs_only_the_allowed_calls_and_answers_every_call(make_assistant):
    executed: list[int] = []

    @tool
    def item_fetch(n: int) -> dict[str, Any]:
        """Fetch one item. Call when the user asks for an item by number."""
        executed.append(n)
        return {"item": n}

    model = ScriptedModel(
        [scripted_calls(*[("item_fetch", {"n": n}) for n in range(1, 6)]), text(WRAP_UP)]
    )
    assistant = make_assistant(tools=[item_fetch], model=model, max_tool_calls=3)
    outcome = assistant.ask("fetch items 1 to 5")

    assert sorted(executed) == [1, 2, 3]
    assert [c.status for c in outcome.tool_calls] == ["ok", "ok", "ok", "NOT_RUN", "NOT_RUN"]
    wrap_up = model.requests[-1]
    assert wrap_up["tools"] is None
    assert_paired(wrap_up["messages"])
    answered = [m["tool_call_id"] for m in wrap_up["messages"] if m["role"] == "tool"]
    assert answered == [f"call_{n}" for n in range(1, 6)]
    refused = json.loads(wrap_up["messages"][-2]["content"])
    assert refused["error"] == "NOT_RUN"
    assert outcome.stop_reason is StopReason.MAX_TOOL_CALLS
    assert outcome.answer == WRAP_UP
    model.assert_complete()
    stored_history(assistant, outcome.session)


def test_the_same_call_a_third_time_stops_the_turn_as_repeated(make_assistant):
    spellings = ['{"expression": "1+1"}', '{ "expression" : "1+1" }', '{"expression":"1+1"}']
    model = ScriptedModel(
        [scripted_calls(("calc_evaluate", raw), prefix=f"r{n}") for n, raw in enumerate(spellings)]
        + [text(WRAP_UP)]
    )
    assistant = make_assistant(tools=[calc_evaluate], model=model, max_identical_calls=2)
    outcome = assistant.ask("1+1, again and again")

    assert [c.status for c in outcome.tool_calls] == ["ok", "ok", "REPEATED_CALL"]
    assert outcome.stop_reason is StopReason.REPEATED_CALL
    assert outcome.answer == WRAP_UP
    assert len(model.requests) == 4
    assert model.requests[-1]["tools"] is None
    assert runtime_notes(model.requests[-1]["messages"])
    stored_history(assistant, outcome.session)


def test_a_tool_failing_twice_in_a_row_stops_the_turn(make_assistant):
    attempts: list[str] = []

    @tool
    def feed_read(url: str) -> dict[str, Any]:
        """Read a feed. Call when the user asks what is new on a feed."""
        attempts.append(url)
        raise ConnectionError("feed server unreachable")

    model = ScriptedModel(
        [
            scripted_calls(("feed_read", {"url": "a"}), prefix="a"),
            scripted_calls(("feed_read", {"url": "b"}), prefix="b"),
            text(WRAP_UP),
        ]
    )
    assistant = make_assistant(tools=[feed_read], model=model, max_tool_failures=2)
    outcome = assistant.ask("what is new?")

    assert attempts == ["a", "b"]
    assert outcome.stop_reason is StopReason.TOOL_FAILURES
    assert outcome.answer == WRAP_UP
    assert model.requests[-1]["tools"] is None
    [note] = runtime_notes(model.requests[-1]["messages"])
    assert "failed 2 times" in note
    model.assert_complete()
    stored_history(assistant, outcome.session)


def test_a_turn_past_its_time_budget_stops_with_timeout(make_assistant, never_set):
    @tool
    def archive_scan(folder: str) -> dict[str, Any]:
        """Scan an archive folder. Call when the user asks what an archive holds."""
        never_set.wait()
        return {"files": 0}

    model = ScriptedModel([scripted_calls(("archive_scan", {"folder": "old"})), text(WRAP_UP)])
    assistant = make_assistant(tools=[archive_scan], model=model, turn_timeout_s=0.5)
    outcome = assistant.ask("scan the old archive")

    assert outcome.stop_reason is StopReason.TIMEOUT
    assert outcome.tool_calls[0].status in {"TIMEOUT", "NOT_RUN"}
    assert outcome.answer == WRAP_UP
    assert len(model.requests) == 2
    assert model.requests[-1]["tools"] is None
    stored_history(assistant, outcome.session)


def test_a_cancelled_turn_stops_without_a_wrap_up_request(make_assistant):
    cancel = threading.Event()

    @tool
    def task_stop(reason: str) -> dict[str, Any]:
        """Stop the current task. Call when the user says stop."""
        cancel.set()
        return {"stopping": reason}

    model = ScriptedModel([scripted_calls(("task_stop", {"reason": "user asked"}))])
    assistant = make_assistant(tools=[task_stop], model=model)
    outcome = assistant.ask("stop", cancel=cancel)

    assert outcome.stop_reason is StopReason.CANCELLED
    assert len(model.requests) == 1
    assert "cancelled" in outcome.answer
    assert [c.status for c in outcome.tool_calls] == ["ok"]
    stored_history(assistant, outcome.session)


def test_a_turn_cancelled_before_it_starts_sends_no_request(make_assistant):
    cancel = threading.Event()
    cancel.set()
    model = ScriptedModel([])
    assistant = make_assistant(model=model)
    outcome = assistant.ask("anything", cancel=cancel)

    assert outcome.stop_reason is StopReason.CANCELLED
    assert model.requests == []
    stored_history(assistant, outcome.session)


def test_a_call_cut_off_by_the_turn_budget_is_not_reported_as_its_own_timeout(
    make_assistant, never_set
):
    @tool
    def archive_scan(folder: str) -> dict[str, Any]:
        """Scan an archive folder. Call when the user asks what an archive holds."""
        never_set.wait()
        return {"files": 0}

    model = ScriptedModel([scripted_calls(("archive_scan", {"folder": "old"})), text(WRAP_UP)])
    assistant = make_assistant(
        tools=[archive_scan], model=model, turn_timeout_s=0.5, tool_timeout_s=20
    )
    outcome = assistant.ask("scan the old archive")

    detail = outcome.tool_calls[0].result["detail"]
    assert "20 s" not in detail, detail


def test_no_request_is_retried_once_the_turn_budget_is_spent(fake_openai, make_assistant):
    fake_openai.script(*[delay(3, completion("too late")) for _ in range(3)])
    assistant = make_assistant(max_retries=1, turn_timeout_s=0.5)
    outcome = assistant.ask("hi")

    assert outcome.stop_reason in {StopReason.TIMEOUT, StopReason.MODEL_ERROR}
    assert len(fake_openai.requests) == 1
