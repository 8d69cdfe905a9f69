"""Framework overhead per turn: our loop against the OpenAI Agents SDK, PydanticAI and
LangGraph, each driven by a zero-latency test model, side by side in one run.

Ours runs the full `Assistant`: traces and working memory persisted to SQLite, grounding
check on. Rounds interleave the contenders (ours, peer 1, peer 2, ..., ours, ...) so that
machine noise hits all of them alike; medians over all timed turns are reported.

    python bench/loop_overhead.py [--turns 200] [--rounds 5] [--json]

Peers need the optional extra: pip install -e '.[bench]'.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours
import peers

SCENARIOS = {"a": "1 tool call", "b": "5 parallel calls", "c": "8 sequential rounds"}


def _time_block(run: Callable[[], None], turns: int) -> list[float]:
    samples = []
    for _ in range(turns):
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def measure(scenario: str, turns: int, rounds: int) -> dict[str, float]:
    contenders: dict[str, Callable[[], None]] = {}
    run, close = ours.make_turn(scenario)
    contenders["ours"] = run
    for name in peers.available_peers():
        contenders[name] = peers.PEERS[name](scenario)
    for run in contenders.values():
        _time_block(run, 20)
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for _ in range(rounds):
        for name, run in contenders.items():
            samples[name].extend(_time_block(run, turns // rounds))
    close()
    return {name: statistics.median(values) for name, values in samples.items()}


def import_time(statement: str, repeats: int = 5) -> float:
    """Median wall time of a fresh interpreter running `statement`, minus an empty one."""

    def run(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        return time.perf_counter() - started

    baseline = statistics.median(run("pass") for _ in range(repeats))
    return max(statistics.median(run(statement) for _ in range(repeats)) - baseline, 0.0)


IMPORTS = {
    "ours: assistant ask path (cli + app + offline planner)": (
        "import assistant.cli, assistant.app, assistant.offline.intents"
    ),
    "openai-agents": "import agents",
    "pydantic-ai": "import pydantic_ai",
    "langgraph": "from langgraph.prebuilt import create_react_agent",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    versions = peers.available_peers()
    results = {s: measure(s, args.turns, args.rounds) for s in SCENARIOS}
    imports = {}
    for label, statement in IMPORTS.items():
        if label.startswith("ours") or label in versions:
            imports[label] = import_time(statement) * 1000

    print(f"peers: {versions or 'none installed (pip install -e .[bench])'}")
    print(f"{'scenario':<24}" + "".join(f"{name:>16}" for name in results["a"]))
    for scenario, medians in results.items():
        row = f"{scenario + ': ' + SCENARIOS[scenario]:<24}"
        row += "".join(f"{value:>13.3f} ms" for value in medians.values())
        print(row)
    for scenario, medians in results.items():
        ratios = ", ".join(
            f"{name} {value / medians['ours']:.1f}x"
            for name, value in medians.items()
            if name != "ours"
        )
        print(f"ratio peer/ours ({scenario}): {ratios}")
    for label, ms in imports.items():
        print(f"import time, {label}: {ms:.0f} ms")
    if args.json:
        print(json.dumps({"median_ms": results, "import_ms": imports, "peers": versions}))


if __name__ == "__main__":
    main()
