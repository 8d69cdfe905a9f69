"""A learned second look at recall's order: does a newer recalled row answer in place of
the top one? (issue 15, "current value first, even when a supersede was missed")

When the store missed an update, the old value and the new one are both active, and the
question often finds the old wording first ("I'm on keyboards in the band" above "our
bassist left, so I've picked up the bass"). Recall's rules (`memory.conclusions._ordered`)
move a newer row up only on strong evidence of one subject. This judge reads the top row
and each newer row among the hits with the question: the pair's signals as the pair judge
reads them (`memory.pairjudge`: the rules' verdicts, shared topic and values, whose facts
they are, the change and correction cues), how the two scored against the question, and
how near they are to each other. Gradient-boosted trees trained offline on the recall
lists of the scenario files (`bench/train_order_judge.py`) ship as `order_judge.json` and
are walked here in plain Python. They learn from each step's own question and from one
asked later in the run: a judge trained on the steps' own alone, asked right after their
statement, learned that the newest row answers, and moved other facts' newer rows above
the answer when asked later (docs/BENCHMARKS.md, issue 15 sessions 19 and 20).

It only reorders what recall already found: nothing is linked, replaced or dropped, so a
wrong call costs one answer's place, never a fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.pairjudge import PAIR_NAMES, TEXT_NAMES, Boosted, pair_features, text_features
from memory.reconcile import owners, topic_words
from memory.sameness import stated_as_anothers

WEIGHTS = Path(__file__).with_name("order_judge.json")


@dataclass(frozen=True)
class Recalled:
    """One recalled row as the judge reads it: its text, its fused score and its
    similarity to the question (None when only the full-text ranking found it)."""

    text: str
    score: float
    similarity: float | None


_QUERY_NAMES = (
    "rank",
    "score_gap",
    "score_ratio",
    "similarity_top",
    "similarity_newer",
    "similarity_gap",
    "mutual",
    "topic_top",
    "topic_newer",
    "owners_top",
    "owners_newer",
)
FEATURES = (*_QUERY_NAMES, *TEXT_NAMES, *PAIR_NAMES)


def order_features(
    query: str, top: Recalled, newer: Recalled, rank: int, mutual: float
) -> list[float]:
    """One row of `FEATURES`: the newer row (at `rank`, 1 for the second place) against
    the top row, for `query`; `mutual` is the two rows' passage similarity.

    Which of the rows is the newest is left out on purpose: the scenario steps ask about
    the fact just said, so there the newest row is the answer, and a judge trained with
    it (session 19) turned 175 steps right but lost 33 of 770 answers asked at the end of
    the runs, when the newest row is just the last thing said (docs/BENCHMARKS.md)."""
    asked = topic_words(query)
    whose = owners(query)
    sim_top, sim_newer = top.similarity or 0.0, newer.similarity or 0.0
    place = (
        float(min(rank, 4)),
        max(-1.0, min(3.0, top.score - newer.score)),
        newer.score / top.score if top.score > 0 else 1.0,
        sim_top,
        sim_newer,
        sim_newer - sim_top,
        mutual,
        float(min(len(asked & topic_words(top.text)), 3)),
        float(min(len(asked & topic_words(newer.text)), 3)),
        float(owners(top.text) == whose),
        float(owners(newer.text) == whose),
    )
    pair = pair_features(top.text, newer.text, round(mutual, 4))
    return [*place, *text_features(newer.text), *pair]


@dataclass(frozen=True)
class OrderJudge(Boosted):
    """The order judge's trees over `FEATURES`; a newer row goes first at `threshold` or
    more."""

    threshold: float

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> OrderJudge | None:
        """The shipped judge, or None when its file is missing, unreadable or made for
        other features (recall's rules then order alone)."""
        args = cls.read(path, FEATURES, "threshold")
        return None if args is None else cls(**args)

    def first(
        self, query: str, hits: Sequence[Recalled], newer: Sequence[int], mutual: Sequence[float]
    ) -> tuple[int, float] | None:
        """Which of the rows `newer` (indexes into `hits`, each newer than `hits[0]`, with
        its similarity to it in `mutual`) answers `query` in place of the top row, with
        the judge's probability: the likeliest at `threshold` or more, else None. A row
        stated as another person's ("My sister's vet is …") never goes above one that is
        not, for a question that names nobody (on the 44 files' recall lists, with a
        judge retrained there, it held back one wrong move and no right one)."""
        theirs = not owners(query) and not stated_as_anothers(hits[0].text)
        best: tuple[int, float] | None = None
        for i, near in zip(newer, mutual, strict=True):
            if theirs and stated_as_anothers(hits[i].text):
                continue
            p = self.probability(order_features(query, hits[0], hits[i], i, near))
            if p >= self.threshold and (best is None or p > best[1]):
                best = (i, p)
        return best
