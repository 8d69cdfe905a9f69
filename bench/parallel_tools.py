"""Do parallel tool calls overlap? Five tools that each sleep 200 ms, in one reply, against
one such tool, through the full `Assistant` with a zero-latency scripted model.
Target: five take at most 1.2x the time of one.

    python bench/parallel_tools.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.testing import ScriptedModel, calls, text
from tools.base import tool

SLEEP_S = 0.2


@tool(cacheable=False)
def slow_lookup(key: str) -> dict[str, str]:
    """Look a key up in a slow service. Call it for each key you need."""
    time.sleep(SLEEP_S)
    return {"key": key, "value": key.upper()}


def turn_seconds(assistant: Assistant, model: ScriptedModel, width: int) -> float:
    model.enqueue(calls(*[("slow_lookup", {"key": f"k{n}"}) for n in range(width)]), text("ok"))
    started = time.perf_counter()
    outcome = assistant.ask("look up the keys")
    elapsed = time.perf_counter() - started
    assert outcome.stop_reason.value == "final" and len(outcome.tool_calls) == width
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for width in (5, 4):
        settings = load_settings({"ASSISTANT_HOME": tempfile.mkdtemp(prefix="bench-par-")})
        settings.loop.parallel_tools = width
        model = ScriptedModel(record=False)
        assistant = Assistant(settings, model=model, tools=[slow_lookup])
        one = statistics.median(turn_seconds(assistant, model, 1) for _ in range(args.repeats))
        five = statistics.median(turn_seconds(assistant, model, 5) for _ in range(args.repeats))
        assistant.close()
        print(f"[loop.parallel_tools = {width}] median of {args.repeats} turns")
        print(f"  one 200 ms tool: {one * 1000:.0f} ms per turn")
        print(f"  five 200 ms tools in one reply: {five * 1000:.0f} ms per turn")
        print(f"  ratio five/one: {five / one:.2f} (target <= 1.2)")


if __name__ == "__main__":
    main()
