"""The daemon under load: idle cost, file-trigger latency, CLI round trips, concurrency.

Starts a real `python -m assistant daemon` (offline planner, a zero-latency model) on a
temporary data directory and vault, then measures:

- idle RSS and CPU over `--idle-s` seconds (targets: <= 350 MB, <= 1 % of one core);
- file event -> turn start latency over `--files` notes dropped one at a time into
  `Inbox/` (target: p50 <= 0.5 s with the debounce, which is reported);
- `assistant ask` wall time through the running daemon (target <= 0.5 s);
- `--concurrent` asks at once through the control API: all answered, no
  "database is locked" in the daemon's log, throughput.

    python bench/daemon.py [--idle-s 60] [--files 50] [--asks 10] [--concurrent 20]
                           [--debounce 1.0] [--json]

Linux only (it reads /proc). `--json` prints one JSON object as the last line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from assistant.client import discover

RULE = """
[daemon]
watch_debounce_s = {debounce}

[[watch]]
glob = "Inbox/*.md"
prompt = "remember that the inbox received {{title}}"
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.root = Path(tempfile.mkdtemp(prefix="bench-daemon-"))
        self.home = self.root / "home"
        self.vault = self.root / "vault"
        (self.vault / "Inbox").mkdir(parents=True)
        self.home.mkdir()
        (self.home / "config.toml").write_text(RULE.format(debounce=args.debounce))
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))
        }
        self.env.update(ASSISTANT_HOME=str(self.home), ASSISTANT_VAULT=str(self.vault))
        self.env["NO_PROXY"] = "127.0.0.1,localhost,::1"
        self.proc: subprocess.Popen[bytes] | None = None
        self.results: dict[str, Any] = {"debounce_s": args.debounce}

    def say(self, text: str) -> None:
        print(text, flush=True)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        started = time.perf_counter()
        log = (self.root / "daemon.stderr").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "assistant", "daemon"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        while discover(self.home, wait_s=0) is None:
            if self.proc.poll() is not None:
                raise SystemExit(f"the daemon exited: see {self.root / 'daemon.stderr'}")
            time.sleep(0.05)
        self.results["startup_s"] = round(time.perf_counter() - started, 2)
        self.say(f"daemon up in {self.results['startup_s']} s (pid {self.proc.pid})")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.results["exit_code"] = self.proc.wait(timeout=120)

    # -- measurements --------------------------------------------------------------------

    def idle(self) -> None:
        assert self.proc is not None
        pid, seconds = self.proc.pid, self.args.idle_s
        time.sleep(3)  # let start-up work settle
        cpu0, wall0 = cpu_seconds(pid), time.monotonic()
        peak = rss_mb(pid)
        while time.monotonic() - wall0 < seconds:
            time.sleep(1)
            peak = max(peak, rss_mb(pid))
        cpu = (cpu_seconds(pid) - cpu0) / (time.monotonic() - wall0) * 100
        self.results["idle"] = {
            "seconds": seconds,
            "rss_mb": round(peak, 1),
            "cpu_percent": round(cpu, 3),
        }
        self.say(
            f"idle over {seconds:g} s: RSS {peak:.0f} MB (target <= 350), "
            f"CPU {cpu:.2f} % of one core (target <= 1)"
        )

    def file_latency(self) -> None:
        database = sqlite3.connect(f"file:{self.home / 'assistant.db'}?mode=ro", uri=True)
        latencies = []
        for n in range(self.args.files):
            relative = f"Inbox/bench note {n}.md"
            dropped = time.time()
            (self.vault / relative).write_text(f"# note {n}\n\nbody\n", encoding="utf-8")
            deadline = time.monotonic() + 60
            while True:
                row = database.execute(
                    "SELECT started_at FROM turns WHERE json_extract(trigger, '$.path') = ?",
                    (relative,),
                ).fetchone()
                if row:
                    latencies.append(row[0] - dropped)
                    break
                if time.monotonic() > deadline:
                    raise SystemExit(f"no turn started for {relative}")
                time.sleep(0.01)
        database.close()
        p50, p95 = percentile(latencies, 0.5), percentile(latencies, 0.95)
        self.results["file_to_turn"] = {
            "files": len(latencies),
            "p50_s": round(p50, 3),
            "p95_s": round(p95, 3),
            "max_s": round(max(latencies), 3),
        }
        self.say(
            f"file event -> turn start over {len(latencies)} files "
            f"(debounce {self.args.debounce:g} s; a finished write settles after 0.1 s): "
            f"p50 {p50:.3f} s (target <= 0.5), p95 {p95:.3f} s"
        )

    def cli_asks(self) -> None:
        walls = []
        for _ in range(self.args.asks):
            started = time.perf_counter()
            result = subprocess.run(
                [sys.executable, "-m", "assistant", "ask", "--json", "15加27等于多少"],
                capture_output=True,
                text=True,
                env=self.env,
                timeout=120,
            )
            walls.append(time.perf_counter() - started)
            data = json.loads(result.stdout)
            assert data["served_by"] == "daemon" and "42" in data["answer"], result.stderr
        p50 = statistics.median(walls)
        self.results["cli_ask"] = {
            "runs": len(walls),
            "p50_s": round(p50, 3),
            "max_s": round(max(walls), 3),
        }
        self.say(
            f"`assistant ask` through the daemon, {len(walls)} runs: "
            f"p50 {p50:.3f} s (target <= 0.5), max {max(walls):.3f} s"
        )

    def concurrent(self) -> None:
        client = discover(self.home, wait_s=0)
        assert client is not None
        count = self.args.concurrent
        answers: list[dict[str, Any] | None] = [None] * count
        errors: list[str] = []
        gate = threading.Barrier(count)

        def one(n: int) -> None:
            gate.wait()
            try:
                answers[n] = client.call("ask", {"text": f"{n + 10}加{n}等于多少"})
            except Exception as exc:  # noqa: BLE001 - counted and reported
                errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=one, args=(n,)) for n in range(count)]
        started = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - started
        right = sum(
            1
            for n, answer in enumerate(answers)
            if answer and answer["stop_reason"] == "final" and str(2 * n + 10) in answer["answer"]
        )
        log = (self.home / "daemon.log").read_text(encoding="utf-8", errors="replace")
        locked = log.count("database is locked")
        self.results["concurrent_asks"] = {
            "asks": count,
            "answered_correctly": right,
            "errors": errors,
            "database_locked": locked,
            "wall_s": round(wall, 3),
            "asks_per_s": round(count / wall, 2),
        }
        self.say(
            f"{count} concurrent asks: {right}/{count} answered correctly, "
            f"{len(errors)} errors, 'database is locked' x{locked}; "
            f"{wall:.2f} s, {count / wall:.1f} asks/s"
        )

    def after_load(self) -> None:
        assert self.proc is not None
        self.results["rss_after_load_mb"] = round(rss_mb(self.proc.pid), 1)
        self.say(f"RSS after the load: {self.results['rss_after_load_mb']:.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-s", type=float, default=60.0)
    parser.add_argument("--files", type=int, default=50)
    parser.add_argument("--asks", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=20)
    parser.add_argument("--debounce", type=float, default=1.0, help="[daemon] watch_debounce_s")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    bench = Bench(args)
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}; data in {bench.root}")
    try:
        bench.start()
        bench.idle()
        bench.file_latency()
        bench.cli_asks()
        bench.concurrent()
        bench.after_load()
    finally:
        bench.stop()
    print(f"clean stop: exit code {bench.results.get('exit_code')}")
    if args.json:
        print(json.dumps(bench.results))


if __name__ == "__main__":
    main()
