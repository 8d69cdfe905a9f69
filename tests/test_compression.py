"""Session summary tier (SPEC M2, M3, M9): units, cuts, cumulative summaries, failures."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memory.compression import (
    SUMMARY_HEADER,
    SUMMARY_PREFIX,
    CompressionPolicy,
    SessionCompressor,
    extractive_summary,
    render_history,
    shorten,
    split_turns,
    split_units,
    summary_message,
    trim_summary,
)
from memory.db import Database
from memory.redact import Redactor
from memory.tokens import estimate_message_tokens, estimate_tokens
from memory.working import WorkingMemory, repair

Message = dict[str, Any]


@pytest.fixture
def database(tmp_path) -> Iterator[Database]:
    db = Database(tmp_path / "assistant.db")
    yield db
    db.close()


@pytest.fixture
def working(database: Database) -> WorkingMemory:
    return WorkingMemory(database)


class Recorder:
    """A summariser that remembers what it was given and answers extractively."""

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, list[Message]]] = []

    def __call__(self, previous: str | None, messages: list[Message]) -> str:
        self.calls.append((previous, messages))
        return extractive_summary(previous, messages)


def call(call_id: str, expression: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "calc_evaluate", "arguments": json.dumps({"expression": expression})},
    }


def calls_message(*calls: dict[str, Any]) -> Message:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


def result(call_id: str, expression: str, value: int) -> Message:
    payload = {"expression": expression, "value": value}
    return {"role": "tool", "tool_call_id": call_id, "content": json.dumps(payload)}


def run_turn(
    database: Database,
    working: WorkingMemory,
    session: str,
    user_text: str,
    *batches: Sequence[Message],
) -> None:
    """Store a turn the way the product does: the user's message with the session
    counter, then each batch (a tool_calls message, its results, the answer) in one go."""
    turn_id = f"turn_{uuid.uuid4().hex[:8]}"
    user = {"role": "user", "content": user_text}
    database.write_many(working.start_turn_statements(session, turn_id, user))
    for batch in batches:
        working.append(session, turn_id, batch)


def simple_turn(db: Database, working: WorkingMemory, session: str, n: int) -> None:
    run_turn(
        db,
        working,
        session,
        f"question {n}: what is {n}+1?",
        [calls_message(call(f"c{n}", f"{n}+1"))],
        [result(f"c{n}", f"{n}+1", n + 1)],
        [{"role": "assistant", "content": f"{n}+1 is {n + 1}."}],
    )


def parallel_turn(db: Database, working: WorkingMemory, session: str, n: int) -> None:
    """A turn that ends right after three parallel calls and their results (no answer)."""
    ids = [f"p{n}a", f"p{n}b", f"p{n}c"]
    exprs = ["1+1", "2+2", "3+3"]
    run_turn(
        db,
        working,
        session,
        f"question {n}: three sums at once",
        [calls_message(*(call(i, e) for i, e in zip(ids, exprs, strict=True)))],
        [result(i, e, int(e[0]) * 2) for i, e in zip(ids, exprs, strict=True)],
    )


def assert_well_paired(messages: Sequence[Message]) -> None:
    """Every tool result follows its call, every call has exactly one result."""
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, f"orphan result {message}"
            open_calls.remove(message["tool_call_id"])
            continue
        assert not open_calls, f"calls without results: {open_calls}"
        open_calls.extend(c["id"] for c in message.get("tool_calls") or ())
    assert not open_calls, f"calls without results: {open_calls}"


def user_turns(messages: Sequence[Message]) -> int:
    return sum(1 for m in messages if m["role"] == "user")


# -- units ------------------------------------------------------------------------------


def test_units_keep_parallel_calls_with_all_their_results(database, working) -> None:
    simple_turn(database, working, "s", 1)
    parallel_turn(database, working, "s", 2)
    units = split_units(working.rows("s"))
    assert [u.kind for u in units] == [
        "user",
        "tool_calls",
        "answer",
        "user",
        "tool_calls",
    ]
    parallel = units[-1]
    assert [row["role"] for row in parallel.rows] == ["assistant", "tool", "tool", "tool"]
    assert parallel.call_ids == parallel.result_ids == ["p2a", "p2b", "p2c"]
    turns = split_turns(units)
    assert len(turns) == 2
    assert [u.kind for u in turns[1]] == ["user", "tool_calls"]
    assert sum(len(u.rows) for u in units) == len(working.rows("s"))


def test_orphan_result_is_its_own_unit_and_never_joins_a_user_message() -> None:
    rows = [
        {"id": 1, "role": "user", "content": "hi", "tool_calls": None, "tool_call_id": None},
        {"id": 2, "role": "tool", "content": "{}", "tool_calls": None, "tool_call_id": "x"},
        {"id": 3, "role": "assistant", "content": "hello", "tool_calls": None,
         "tool_call_id": None},
    ]  # fmt: skip
    assert [u.kind for u in split_units(rows)] == ["user", "orphan", "answer"]


# -- compression --------------------------------------------------------------------------


def twenty_turns(database, working, session: str = "s") -> None:
    """Turn 16 (the last folded one) ends with three parallel calls; turn 18 has some too."""
    for n in range(1, 21):
        if n in (16, 18):
            parallel_turn(database, working, session, n)
        else:
            simple_turn(database, working, session, n)


def test_compressing_twenty_turns_cuts_between_whole_units(database, working) -> None:
    twenty_turns(database, working)
    summarise = Recorder()
    compressor = SessionCompressor(database, working, summarise, CompressionPolicy())
    all_ids = [row["id"] for row in working.rows("s")]

    outcome = compressor.maybe_compress("s")

    assert outcome is not None and not outcome.failed
    assert outcome.trigger == "turns" and outcome.kept_turns == 4
    context = compressor.context("s")
    assert context.summary == outcome.summary
    assert_well_paired(context.messages)
    assert user_turns(context.messages) == 4
    assert context.messages[0] == {"role": "user", "content": "question 17: what is 17+1?"}
    # the folded span ends with the complete parallel unit of turn 16
    (previous, folded) = summarise.calls[0]
    assert previous is None
    assert_well_paired(folded)
    assert [m["tool_call_id"] for m in folded[-3:]] == ["p16a", "p16b", "p16c"]
    assert user_turns(folded) == 16
    assert outcome.kept_messages == len(context.messages)
    assert outcome.tokens_after < outcome.tokens_before
    # the summary records what it covers; raw rows are all still there
    latest = compressor.latest("s")
    assert latest is not None
    assert latest.covers_message_ids == outcome.folded_message_ids
    assert latest.last_message_id == max(outcome.folded_message_ids)
    assert latest.summariser == "Recorder"
    assert latest.tokens > 0
    kept_ids = [i for i in all_ids if i > latest.last_message_id]
    assert sorted(outcome.folded_message_ids + kept_ids) == all_ids
    assert [row["id"] for row in working.rows("s")] == all_ids
    assert context.as_messages()[0] == summary_message(latest.text)


def test_context_without_summary_is_the_whole_repaired_session(database, working) -> None:
    simple_turn(database, working, "s", 1)
    run_turn(database, working, "s", "crashed turn", [calls_message(call("dangling", "1+1"))])
    compressor = SessionCompressor(database, working, Recorder())
    context = compressor.context("s")
    assert context.summary is None and context.summary_id is None
    assert context.messages == working.load("s")
    assert_well_paired(context.messages)
    assert "INTERRUPTED" in context.messages[-1]["content"]


def test_second_compression_is_cumulative(database, working) -> None:
    summarise = Recorder()
    compressor = SessionCompressor(database, working, summarise, CompressionPolicy())
    for n in range(1, 14):
        simple_turn(database, working, "s", n)
    first = compressor.maybe_compress("s")
    assert first is not None and not first.failed
    assert compressor.maybe_compress("s") is None  # 4 verbatim turns: nothing to do

    for n in range(14, 23):
        simple_turn(database, working, "s", n)
    second = compressor.maybe_compress("s")

    assert second is not None and not second.failed
    assert summarise.calls[1][0] == first.summary  # the previous summary was passed on
    assert set(first.folded_message_ids).isdisjoint(second.folded_message_ids)
    latest = compressor.latest("s")
    assert latest is not None and latest.id == second.summary_id
    assert latest.covers_message_ids == sorted(first.folded_message_ids + second.folded_message_ids)
    assert "question 1:" in latest.text and "question 18:" in latest.text
    assert len(compressor.history("s")) == 2
    context = compressor.context("s")
    assert user_turns(context.messages) == 4
    assert context.messages[0]["content"].startswith("question 19:")
    assert len(working.rows("s")) == 22 * 4


@pytest.mark.parametrize(
    "summarise",
    [
        pytest.param(lambda previous, messages: (_ for _ in ()).throw(RuntimeError("boom")),
                     id="raises"),
        pytest.param(lambda previous, messages: "  \n ", id="empty"),
    ],
)  # fmt: skip
def test_failing_summariser_keeps_history_and_stores_nothing(
    database, working, caplog, summarise
) -> None:
    for n in range(1, 15):
        simple_turn(database, working, "s", n)
    before = working.load("s")
    compressor = SessionCompressor(database, working, summarise, CompressionPolicy())

    with caplog.at_level(logging.WARNING, logger="memory.compression"):
        outcome = compressor.maybe_compress("s")

    assert outcome is not None and outcome.failed
    assert outcome.error and outcome.summary is None and outcome.summary_id is None
    assert outcome.tokens_after == outcome.tokens_before
    assert compressor.latest("s") is None
    sent = compressor.context("s").messages
    assert_well_paired(sent)
    # nothing was dropped: every request and answer still reaches the model, the
    # recent turns verbatim (older ones may be masked, which is not summarising)
    assert [m for m in sent if m["role"] in ("user", "assistant") and m["content"]] == [
        m for m in before if m["role"] in ("user", "assistant") and m["content"]
    ]
    assert sent[-16:] == before[-16:]
    assert len(working.rows("s")) == 14 * 4
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("session s" in w and ("boom" in w or "no text" in w) for w in warnings)


def test_failure_after_a_summary_keeps_the_previous_summary(database, working) -> None:
    state = {"fail": False}

    def summarise(previous: str | None, messages: list[Message]) -> str:
        if state["fail"]:
            raise TimeoutError("model timed out")
        return extractive_summary(previous, messages)

    compressor = SessionCompressor(database, working, summarise, CompressionPolicy())
    for n in range(1, 14):
        simple_turn(database, working, "s", n)
    first = compressor.maybe_compress("s")
    assert first is not None and not first.failed
    for n in range(14, 23):
        simple_turn(database, working, "s", n)
    state["fail"] = True
    second = compressor.maybe_compress("s")
    assert second is not None and second.failed and "timed out" in (second.error or "")
    latest = compressor.latest("s")
    assert latest is not None and latest.id == first.summary_id
    assert user_turns(compressor.context("s").messages) == 13


def test_token_budget_triggers_with_few_turns(database, working) -> None:
    policy = CompressionPolicy(compress_after_turns=12, keep_turns=4, token_budget=400)
    compressor = SessionCompressor(database, working, Recorder(), policy)
    for n in range(1, 6):
        run_turn(
            database,
            working,
            "s",
            f"request {n}: " + "please summarise this long paragraph " * 12,
            [{"role": "assistant", "content": "a long answer " * 20}],
        )

    outcome = compressor.maybe_compress("s")

    assert outcome is not None and not outcome.failed
    assert outcome.trigger == "tokens"
    assert outcome.tokens_before > 400
    context = compressor.context("s")
    assert 1 <= user_turns(context.messages) < 4  # the budget shrank what stays verbatim
    assert user_turns(context.messages) == outcome.kept_turns
    assert outcome.tokens_after < outcome.tokens_before


def test_token_budget_keeps_keep_turns_when_they_fit(database, working) -> None:
    policy = CompressionPolicy(keep_turns=2, token_budget=300)
    compressor = SessionCompressor(database, working, Recorder(), policy)
    big = json.dumps({"expression": "1+1", "value": 2, "notes": "x" * 2000})
    run_turn(
        database,
        working,
        "s",
        "big one",
        [calls_message(call("big", "1+1"))],
        [{"role": "tool", "tool_call_id": "big", "content": big}],
    )
    for n in range(2, 5):
        simple_turn(database, working, "s", n)
    outcome = compressor.maybe_compress("s")
    assert outcome is not None and outcome.trigger == "tokens"
    assert outcome.kept_turns == 2
    assert user_turns(compressor.context("s").messages) == 2


def test_below_threshold_or_disabled_is_not_compressed(database, working) -> None:
    for n in range(1, 13):
        simple_turn(database, working, "s", n)
    summarise = Recorder()
    compressor = SessionCompressor(database, working, summarise, CompressionPolicy())
    assert compressor.maybe_compress("s") is None
    assert compressor.maybe_compress("no-such-session") is None
    simple_turn(database, working, "s", 13)
    disabled = SessionCompressor(database, working, summarise, CompressionPolicy(enabled=False))
    assert disabled.maybe_compress("s") is None
    assert summarise.calls == []
    assert compressor.latest("s") is None
    assert user_turns(compressor.context("s").messages) == 13


def test_on_folded_gets_the_folded_messages_with_their_ids(database, working) -> None:
    seen: list[tuple[str, list[Message]]] = []
    compressor = SessionCompressor(
        database,
        working,
        Recorder(),
        CompressionPolicy(),
        on_folded=lambda session, messages: seen.append((session, messages)),
    )
    for n in range(1, 14):
        simple_turn(database, working, "s", n)
    outcome = compressor.maybe_compress("s")
    assert outcome is not None
    assert len(seen) == 1 and seen[0][0] == "s"
    assert [m["id"] for m in seen[0][1]] == outcome.folded_message_ids


def test_on_folded_failure_does_not_undo_the_summary(database, working, caplog) -> None:
    def explode(session: str, messages: list[Message]) -> None:
        raise ValueError("extractor broke")

    compressor = SessionCompressor(
        database, working, Recorder(), CompressionPolicy(), on_folded=explode
    )
    for n in range(1, 14):
        simple_turn(database, working, "s", n)
    with caplog.at_level(logging.WARNING, logger="memory.compression"):
        outcome = compressor.maybe_compress("s")
    assert outcome is not None and not outcome.failed
    assert outcome.callback_error and "extractor broke" in outcome.callback_error
    assert compressor.latest("s") is not None
    assert any("extractor broke" in r.getMessage() for r in caplog.records)


def test_sessions_are_independent(database, working) -> None:
    compressor = SessionCompressor(database, working, Recorder(), CompressionPolicy())
    for n in range(1, 14):
        simple_turn(database, working, "a", n)
        simple_turn(database, working, "b", n)
    assert compressor.maybe_compress("a") is not None
    assert compressor.latest("b") is None
    assert user_turns(compressor.context("b").messages) == 13
    assert user_turns(compressor.context("a").messages) == 4


def test_redactor_masks_the_stored_summary(database, working) -> None:
    compressor = SessionCompressor(
        database, working, Recorder(), CompressionPolicy(), redactor=Redactor()
    )
    run_turn(database, working, "s", "my email is someone@example.com, note it")
    for n in range(2, 15):
        simple_turn(database, working, "s", n)
    compressor.maybe_compress("s")
    latest = compressor.latest("s")
    assert latest is not None
    assert "someone@example.com" not in latest.text and "[REDACTED:email]" in latest.text


def test_summaries_survive_reopening_the_file(tmp_path) -> None:
    path = tmp_path / "assistant.db"
    database = Database(path)
    working = WorkingMemory(database)
    for n in range(1, 14):
        simple_turn(database, working, "s", n)
    outcome = SessionCompressor(database, working, Recorder()).maybe_compress("s")
    database.close()

    reopened = Database(path)
    try:
        compressor = SessionCompressor(reopened, WorkingMemory(reopened), Recorder())
        latest = compressor.latest("s")
        assert latest is not None and outcome is not None
        assert latest.text == outcome.summary
        assert user_turns(compressor.context("s").messages) == 4
    finally:
        reopened.close()


# -- masking older turns, a bounded summary -----------------------------------------------


def report_json(n: int) -> str:
    """A long tool result (about 1,500 characters) whose key numbers come first."""
    rows = [
        {"sku": f"item-{n}-{i}", "stock": (n * 7 + i) % 40, "bin": f"B{i:02d}"} for i in range(30)
    ]
    return json.dumps({"warehouse": f"W{n}", "total_stock": 1000 + n, "rows": rows})


def heavy_turn(db: Database, working: WorkingMemory, session: str, n: int, text: str = "") -> None:
    """A tool-heavy turn: a long report and a short sum in parallel, then the answer."""
    report = {
        "id": f"r{n}",
        "type": "function",
        "function": {"name": "inventory_report", "arguments": json.dumps({"warehouse": f"W{n}"})},
    }
    run_turn(
        db,
        working,
        session,
        text or f"request {n}: stock in warehouse W{n}, and {n}+1?",
        [calls_message(report, call(f"c{n}", f"{n}+1"))],
        [
            {"role": "tool", "tool_call_id": f"r{n}", "content": report_json(n)},
            result(f"c{n}", f"{n}+1", n + 1),
        ],
        [{"role": "assistant", "content": f"W{n} holds {1000 + n} items; {n}+1 is {n + 1}."}],
    )


def test_old_tool_results_are_sent_as_stubs_and_pairs_stay_whole(database, working) -> None:
    compressor = SessionCompressor(
        database, working, Recorder(), CompressionPolicy(older_turns_tokens=100_000)
    )
    for n in range(1, 9):
        heavy_turn(database, working, "s", n)

    context = compressor.context("s")

    sent = context.messages
    assert_well_paired(sent)
    assert user_turns(sent) == 8 and context.elided_results == 4
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    for n in range(5, 9):  # the last four turns: verbatim
        assert results[f"r{n}"] == report_json(n)
    for n in range(1, 5):
        stub = json.loads(results[f"r{n}"])
        assert stub["elided"] is True and stub["tool"] == "inventory_report"
        assert stub["chars"] == len(report_json(n))
        assert len(stub["preview"]) <= 200
        assert report_json(n).startswith(stub["preview"].rstrip("…"))
        assert f'"total_stock": {1000 + n}' in stub["preview"]
        assert results[f"c{n}"] == json.dumps({"expression": f"{n}+1", "value": n + 1})
    # the raw results stay in the store
    stored = {
        row["tool_call_id"]: row["content"] for row in working.rows("s") if row["tool_call_id"]
    }
    assert all(stored[f"r{n}"] == report_json(n) for n in range(1, 9))
    assert estimate_message_tokens(sent) < 0.7 * estimate_message_tokens(working.load("s"))


def test_older_turns_past_their_budget_go_as_request_and_answer(database, working) -> None:
    policy = CompressionPolicy()
    for n in range(1, 13):
        heavy_turn(database, working, "s", n)
    compressor = SessionCompressor(database, working, Recorder(), policy)
    assert compressor.maybe_compress("s") is None  # 12 turns: not yet folded

    rendered = render_history(working.load("s"), policy)

    sent = rendered.messages
    assert_well_paired(sent)
    assert rendered.collapsed_turns >= 1 and rendered.older_tokens > 0
    # every request and answer is still there, in order
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        f"request {n}: stock in warehouse W{n}, and {n}+1?" for n in range(1, 13)
    ]
    answers = [m["content"] for m in sent if m["role"] == "assistant" and m["content"]]
    assert answers == [f"W{n} holds {1000 + n} items; {n}+1 is {n + 1}." for n in range(1, 13)]
    # the oldest turn went without its tool round; the newest four with theirs, raw
    assert sent[:2] == [
        {"role": "user", "content": "request 1: stock in warehouse W1, and 1+1?"},
        {"role": "assistant", "content": "W1 holds 1001 items; 1+1 is 2."},
    ]
    called = {c["id"] for m in sent for c in m.get("tool_calls") or ()}
    assert "r1" not in called and {"r9", "r10", "r11", "r12"} <= called
    assert context_tokens(sent[:-20]) < context_tokens(working.load("s")[:-20]) / 3


_PIECES = st.lists(
    st.one_of(
        st.just(("user",)),
        st.just(("answer",)),
        st.tuples(st.just("calls"), st.integers(1, 3), st.integers(0, 3), st.booleans()),
        st.just(("orphan",)),
    ),
    max_size=40,
)


def _session_from(pieces: Sequence[tuple[Any, ...]]) -> list[Message]:
    """Messages as a crash-prone store may hold them: parallel calls with some results
    missing, results with no call, long and short results, text alongside calls."""
    messages: list[Message] = []
    for n, piece in enumerate(pieces):
        if piece[0] == "user":
            messages.append({"role": "user", "content": f"request {n}"})
        elif piece[0] == "answer":
            messages.append({"role": "assistant", "content": f"answer {n}"})
        elif piece[0] == "orphan":
            messages.append({"role": "tool", "tool_call_id": f"gone{n}", "content": "x" * 900})
        else:
            _, count, results, says = piece
            ids = [f"k{n}_{i}" for i in range(count)]
            message = calls_message(*(call(i, "1+1") for i in ids))
            if says:
                message["content"] = "let me look"
            messages.append(message)
            for i in ids[:results]:
                content = report_json(n) if n % 2 else json.dumps({"value": n})
                messages.append({"role": "tool", "tool_call_id": i, "content": content})
    return messages


@settings(max_examples=300, deadline=None)
@given(
    pieces=_PIECES,
    mask_after=st.integers(1, 5),
    budget=st.sampled_from([0, 150, 400, 100_000]),
)
def test_masking_never_orphans_a_call_or_a_result(
    pieces: list[tuple[Any, ...]], mask_after: int, budget: int
) -> None:
    repaired, _ = repair(_session_from(pieces))
    policy = CompressionPolicy(mask_after_turns=mask_after, older_turns_tokens=budget)

    sent = render_history(repaired, policy).messages

    assert_well_paired(sent)
    assert [m for m in sent if m["role"] == "user"] == [m for m in repaired if m["role"] == "user"]
    assert estimate_message_tokens(sent) <= estimate_message_tokens(repaired)


def context_tokens(messages: Sequence[Message]) -> int:
    return estimate_message_tokens(messages)


def prompt_sizes(policy: CompressionPolicy, database, working, turns: int) -> list[int]:
    """Tokens of what each turn starts from (summary plus unfolded history, as sent),
    folding after each turn as the assistant does."""
    compressor = SessionCompressor(database, working, Recorder(), policy)
    sizes = []
    for n in range(1, turns + 1):
        sizes.append(estimate_message_tokens(compressor.context("s").as_messages()))
        heavy_turn(database, working, "s", n)
        outcome = compressor.maybe_compress("s")
        assert outcome is None or not outcome.failed
    return sizes


def test_the_prompt_stays_flat_between_folds_whatever_the_phase(tmp_path) -> None:
    """From turn 20 on, no turn's prompt is more than 1.3x another's; without masking
    it swings by whole tool-heavy turns between folds."""
    results = {}
    for name, policy in {
        "masked": CompressionPolicy(),
        "unmasked": CompressionPolicy(mask_after_turns=12, older_turns_tokens=100_000),
    }.items():
        database = Database(tmp_path / f"{name}.db")
        try:
            sizes = prompt_sizes(policy, database, WorkingMemory(database), 60)[19:]
        finally:
            database.close()
        results[name] = max(sizes) / min(sizes)
    assert results["masked"] <= 1.3, results
    assert results["unmasked"] > 1.3, results


def long_summary(previous: str | None, messages: list[Message]) -> str:
    """A summariser that ignores any length limit."""
    return "\n".join(f"- fact {i}: the user said something worth keeping" for i in range(400))


def _fold_with_cap(database, working, shrink):
    """13 turns folded by a summariser that ignores the 100-token cap."""
    compressor = SessionCompressor(
        database, working, long_summary, CompressionPolicy(summary_max_tokens=100), shrink=shrink
    )
    for n in range(1, 14):
        simple_turn(database, working, "s", n)
    return compressor, compressor.maybe_compress("s")


def test_a_summary_over_its_cap_is_rewritten_by_the_summariser(database, working) -> None:
    asked: list[tuple[str, int]] = []

    def shrink(text: str, max_tokens: int) -> str:
        asked.append((text, max_tokens))
        return "- the user asked for sums; all were answered"

    compressor, outcome = _fold_with_cap(database, working, shrink)

    assert outcome is not None and not outcome.failed and outcome.shortened == "rewritten"
    assert asked == [(long_summary(None, []), 100)]
    latest = compressor.latest("s")
    assert latest is not None and latest.text == "- the user asked for sums; all were answered"


def _still_long(text: str, max_tokens: int) -> str:
    return text


def _broken(text: str, max_tokens: int) -> str:
    raise TimeoutError("model timed out")


@pytest.mark.parametrize("shrink", [None, _still_long, _broken], ids=["cut", "still-long", "fails"])
def test_a_summary_still_over_its_cap_is_cut_to_it_keeping_the_newest(
    database, working, shrink
) -> None:
    compressor, outcome = _fold_with_cap(database, working, shrink)

    assert outcome is not None and not outcome.failed and outcome.shortened == "trimmed"
    latest = compressor.latest("s")
    assert latest is not None and latest.tokens <= 100
    assert latest.text.endswith("- fact 399: the user said something worth keeping")
    assert "- fact 0:" not in latest.text


def test_offline_summaries_stay_under_the_cap_in_chinese(database, working) -> None:
    raw: list[int] = []

    def summarise(previous: str | None, messages: list[Message]) -> str:
        text = extractive_summary(previous, messages)
        raw.append(estimate_tokens(text))
        return text

    compressor = SessionCompressor(database, working, summarise, CompressionPolicy())
    sizes = []
    for n in range(1, 60):
        heavy_turn(
            database,
            working,
            "s",
            n,
            text=f"第{n}个请求：请查一下仓库W{n}的库存，" + "并且说明每个货架的情况" * 6,
        )
        outcome = compressor.maybe_compress("s")
        if outcome is not None:
            assert not outcome.failed
            latest = compressor.latest("s")
            assert latest is not None
            sizes.append(latest.tokens)
    assert max(raw) > 500, "the cap never bit: this test needs longer requests"
    assert len(sizes) >= 5 and max(sizes) <= 500
    latest = compressor.latest("s")
    assert latest is not None and latest.text.startswith(SUMMARY_HEADER)
    covered = set(latest.covers_message_ids)
    newest = [r for r in working.rows("s") if r["id"] in covered and r["role"] == "user"][-1]
    assert "- user: " + shorten(newest["content"], 160) in latest.text  # newest kept
    assert "第1个请求" not in latest.text  # oldest dropped


def test_trim_summary_cuts_one_long_paragraph_from_its_end() -> None:
    paragraph = "The user planned a trip to Lisbon and asked about trains. " * 40
    cut = trim_summary(paragraph, 60)
    assert estimate_tokens(cut) <= 60
    assert cut.startswith("The user planned a trip to Lisbon") and cut.endswith("…")
    assert trim_summary("short", 60) == "short"


# -- the offline summariser ---------------------------------------------------------------


def conversation(user_text: str, expression: str, value: int, answer: str) -> list[Message]:
    return [
        {"role": "user", "content": user_text},
        calls_message(call("k1", expression)),
        result("k1", expression, value),
        {"role": "assistant", "content": answer},
    ]


def test_extractive_summary_keeps_requests_and_calc_values_in_english() -> None:
    text = extractive_summary(
        None, conversation("What is 15 plus 27?", "15+27", 42, "15 plus 27 is 42.")
    )
    lines = text.splitlines()
    assert lines[0] == SUMMARY_HEADER
    assert "- user: What is 15 plus 27?" in lines
    assert "- calc_evaluate: 15+27 = 42" in lines
    assert "- assistant: 15 plus 27 is 42." in lines
    assert "{" not in text  # no raw tool JSON


def test_extractive_summary_handles_chinese() -> None:
    question = "帮我算一下十五加二十七等于多少，然后记住这个结果" * 10
    text = extractive_summary(None, conversation(question, "15+27", 42, "结果是42。"))
    user_line = next(line for line in text.splitlines() if line.startswith("- user: "))
    assert user_line.startswith("- user: 帮我算一下十五加二十七")
    assert len(user_line) <= len("- user: ") + 160
    assert user_line.endswith("…")
    assert "- calc_evaluate: 15+27 = 42" in text
    assert "- assistant: 结果是42。" in text


def test_extractive_summary_merges_after_previous_and_caps_oldest_first() -> None:
    first = extractive_summary(None, conversation("first question", "1+1", 2, "two"))
    second = extractive_summary(first, conversation("second question", "2+2", 4, "four"))
    lines = second.splitlines()
    assert lines.count(SUMMARY_HEADER) == 1
    assert lines.index("- user: first question") < lines.index("- user: second question")

    running: str | None = None
    for n in range(60):
        running = extractive_summary(
            running, conversation(f"question number {n}", f"{n}*2", n * 2, f"it is {n * 2}")
        )
    assert running is not None and len(running) <= 2000
    assert running.splitlines()[0] == SUMMARY_HEADER
    assert "question number 59" in running and "question number 0\n" not in running
    assert "- calc_evaluate: 59*2 = 118" in running


def test_extractive_summary_is_deterministic_and_reports_tool_errors() -> None:
    messages = [
        {"role": "user", "content": "divide 1 by 0"},
        calls_message(call("e1", "1/0")),
        {
            "role": "tool",
            "tool_call_id": "e1",
            "content": json.dumps({"error": "DIVISION_BY_ZERO", "detail": "undefined"}),
        },
        {"role": "assistant", "content": "There is no result: division by zero."},
    ]
    assert extractive_summary(None, messages) == extractive_summary(None, messages)
    assert "- calc_evaluate: error DIVISION_BY_ZERO (undefined)" in extractive_summary(
        None, messages
    )


def test_shorten_cuts_latin_at_a_space_and_chinese_by_character() -> None:
    assert shorten("alpha beta gamma delta", 14) == "alpha beta…"
    assert shorten("一二三四五六七八九十", 5) == "一二三四…"
    assert shorten("  many   spaces\n here ", 100) == "many spaces here"


def test_summary_message_is_a_system_message() -> None:
    message = summary_message("Earlier in this session:\n- user: hi")
    assert message["role"] == "system"
    assert message["content"].startswith(SUMMARY_PREFIX)
    assert message["content"].endswith("- user: hi")


def test_policy_defaults_and_validation() -> None:
    policy = CompressionPolicy()
    assert (policy.compress_after_turns, policy.keep_turns, policy.token_budget) == (12, 4, 6000)
    assert policy.enabled
    with pytest.raises(ValueError):
        CompressionPolicy(keep_turns=0)
