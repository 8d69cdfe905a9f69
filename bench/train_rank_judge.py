"""Train the rank judge (`memory.rankjudge`) on recall lists of scenario runs.

Input: the `--json --no-rank-judge` reports of `bench/memory_updates.py` (one per scenario
file), whose records carry each step's top five hits in the order recall gave them, and
the question asked later of the fact left longest. Each hit of a list that holds the
chain's current value somewhere is a case: positive when it holds the value. The judge
learns from both kinds of question (asked right after a statement the newest row is
mostly the answer, asked later it is mostly not; the order judge's training found that a
judge taught one kind misorders the other: docs/BENCHMARKS.md, issue 15 session 20).

Reported first, by file left out (ten folds by file, trained on the others): the
questions a margin would turn right and wrong. Then it trains on every file and writes
`memory/rank_judge.json`. Needs scikit-learn (`pip install -e '.[train]'`).

    python bench/train_rank_judge.py REPORT.json ... [--margin 0.1] [--report-only]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from memory.orderjudge import Recalled
from memory.rankjudge import DEPTH, FEATURES, WEIGHTS, Listed, rank_features

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_order_judge import asked_in
from train_pair_judge import fit, write_trees

FOLDS = 10
# the trees' size: on 201 files (93 read, 108 blind) 300 trees of depth 5 turned more
# answers right by file left out than the first judge's 150 of depth 3, most of it where
# a question is asked later (docs/BENCHMARKS.md, issue 15 session 55)
TREES = 300
TREE_DEPTH = 5


def _lists(reports: list[Path]) -> list[dict[str, Any]]:
    """Every recorded question whose top hits hold the current value, with each hit's
    features and label."""
    lists = []
    for name, source, number, query, value, hits in asked_in(reports):
        hits = hits[:DEPTH]
        labels = [int(value in hit["text"]) for hit in hits]
        if not any(labels):
            continue
        rows = [
            Listed(Recalled(h["text"], h["score"] or 0.0, h["similarity"]), h["valid_from"])
            for h in hits
        ]
        lists.append(
            {
                "file": name,
                "step": number,
                "source": source,
                "labels": labels,
                "rows": rank_features(query, rows),
            }
        )
    return lists


def _fit(lists: list[dict[str, Any]]) -> Any:
    rows = [row for case in lists for row in case["rows"]]
    labels = [label for case in lists for label in case["labels"]]
    return fit(np.array(rows), np.array(labels), trees=TREES, depth=TREE_DEPTH)


def _turned(case: dict[str, Any], p: np.ndarray, margin: float) -> int:
    """+1 when the judge's move puts the answer first, -1 when it takes it away, else 0."""
    if len(p) < 2:
        return 0
    best = 1 + int(np.argmax(p[1:]))
    if p[best] - p[0] < margin:
        return 0
    labels = case["labels"]
    return int(labels[best] and not labels[0]) - int(labels[0] and not labels[best])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--margin", type=float, default=0.1)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", type=Path, default=WEIGHTS, help="where the trees go")
    args = parser.parse_args(argv)
    lists = _lists(args.reports)
    files = sorted({case["file"] for case in lists})
    scored: list[tuple[dict[str, Any], np.ndarray]] = []
    for fold in range(FOLDS):
        held = set(files[fold::FOLDS])
        model = _fit([case for case in lists if case["file"] not in held])
        for case in (c for c in lists if c["file"] in held):
            scored.append((case, model.predict_proba(np.array(case["rows"]))[:, 1]))
    print(f"{len(lists)} lists from {len(files)} files")
    for margin in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3):
        tally: Counter[tuple[str, int]] = Counter()
        for case, p in scored:
            tally[(case["source"], _turned(case, p, margin))] += 1
        print(
            f"margin {margin:.2f}: "
            + ", ".join(
                f"{source} questions +{tally[(source, 1)]} -{tally[(source, -1)]}"
                for source in ("step", "later")
            )
            + " (by file left out)"
        )
    if args.report_only:
        return 0
    model = _fit(lists)
    count = write_trees(args.out, model, FEATURES, margin=args.margin, trained_on=files)
    print(f"wrote {args.out} ({count} trees)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
