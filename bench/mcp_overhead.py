"""What MCP costs us (issue 16): a foreign tool call through our loop against the SDK's
own `ClientSession.call_tool`, and the start-up cost of a configured, idle server.

Both contenders call `get_current_time` of the real `mcp-server-time` over stdio:

- direct: one `ClientSession`, `await session.call_tool(...)` per call;
- loop: one `Assistant.ask` turn per call with a zero-latency scripted model: the model
  asks for `mcp_time_get_current_time`, the loop validates and runs it (through our
  connection thread), records the turn and its trace in SQLite, asks again, answers.

They alternate in rounds (a slice of each per round) so drift of the shared host hits
both; medians per call/turn, side by side, and the median of per-round ratios. Start-up:
`Assistant(...)` opened and closed with no server configured and with one configured
(idle, never used), medians of `--opens` each, alternating; and what the first use of
the server costs (start + tools/list), median of `--first-uses`.

    python bench/mcp_overhead.py [--rounds 15] [--per-round 20] [--opens 15]
                                 [--first-uses 5] [--daemon-starts 0] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.testing import ScriptedModel, calls, text

TIME_SERVER = (
    f'[[mcp.servers]]\nname = "time"\ncommand = {json.dumps(sys.executable)}\n'
    'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n'
)


def settings_in(home: Path, config: str) -> Any:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config, encoding="utf-8")
    os.environ["ASSISTANT_HOME"] = str(home)
    settings = load_settings()
    settings.memory.enabled = False
    return settings


class Direct:
    """The SDK alone: a ClientSession held open on its own event loop thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.ready = threading.Event()
        self.stop: asyncio.Event | None = None
        self.session: Any = None
        asyncio.run_coroutine_threadsafe(self._hold(), self.loop)
        self.ready.wait(60)

    async def _hold(self) -> None:
        from mcp import ClientSession, StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=sys.executable, args=["-m", "mcp_server_time", "--local-timezone", "UTC"]
        )
        self.stop = asyncio.Event()
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            self.session = session
            self.ready.set()
            await self.stop.wait()

    def calls(self, n: int) -> list[float]:
        async def timed() -> list[float]:
            took = []
            for _ in range(n):
                started = time.perf_counter()
                result = await self.session.call_tool("get_current_time", {"timezone": "UTC"})
                took.append(time.perf_counter() - started)
                assert not result.is_error
            return took

        return asyncio.run_coroutine_threadsafe(timed(), self.loop).result(120)

    def close(self) -> None:
        assert self.stop is not None
        self.loop.call_soon_threadsafe(self.stop.set)
        time.sleep(0.3)
        self.loop.call_soon_threadsafe(self.loop.stop)


class ThroughLoop:
    """Our loop: one turn per call, the model scripted to ask for the MCP tool."""

    def __init__(self, home: Path) -> None:
        self.model = ScriptedModel(record=False)
        self.assistant = Assistant(settings_in(home, TIME_SERVER), model=self.model)
        self.turn(1)  # the first use starts the server; not measured here

    def turn(self, n: int) -> list[float]:
        took = []
        for _ in range(n):
            self.model.enqueue(
                calls(("mcp_time_get_current_time", {"timezone": "UTC"})), text("It is now.")
            )
            started = time.perf_counter()
            outcome = self.assistant.ask("what time is it?")  # a new session each turn
            took.append(time.perf_counter() - started)
            assert outcome.tool_calls[0].status == "ok", outcome.tool_calls[0].result
        return took

    def close(self) -> None:
        self.assistant.close()


def measure_calls(rounds: int, per_round: int, home: Path) -> dict[str, Any]:
    direct, loop = Direct(), ThroughLoop(home / "loop")
    try:
        direct.calls(5)
        loop.turn(5)  # warm both
        direct_all: list[float] = []
        loop_all: list[float] = []
        ratios = []
        for _ in range(rounds):
            d = direct.calls(per_round)
            o = loop.turn(per_round)
            direct_all += d
            loop_all += o
            ratios.append(statistics.median(o) / statistics.median(d))
    finally:
        loop.close()
        direct.close()
    d_med, o_med = statistics.median(direct_all), statistics.median(loop_all)
    return {
        "direct_call_median_ms": round(d_med * 1000, 3),
        "loop_turn_median_ms": round(o_med * 1000, 3),
        "added_by_loop_ms": round((o_med - d_med) * 1000, 3),
        "ratio": round(o_med / d_med, 2),
        "paired_ratio_median": round(statistics.median(ratios), 2),
        "samples_each": len(direct_all),
    }


def measure_startup(opens: int, first_uses: int, home: Path) -> dict[str, Any]:
    without: list[float] = []
    with_server: list[float] = []
    for i in range(opens):
        for config, sink in (("", without), (TIME_SERVER, with_server)):
            settings = settings_in(home / f"open-{i}-{len(config)}", config)
            started = time.perf_counter()
            assistant = Assistant(settings, model=ScriptedModel(record=False))
            assistant.close()
            sink.append(time.perf_counter() - started)
    first: list[float] = []
    for i in range(first_uses):
        settings = settings_in(home / f"first-{i}", TIME_SERVER)
        assistant = Assistant(settings, model=ScriptedModel(record=False))
        try:
            started = time.perf_counter()
            assert assistant.registry.get("mcp_time_get_current_time") is not None
            first.append(time.perf_counter() - started)
        finally:
            assistant.close()
    return {
        "open_close_no_server_ms": round(statistics.median(without) * 1000, 2),
        "open_close_idle_server_ms": round(statistics.median(with_server) * 1000, 2),
        "added_by_idle_server_ms": round(
            (statistics.median(with_server) - statistics.median(without)) * 1000, 2
        ),
        "first_use_start_and_list_ms": round(statistics.median(first) * 1000, 1),
    }


def daemon_start_s(home: Path, config: str) -> float:
    """Seconds from `assistant daemon` to its published, answering control API."""
    import subprocess

    from assistant.client import discover

    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env["ASSISTANT_HOME"] = str(home)
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant", "daemon"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while discover(home, wait_s=0) is None:
            if proc.poll() is not None or time.perf_counter() - started > 300:
                raise RuntimeError("the daemon did not start")
            time.sleep(0.05)
        return time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(60)


def measure_daemon(starts: int, home: Path) -> dict[str, Any]:
    without, with_server = [], []
    for i in range(starts):
        without.append(daemon_start_s(home / f"daemon-{i}-none", ""))
        with_server.append(daemon_start_s(home / f"daemon-{i}-time", TIME_SERVER))
    return {
        "daemon_start_no_server_s": round(statistics.median(without), 2),
        "daemon_start_idle_server_s": round(statistics.median(with_server), 2),
        "starts_each": starts,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-round", type=int, default=20)
    parser.add_argument("--opens", type=int, default=15)
    parser.add_argument("--first-uses", type=int, default=5)
    parser.add_argument("--daemon-starts", type=int, default=0, help="also time daemon starts")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        home = Path(tmp)
        report = {
            "calls": measure_calls(args.rounds, args.per_round, home),
            "startup": measure_startup(args.opens, args.first_uses, home),
            "cpus": os.cpu_count(),
        }
        if args.daemon_starts:
            report["daemon"] = measure_daemon(args.daemon_starts, home)
    if args.json:
        print(json.dumps(report))
        return
    c, s = report["calls"], report["startup"]
    print(f"MCP tool call, median of {c['samples_each']} each (mcp-server-time over stdio):")
    print(f"  direct ClientSession.call_tool  {c['direct_call_median_ms']:8.3f} ms")
    print(f"  one turn through our loop       {c['loop_turn_median_ms']:8.3f} ms")
    print(
        f"  added by the loop               {c['added_by_loop_ms']:8.3f} ms "
        f"({c['ratio']}x; paired per round {c['paired_ratio_median']}x)"
    )
    print("Start-up (Assistant open + close, median):")
    print(f"  no server configured            {s['open_close_no_server_ms']:8.2f} ms")
    print(f"  one idle server configured      {s['open_close_idle_server_ms']:8.2f} ms")
    print(f"  added by the idle server        {s['added_by_idle_server_ms']:8.2f} ms")
    print(f"  first use (start + tools/list)  {s['first_use_start_and_list_ms']:8.1f} ms")
    if "daemon" in report:
        d = report["daemon"]
        print(f"Daemon start to a published API (median of {d['starts_each']}):")
        print(f"  no server configured            {d['daemon_start_no_server_s']:8.2f} s")
        print(f"  one idle server configured      {d['daemon_start_idle_server_s']:8.2f} s")


if __name__ == "__main__":
    main()
