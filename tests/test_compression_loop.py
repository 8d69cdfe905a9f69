"""Compression inside real turns (SPEC M2, M3): what reaches the model stays well formed.

The model is the fake chat-completions server behind the real openai SDK; every request
it received is checked for orphan tool results and calls without results.
"""

from __future__ import annotations

import json
import re
from typing import Any

from fake_openai import FakeOpenAI, assert_paired, calls, completion
from pydantic import Field

from assistant.remembering import EXTRACTION_PROMPT, SUMMARY_PROMPT
from tools.base import ToolArgs, tool


def _brain(request: dict[str, Any]) -> Any:
    """Summarise when asked to; otherwise three parallel calls, then an answer."""
    messages = request["messages"]
    if messages[0]["content"] == SUMMARY_PROMPT:
        return completion("Summary: the user asked for sums; results were 2, 4 and 6.")
    if messages[-1]["role"] == "user":
        return calls(*[("calc_evaluate", {"expression": f"{n}+{n}"}) for n in (1, 2, 3)])
    return completion("The sums are 2, 4 and 6.")


def _compressing(make_assistant: Any, fake_openai: FakeOpenAI, turns: int) -> Any:
    fake_openai.script(*[_brain] * (turns * 3 + 10))
    assistant = make_assistant()
    assistant.memory.compressor.policy = assistant.memory.compressor.policy.model_copy(
        update={"compress_after_turns": 3, "keep_turns": 1}
    )
    return assistant


def test_parallel_calls_at_the_cut_never_reach_the_model_orphaned(
    make_assistant: Any, fake_openai: FakeOpenAI
) -> None:
    assistant = _compressing(make_assistant, fake_openai, turns=8)
    for n in range(8):
        outcome = assistant.ask(f"add some numbers, round {n}", session="long")
        assert outcome.stop_reason.value == "final"
    for request in fake_openai.requests:
        assert_paired(request["messages"][1:])
    summaries = [r for r in fake_openai.requests if r["messages"][0]["content"] == SUMMARY_PROMPT]
    assert summaries, "the session passed the threshold but was never summarised"
    last = fake_openai.requests[-1]["messages"]
    assert "Summary of the earlier conversation" in last[0]["content"]
    user_turns = [m for m in last if m["role"] == "user"]
    assert len(user_turns) <= 4, "older turns were folded into the summary"
    rows = assistant.working.rows("long")
    assert sum(1 for row in rows if row["role"] == "user") == 8, "raw messages are kept"
    summary = assistant.memory.compressor.latest("long")
    assert summary is not None and summary.covers_message_ids
    assert set(summary.covers_message_ids) <= {row["id"] for row in rows}


def test_a_failing_summariser_keeps_the_history(
    make_assistant: Any, fake_openai: FakeOpenAI
) -> None:
    assistant = _compressing(make_assistant, fake_openai, turns=5)

    def broken(previous: str | None, messages: list[dict[str, Any]]) -> str:
        raise RuntimeError("summariser endpoint down")

    assistant.memory.compressor.summarise = broken
    for n in range(5):
        assistant.ask(f"add some numbers, round {n}", session="s")
    assert assistant.memory.compressor.latest("s") is None
    last = fake_openai.requests[-1]["messages"]
    assert "Summary of the earlier conversation" not in last[0]["content"]
    assert sum(1 for m in last if m["role"] == "user") == 5, "nothing was dropped"
    assert_paired(last[1:])


# -- masking and the bounded summary, through real turns -----------------------------------


class ReportArgs(ToolArgs):
    warehouse: str = Field(description="Warehouse code, e.g. 'W3'.")


@tool(version="1.0")
def inventory_report(args: ReportArgs) -> dict[str, Any]:
    """Stock per bin in one warehouse.

    Call this when the user asks what a warehouse holds; answer with total_stock.
    """
    n = int(args.warehouse.lstrip("W") or 0)
    rows = [
        {"sku": f"item-{n}-{i}", "stock": (n * 7 + i) % 40, "bin": f"B{i:02d}"} for i in range(30)
    ]
    return {"warehouse": args.warehouse, "total_stock": 1000 + n, "rows": rows}


def _warehouse_brain(request: dict[str, Any]) -> Any:
    """A report and a sum in parallel per turn, then an answer; summaries on request
    (long ones unless asked to shorten)."""
    messages = request["messages"]
    if messages[0]["content"] == SUMMARY_PROMPT:
        body = messages[1]["content"]
        if re.search(r"at most \d+ words", body):
            return completion("The user asked about warehouses W1 onwards; all were answered.")
        return completion(" ".join("Warehouse stock was reported once more." for _ in range(300)))
    if messages[0]["content"] == EXTRACTION_PROMPT:
        return completion('{"conclusions": []}')
    last = messages[-1]
    if last["role"] == "user":
        n = re.search(r"W(\d+)", last["content"] or "")
        assert n is not None, last
        return calls(
            ("inventory_report", {"warehouse": f"W{n.group(1)}"}),
            ("calc_evaluate", {"expression": f"{n.group(1)}+1"}),
        )
    return completion("Reported.")


def test_old_tool_results_reach_the_model_as_stubs_never_orphaned(
    make_assistant: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(*[_warehouse_brain] * 60)
    assistant = make_assistant()
    assistant.registry.register(inventory_report)
    for n in range(1, 10):
        outcome = assistant.ask(f"What does warehouse W{n} hold?", session="w")
        assert outcome.stop_reason.value == "final"
    for request in fake_openai.requests:
        assert_paired(request["messages"][1:])

    # the first request of turn 9: turns 5-8 verbatim, the older reports elided
    turns = [r for r in fake_openai.requests if r.get("tools")]
    last_turn = [r for r in turns if r["messages"][-1]["role"] == "user"][-1]
    sent = last_turn["messages"]
    calls_by_id = {c["id"]: c["function"]["name"] for m in sent for c in m.get("tool_calls") or ()}
    reports = [
        m
        for m in sent
        if m["role"] == "tool" and calls_by_id[m["tool_call_id"]] == "inventory_report"
    ]
    stubs = [json.loads(m["content"]) for m in reports if '"elided": true' in m["content"]]
    raw = [json.loads(m["content"]) for m in reports if '"elided": true' not in m["content"]]
    assert [r["warehouse"] for r in raw] == ["W5", "W6", "W7", "W8"]
    assert stubs and all(
        s["tool"] == "inventory_report" and len(s["preview"]) <= 200 for s in stubs
    )
    assert sum(1 for m in sent if m["role"] == "user") == 9  # nothing folded or dropped yet
    # the raw results stay in the store and in the traces
    elided_id = next(m["tool_call_id"] for m in reports if '"elided": true' in m["content"])
    stored = [r for r in assistant.working.rows("w") if r["tool_call_id"] == elided_id]
    assert len(stored) == 1 and json.loads(stored[0]["content"])["rows"]
    traced = assistant.database.query(
        "SELECT json_extract(c.value, '$.content') AS content FROM turns t, "
        "json_each(t.call_log) c WHERE json_extract(c.value, '$.call_id') = ?",
        [elided_id],
    )
    assert traced and json.loads(traced[0]["content"])["rows"]


def test_a_long_model_summary_is_shortened_by_the_model(
    make_assistant: Any, fake_openai: FakeOpenAI
) -> None:
    fake_openai.script(*[_warehouse_brain] * 80)
    assistant = make_assistant()
    assistant.registry.register(inventory_report)
    for n in range(1, 15):
        assistant.ask(f"What does warehouse W{n} hold?", session="w")
    shorten = [
        r
        for r in fake_openai.requests
        if r["messages"][0]["content"] == SUMMARY_PROMPT
        and "at most" in r["messages"][1]["content"]
    ]
    assert len(shorten) == 1 and "once more" in shorten[0]["messages"][1]["content"]
    latest = assistant.memory.compressor.latest("w")
    assert latest is not None
    assert latest.text == "The user asked about warehouses W1 onwards; all were answered."
    last = [r for r in fake_openai.requests if r.get("tools")][-1]["messages"]
    assert "Warehouse note" not in last[0]["content"] and "W1 onwards" in last[0]["content"]
    for request in fake_openai.requests:
        assert_paired(request["messages"][1:])
