"""Framework overhead per turn: our loop against the OpenAI Agents SDK, PydanticAI and
LangGraph, each driven by a zero-latency test model, side by side in one run.

Ours runs the full `Assistant`: traces and working memory persisted to SQLite, grounding
check on. Each contender runs in its own process, as a user would run it (in one shared
process each one pays for the others' imported modules and heap: `--in-process` measures
that way). Rounds interleave the contenders (ours, peer 1, peer 2, ..., ours, ...), each
running turns for the same slice of wall time, so that the host's drifting speed hits
all of them alike; the idle ones wait on a pipe. Reported: the median over all timed
turns, and the paired ratio, the median over rounds of (peer's median ÷ ours) in the
same round, which cancels drift slower than a round.

    python bench/loop_overhead.py [--rounds 20] [--slice-ms 150] [--in-process] [--json]

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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import ours
import peers

SCENARIOS = {"a": "1 tool call", "b": "5 parallel calls", "c": "8 sequential rounds"}


def _time_slice(run: Callable[[], None], slice_ms: float) -> list[float]:
    """Turns for `slice_ms` of wall time (at least one); each one's milliseconds."""
    samples: list[float] = []
    end = time.perf_counter() + slice_ms / 1000
    while not samples or time.perf_counter() < end:
        started = time.perf_counter()
        run()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


class Worker:
    """One contender in a child process (`--worker`): told for how long to run turns, it
    answers with their times; between slices it waits on its pipe, using no CPU."""

    def __init__(self, name: str, scenario: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--worker", name, "--scenario", scenario],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self._line() != "ready":
            raise RuntimeError(f"the {name} worker did not start")

    def _line(self) -> str:
        assert self.process.stdout is not None
        return self.process.stdout.readline().strip()

    def __call__(self, slice_ms: float) -> list[float]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{slice_ms}\n")
        self.process.stdin.flush()
        return json.loads(self._line())

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _contender(name: str, scenario: str) -> tuple[Callable[[], None], Callable[[], None]]:
    if name == "ours":
        return ours.make_turn(scenario)
    return peers.PEERS[name](scenario), lambda: None


def serve(name: str, scenario: str) -> None:
    """The `--worker` side of `Worker`."""
    run, close = _contender(name, scenario)
    print("ready", flush=True)
    for line in sys.stdin:
        print(json.dumps(_time_slice(run, float(line))), flush=True)
    close()


def measure(scenario: str, rounds: int, slice_ms: float, in_process: bool) -> dict[str, Any]:
    names = ["ours", *peers.available_peers()]
    slices: dict[str, Callable[[float], list[float]]] = {}
    closers: list[Callable[[], None]] = []
    for name in names:
        if in_process:
            run, close = _contender(name, scenario)
            slices[name] = lambda ms, run=run: _time_slice(run, ms)
            closers.append(close)
        else:
            worker = Worker(name, scenario)
            slices[name] = worker
            closers.append(worker.close)
    for take in slices.values():
        take(2 * slice_ms)  # warm-up
    per_round: dict[str, list[list[float]]] = {name: [] for name in slices}
    for _ in range(rounds):
        for name, take in slices.items():
            per_round[name].append(take(slice_ms))
    for close in closers:
        close()
    ours_by_round = [statistics.median(samples) for samples in per_round["ours"]]
    return {
        name: {
            "median_ms": statistics.median(t for samples in taken for t in samples),
            "turns": sum(len(samples) for samples in taken),
            "paired_ratio": statistics.median(
                statistics.median(samples) / ours
                for samples, ours in zip(taken, ours_by_round, strict=True)
            ),
        }
        for name, taken in per_round.items()
    }


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
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--slice-ms", type=float, default=150, help="each contender's turn")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--in-process", action="store_true", help="all contenders in one process")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.scenario)
        return

    versions = peers.available_peers()
    results = {s: measure(s, args.rounds, args.slice_ms, args.in_process) for s in SCENARIOS}
    imports = {}
    for label, statement in IMPORTS.items():
        if label.startswith("ours") or label in versions:
            imports[label] = import_time(statement) * 1000

    print(f"peers: {versions or 'none installed (pip install -e .[bench])'}")
    print(f"{'median ms per turn':<24}" + "".join(f"{name:>16}" for name in results["a"]))
    for scenario, contenders in results.items():
        row = f"{scenario + ': ' + SCENARIOS[scenario]:<24}"
        row += "".join(f"{c['median_ms']:>13.3f} ms" for c in contenders.values())
        print(row)
    for scenario, contenders in results.items():
        ours = contenders["ours"]["median_ms"]
        ratios = ", ".join(
            f"{name} {c['median_ms'] / ours:.1f}x (paired {c['paired_ratio']:.1f}x)"
            for name, c in contenders.items()
            if name != "ours"
        )
        turns = ", ".join(f"{name} {c['turns']}" for name, c in contenders.items())
        print(f"ratio peer/ours ({scenario}): {ratios}; turns timed: {turns}")
    for label, ms in imports.items():
        print(f"import time, {label}: {ms:.0f} ms")
    if args.json:
        print(json.dumps({"scenarios": results, "import_ms": imports, "peers": versions}))


if __name__ == "__main__":
    main()
