"""A learned judge of two statements: is the new one about the stored one's fact? (issue 15)

The rules of `memory.sameness` decide only on strong evidence; each of their signals alone
is too weak or too strong, and people's wording outruns any list of shapes. This module
turns a stored statement, a new one and their place among the new one's candidates into
a few dozen numbers (the rules' own signals, similarity, shared words and values, who
the statements are of) and weighs them with gradient-boosted trees trained offline on
the scenario and pair files of `bench/` (`bench/train_pair_judge.py`, scikit-learn),
whose trees ship as `pair_judge.json` next to this file and are walked here in plain
Python: nothing is downloaded, nothing is trained at run time.

The store asks it, when `memory.learned_judge` is on, only after the rules found no row
(a missed update leaves a stale row), and links only above a threshold chosen on files
held out in training, by file, for almost no wrong links (a wrong link loses a fact), and
never a row the rules hold apart (other people, numbered things, releases: at 10k
templated rows the trees alone merged look-alikes; docs/BENCHMARKS.md, issue 15
sessions 16 and 18).
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from memory.reconcile import (
    change_cue,
    correction_cue,
    mentions,
    old_values,
    owners,
    restates_change,
    still_cue,
    topic_words,
)
from memory.sameness import (
    ONE_MORE,
    PLAN,
    another_count,
    conflicting_change,
    framed_apart,
    kept_apart,
    kept_values,
    near,
    near_conflict,
    nearest_change,
    others_also,
    same_people,
    scopes,
    someone_elses,
    theirs,
    topic,
    values,
    whose,
)
from memory.text import HAN, has_han

WEIGHTS = Path(__file__).with_name("pair_judge.json")
# below this passage similarity no pair of the training files was one fact (3 of 725):
# such candidates are not weighed at all (each costs the rules' full reading)
FLOOR = 0.80
_HAN_RUN = re.compile(f"[{HAN}]+")
_WORD = re.compile(r"[^\W_]+")


@dataclass(frozen=True)
class Candidate:
    """A stored statement the new one may be about, with its passage similarity."""

    text: str
    similarity: float


def _bigrams(text: str) -> set[str]:
    runs = _HAN_RUN.findall(unicodedata.normalize("NFKC", text))
    return {run[i : i + 2] for run in runs for i in range(len(run) - 1)}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(unicodedata.normalize("NFKC", text).lower()) if len(w) > 2}


def _jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def _frame(text: str, vals: frozenset[str]) -> str:
    """The statement without its values: what is said of them ("… costs £ a session")."""
    body = unicodedata.normalize("NFKC", text)
    for value in sorted(vals, key=len, reverse=True):
        body = body.replace(value, " ")
    return body


def _clip(n: int, top: int) -> float:
    return float(min(n, top)) / top


@lru_cache(maxsize=4096)
def pair_features(old: str, new: str, similarity: float) -> tuple[float, ...]:
    """What two statements share and what tells them apart, as the rules read it."""
    judged = near(old, new, similarity)
    verdict = judged[0] if judged else None
    old_vals, new_vals = values(old, loose=True), values(new, loose=True)
    gone = old_values(new)
    a, b = owners(old), owners(new)
    han = has_han(new)
    old_topic, new_topic = topic(old), topic(new)
    words_old = _bigrams(old) if han else _words(old)
    words_new = _bigrams(new) if han else _words(new)
    cut = _bigrams if han else _words
    frame_old, frame_new = (
        cut(_frame(old, old_vals | new_vals)),
        cut(_frame(new, old_vals | new_vals)),
    )
    return (
        float(han),
        float(verdict == "update"),
        float(verdict == "restatement"),
        float(near_conflict(old, new, similarity)),
        float(same_people(old, new, old_vals)),
        float(someone_elses(old, new)),
        float(theirs(old, new)),
        float(others_also(old, new)),
        float(framed_apart(old, new, strict=False)),
        float(framed_apart(old, new)),
        float(kept_apart(old, new)),
        _clip(len(old_topic & new_topic), 3),
        _jaccard(old_topic, new_topic),
        _clip(len(topic_words(old) & topic_words(new)), 3),
        _clip(len(old_vals & new_vals), 2),
        _clip(len(values(new) - old_vals), 3),
        _clip(len(values(old) - new_vals), 3),
        float(bool(gone) and any(mentions(old, v) for v in gone)),
        float(bool(gone) and not any(mentions(old, v) for v in gone)),
        float(a == b),
        float(bool(b - a)),
        float(bool(a - b)),
        float(bool(whose(old))),
        float(bool(whose(new))),
        float(restates_change(old, new)),
        _jaccard(words_old, words_new),
        _jaccard(frame_old, frame_new),
        len(frame_new - frame_old) / len(frame_new) if frame_new else 0.0,
        float(another_count(old, new)),
        _clip(len(kept_values(old, new, times=True)), 2),
        float(scopes(old) != scopes(new)),
        float(bool(ONE_MORE.search(unicodedata.normalize("NFKC", new)))),
        math.log((len(new) + 10) / (len(old) + 10)),
    )


PAIR_NAMES = (
    "han",
    "near_update",
    "near_restate",
    "near_conflict",
    "same_people",
    "someone_elses",
    "theirs",
    "others_also",
    "framed_apart_loose",
    "framed_apart_strict",
    "kept_apart",
    "topic_shared",
    "topic_jaccard",
    "topic_words_shared",
    "values_shared",
    "values_new",
    "values_dropped",
    "names_replaced_value",
    "replaced_value_elsewhere",
    "owners_equal",
    "owners_new",
    "owners_old",
    "whose_old",
    "whose_new",
    "restates_change",
    "word_jaccard",
    "frame_jaccard",
    "frame_new_share",
    "another_count",
    "values_kept",
    "scopes_differ",
    "one_more",
    "length_ratio",
)
TEXT_NAMES = ("change_cue", "correction_cue", "still_cue", "plan")
_PLACE_NAMES = (
    "similarity",
    "similarity_han",
    "gap",
    "top",
    "nearest_change_pick",
    "conflicting_change_pick",
)
FEATURES = (*_PLACE_NAMES, *TEXT_NAMES, *PAIR_NAMES)


@lru_cache(maxsize=1024)
def text_features(new: str) -> tuple[float, ...]:
    return (
        float(change_cue(new)),
        float(correction_cue(new)),
        float(still_cue(new)),
        float(bool(PLAN.search(unicodedata.normalize("NFKC", new)))),
    )


def features(new: str, candidates: Sequence[Candidate]) -> list[list[float] | None]:
    """One row of `FEATURES` per candidate (best first): the pair's own signals, and its
    place among the others (how much nearer than the next, the rules' single pick); None
    for a candidate below `FLOOR`."""
    pairs = [(c.text, c.similarity) for c in candidates]
    nearest = nearest_change(new, pairs) if pairs else None
    conflicting = conflicting_change(new, pairs) if pairs else None
    best = max((c.similarity for c in candidates), default=0.0)
    text = text_features(new)
    rows = []
    for i, c in enumerate(candidates):
        if c.similarity < FLOOR:
            rows.append(None)
            continue
        others = [o.similarity for j, o in enumerate(candidates) if j != i]
        gap = c.similarity - (max(others) if others else c.similarity - 0.1)
        han = has_han(new)
        place = (
            (c.similarity - 0.85) * 10,
            (c.similarity - 0.9) * 10 if han else 0.0,
            max(-0.1, min(0.1, gap)) * 10,
            float(c.similarity >= best),
            float(nearest == i),
            float(conflicting == i),
        )
        rows.append([*place, *text, *pair_features(c.text, new, round(c.similarity, 4))])
    return rows


@dataclass(frozen=True)
class Tree:
    """One regression tree of the ensemble, as parallel arrays (sklearn's layout): node
    `n` splits on `feature[n] <= threshold[n]` into `left[n]` / `right[n]`, or is a leaf
    (`left[n] == -1`) worth `value[n]`."""

    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    left: tuple[int, ...]
    right: tuple[int, ...]
    value: tuple[float, ...]

    @classmethod
    def from_dict(cls, data: dict) -> Tree:
        """A tree as `bench/train_pair_judge.py` writes it."""
        return cls(
            tuple(data["feature"]),
            tuple(data["threshold"]),
            tuple(data["left"]),
            tuple(data["right"]),
            tuple(data["value"]),
        )

    def __call__(self, row: Sequence[float]) -> float:
        n = 0
        while self.left[n] != -1:
            n = self.left[n] if row[self.feature[n]] <= self.threshold[n] else self.right[n]
        return self.value[n]


@dataclass(frozen=True)
class Boosted:
    """Gradient-boosted trees (log-odds: `base` plus `rate` times each tree's leaf), as
    both learned judges (this one and `memory.orderjudge`) ship them."""

    trees: tuple[Tree, ...]
    base: float
    rate: float

    @staticmethod
    def read(path: Path, features: Sequence[str], *numbers: str) -> dict[str, Any] | None:
        """The constructor's arguments from a model file as the training scripts write
        it (`trees`, `base`, `rate` and the named `numbers`), or None when the file is
        missing, unreadable or made for other `features` (the judge is then left out)."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if tuple(data["features"]) != tuple(features):
                return None
            trees = tuple(Tree.from_dict(t) for t in data["trees"])
            return {"trees": trees, **{n: float(data[n]) for n in ("base", "rate", *numbers)}}
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def probability(self, row: Sequence[float]) -> float:
        # read in single precision, as scikit-learn's trees read their input ("internally
        # converted to dtype=np.float32"): read in double, the trees trained in session
        # 58 gave their training rows up to 0.036 more or less than predict_proba, read
        # in single 2e-7 (docs/BENCHMARKS.md, issue 15 session 58)
        row = np.asarray(row, dtype=np.float32).tolist()
        logit = self.base + self.rate * sum(tree(row) for tree in self.trees)
        return 1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, logit))))


@dataclass(frozen=True)
class PairJudge(Boosted):
    """The pair judge's trees over `FEATURES`, and what a link needs: the best candidate
    at `threshold` or more, and `margin` ahead of the next."""

    threshold: float
    margin: float

    @classmethod
    def load(cls, path: Path = WEIGHTS) -> PairJudge | None:
        """The shipped judge, or None when its file is missing, unreadable or made for
        other features (the rules then decide alone)."""
        args = cls.read(path, FEATURES, "threshold", "margin")
        return None if args is None else cls(**args)

    def weigh(
        self, new: str, candidates: Sequence[Candidate]
    ) -> list[tuple[list[float] | None, float]]:
        """Each candidate's `features` row and the probability that `new` is about it
        (0 for one below `FLOOR`), in the candidates' order (nearest first): what the
        store links by (`pick`) and what recall's near-conflict move asks."""
        return [
            (row, 0.0 if row is None else self.probability(row))
            for row in features(new, candidates)
        ]

    def pick(
        self, new: str, candidates: Sequence[Candidate], others: frozenset[int] = frozenset()
    ) -> tuple[int, float] | None:
        """The one candidate `new` is about, with its probability: the best, when it
        reaches the threshold, no other comes within `margin` of it, and no other is
        said in the same frame (`crowded`). The candidates `others` (indexes: another
        person's facts, which `new` cannot change) are weighed as context, but neither
        picked nor a rival ("Priya … moved over to Ward 18" does not make "I've been
        moved across to Ward 45" a guess between two wards)."""
        if not any(c.similarity >= FLOOR for c in candidates):
            return None
        return self.choose(new, self.weigh(new, candidates), others)

    def choose(
        self,
        new: str,
        weighed: Sequence[tuple[list[float] | None, float]],
        others: frozenset[int] = frozenset(),
    ) -> tuple[int, float] | None:
        """`pick` over candidates already weighed (`weigh`): a caller that read their
        probabilities first does not weigh them twice."""
        rows = [row for row, _ in weighed]
        scored = sorted(
            ((i, p) for i, (_, p) in enumerate(weighed) if i not in others),
            key=lambda p: -p[1],
        )
        if not scored:
            return None
        i, p = scored[0]
        # a statement that the value still holds changes nothing when linked: it needs
        # more certainty than a change (leave one file out, 38 files: the one wrong
        # restatement link was below it, 13 of 90 right ones too)
        needed = max(self.threshold, SURE_OF_STILL) if still_cue(new) else self.threshold
        if p < needed or (len(scored) > 1 and p - scored[1][1] < self.margin):
            return None
        return None if crowded(rows, i) else (i, p)


SURE_OF_STILL = 0.95
# the frame overlap (`frame_jaccard`) above which two statements read as one template:
# in the scenario stores 7 of 3,648 candidate pairs reach it, at 10k templated rows
# every pair the trees were sure of had two or more such neighbours (docs/BENCHMARKS.md,
# issue 15 session 18)
SAME_FRAME = 0.3
_FRAME = FEATURES.index("frame_jaccard")


def crowded(rows: Sequence[Sequence[float] | None], pick: int) -> bool:
    """Is the picked candidate one of several said in the new statement's frame (one
    template: invoices, loans, people's jobs)? Then the new statement may be one more of
    them, and which one it changes is a guess the judge does not make."""
    return any(
        row is not None and row[_FRAME] >= SAME_FRAME for n, row in enumerate(rows) if n != pick
    )
