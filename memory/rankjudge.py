"""A learned last look at recall's first place: does another of the top rows answer the
question better than the first one? (issue 15, "current value first")

Recall's rules and the order judge (`memory.orderjudge`) decide the first place from what
they recognise: one subject asked about, a missed update's newer row. Asked later, both
go wrong where a newer row only looks like the answer's update: "我婆婆也有高血压，不过她
吃的是硝苯地平" put above Dad's pill as its new value, for "我爸平时吃的是哪种降压药？"
(most of what this judge turns right is such a row; docs/BENCHMARKS.md, issue 15
session 50). This judge reads each of the top `DEPTH` rows beside the first one: its
place, how it scored and how near the question it came against the first row, how new
it is among them, and a few cheap signals the rules also read (the question's topic
words it shares, whose fact it is, whether it gives the time or sum asked for, a change
cue, its length). Gradient-boosted trees trained offline on the recall lists of the
scenario files (`bench/train_rank_judge.py`) give each row the probability that it holds
the answer; a row goes first where it is likelier than the first one by `margin` or
more. The trees ship as `rank_judge.json` and are walked here in plain Python.

Like the order judge, it only reorders what recall already found: nothing is linked,
replaced or dropped, so a wrong call costs one answer's place, never a fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from memory.orderjudge import Recalled
from memory.pairjudge import Boosted
from memory.reconcile import change_cue, owners, topic_words
from memory.sameness import asked_kind, gives
from memory.text import has_han

WEIGHTS = Path(__file__).with_name("rank_judge.json")
DEPTH = 5  # the rows it weighs: as many as its training lists held

_ROW_NAMES = ("score", "similarity", "topic", "owners", "gives", "change_cue", "length")
FEATURES = (
    "rank",
    "newer",
    "newer_rows",
    "asks_time",
    "asks_amount",
    "asks_han",
    *_ROW_NAMES,
    *(f"{name}_gap" for name in _ROW_NAMES),
)


@dataclass(frozen=True)
class Listed:
    """One recalled row as this judge reads it: the order judge's view of it and when it
    was stated."""

    hit: Recalled
    valid_from: float


def rank_features(query: str, rows: Sequence[Listed]) -> list[list[float]]:
    """One row of `FEATURES` per listed row: each against the first row, for `query`
    (the question's words and each row's own numbers are read once per list)."""
    kind = asked_kind(query)
    asked, whose = topic_words(query), owners(query)
    asks = (float(kind == "time"), float(kind == "amount"), float(has_han(query)))
    own = [
        (
            row.hit.score,
            row.hit.similarity or 0.0,
            float(len(asked & topic_words(row.hit.text))),
            float(owners(row.hit.text) == whose),
            float(kind is not None and gives(kind, row.hit.text)),
            float(bool(change_cue(row.hit.text))),
            float(len(row.hit.text)),
        )
        for row in rows
    ]
    out = []
    for i, (row, numbers) in enumerate(zip(rows, own, strict=True)):
        stated = row.valid_from
        out.append(
            [
                float(i),
                float(stated > rows[0].valid_from),
                float(sum(1 for other in rows if other.valid_from > stated)),
                *asks,
                *numbers,
                *(a - b for a, b in zip(numbers, own[0], strict=True)),
            ]
        )
    return out


@dataclass(frozen=True)
class RankJudge(Boosted):
    """The rank judge's trees over `FEATURES`; a row goes first when its probability is
    `margin` or more above the first row's."""

    margin: float

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> RankJudge | None:
        """The shipped judge, or None when its file is missing, unreadable or made for
        other features (recall's order then stands)."""
        args = cls.read(path, FEATURES, "margin")
        return None if args is None else cls(**args)

    def first(self, query: str, rows: Sequence[Listed]) -> tuple[int, float] | None:
        """Which of the first `DEPTH` rows (after the first) answers `query` in place of
        the first, with how much likelier it is: the likeliest, when that is `margin`
        or more; else None."""
        rows = rows[:DEPTH]
        if len(rows) < 2:
            return None
        p = [self.probability(row) for row in rank_features(query, rows)]
        best = max(range(1, len(rows)), key=lambda i: p[i])
        lead = p[best] - p[0]
        return (best, lead) if lead >= self.margin else None
