"""Framework overhead per turn: our loop against the OpenAI Agents SDK, PydanticAI and
LangGraph, each driven by a zero-latency test model, side by side in one run.

Ours runs the full `Assistant`: traces and working memory persisted to SQLite, grounding
check on. Each contender runs in its own process, as a user would run it (in one shared
process each one pays for the others' imported modules and heap: `--in-process` measures
that way); rounds interleave the contenders (ours, peer 1, peer 2, ..., ours, ...) so that
machine noise hits all of them alike, the idle ones waiting on a pipe. Medians over all
timed turns are reported.

    python bench/loop_overhead.py [--turns 500] [--rounds 5] [--in-process] [--json]

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


class Worker:
    """One contender in a child process (`--worker`): told how many turns to run, it
    answers with their times; between blocks it waits on its pipe, using no CPU."""

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

    def __call__(self, turns: int) -> list[float]:
        assert self.process.stdin is not None
        self.process.stdin.write(f"{turns}\n")
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
        print(json.dumps(_time_block(run, int(line))), flush=True)
    close()


def measure(scenario: str, turns: int, rounds: int, in_process: bool) -> dict[str, float]:
    names = ["ours", *peers.available_peers()]
    blocks: dict[str, Callable[[int], list[float]]] = {}
    closers: list[Callable[[], None]] = []
    for name in names:
        if in_process:
            run, close = _contender(name, scenario)
            blocks[name] = lambda n, run=run: _time_block(run, n)
            closers.append(close)
        else:
            worker = Worker(name, scenario)
            blocks[name] = worker
            closers.append(worker.close)
    for block in blocks.values():
        block(20)
    samples: dict[str, list[float]] = {name: [] for name in blocks}
    for _ in range(rounds):
        for name, block in blocks.items():
            samples[name].extend(block(turns // rounds))
    for close in closers:
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
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--in-process", action="store_true", help="all contenders in one process")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scenario", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        serve(args.worker, args.scenario)
        return

    versions = peers.available_peers()
    results = {s: measure(s, args.turns, args.rounds, args.in_process) for s in SCENARIOS}
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
