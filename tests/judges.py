"""An order judge for tests of what recall and forget do with a judge's moves, and a
tiny scenario report for tests of the judges' training scripts."""

from __future__ import annotations

import json
import math
from pathlib import Path

from memory.orderjudge import OrderJudge
from memory.pairjudge import Tree

WEDNESDAYS, FRIDAYS = "I swim on Wednesdays.", "Pool's shut midweek, Fridays it is."


def _one_leaf(log_odds: float, threshold: float) -> OrderJudge:
    leaf = Tree((-2,), (-2.0,), (-1,), (-1,), (log_odds,))
    return OrderJudge((leaf,), base=0.0, rate=1.0, threshold=threshold)


def always_sure() -> OrderJudge:
    """A judge sure of every newer row (one leaf, p ≈ 0.98): what recall and forget do
    with its moves is theirs. (The shipped judge, trained on both kinds of question, is
    rarely this sure.)"""
    return _one_leaf(4.0, 0.7)


def sure(p: float, threshold: float = 0.62) -> OrderJudge:
    """A judge that gives every newer row the probability `p` (moving it at `threshold`,
    the shipped judge's): how sure a move must be for what follows it."""
    return _one_leaf(math.log(p / (1 - p)), threshold)


def hit(text: str, when: float, kind: str = "fact") -> dict[str, object]:
    """One recorded recall hit as `bench/memory_updates.py` reports it."""
    return {"text": text, "score": 1.0, "similarity": 0.8, "valid_from": when, "kind": kind}


def swim_report(folder: Path, records: list[dict[str, object]]) -> Path:
    """A memory_updates report over a two-step scenario (swimming moved from Wednesdays
    to Fridays, both asked "When do I swim?") with the given `records`."""
    import yaml

    scenario = folder / "tiny.yaml"
    steps = [
        {"chain": "swim", "remember": WEDNESDAYS, "value": "Wednesdays"},
        {"chain": "swim", "remember": FRIDAYS, "value": "Fridays"},
    ]
    query = "When do I swim?"
    doc = {"name": "tiny", "steps": [{**s, "query": query, "expect": "created"} for s in steps]}
    scenario.write_text(yaml.safe_dump(doc), encoding="utf-8")
    report = folder / "report.json"
    report.write_text(
        "text report first\n" + json.dumps({"tiny": {"file": str(scenario), "records": records}}),
        encoding="utf-8",
    )
    return report
