"""Compression inside real turns (SPEC M2, M3): what reaches the model stays well formed.

The model is the fake chat-completions server behind the real openai SDK; every request
it received is checked for orphan tool results and calls without results.
"""

from __future__ import annotations

from typing import Any

from fake_openai import FakeOpenAI, assert_paired, calls, completion

from assistant.remembering import SUMMARY_PROMPT


def _brain(request: dict[str, Any]) -> Any:
    """Summarise when asked to; otherwise three parallel calls, then an answer."""
    messages = request["messages"]
    if messages[0]["content"] == SUMMARY_PROMPT:
        return completion("Summary: the user asked for sums; results were 3, 7 and 11.")
    if messages[-1]["role"] == "user":
        return calls(*[("calc_evaluate", {"expression": f"{n}+{n}"}) for n in (1, 2, 3)])
    return completion("The sums are 2, 4 and 6.")


def _compressing(make_assistant: Any, fake_openai: FakeOpenAI, turns: int) -> Any:
    fake_openai.script(*[_brain] * (turns * 3 + 10))
    assistant = make_assistant()
    assistant.memory.compressor.policy = assistant.memory.compressor.policy.model_copy(
        update={"max_user_turns": 3, "keep_turns": 1}
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
