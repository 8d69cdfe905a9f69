"""Soak: many turns through one running daemon, looking for leaks (issue 6, item 6).

Starts a real `python -m assistant daemon` (offline planner: a zero-latency model) on a
temporary data directory, sends `--turns` asks through its control API (the light client
with the daemon's token), and checks:

- RSS growth after warm-up (measured at turn `--warmup` and at the end): <= 10 %;
- no file-descriptor leak (/proc/PID/fd count at warm-up vs at the end, small slack);
- no thread leak (/proc/PID/task count, same);
- traces and messages complete: one `turns` row per turn, and a user and an assistant
  message for every turn in SQLite.

    python bench/soak.py [--turns 1000] [--warmup 100] [--json]

Linux only (it reads /proc). `--json` prints one JSON object as the last line; the exit
status is 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from assistant.client import discover  # noqa: E402

FD_SLACK = 4  # sockets of a request in flight, a log rotation: not a leak
THREAD_SLACK = 2


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


def rss_kb(pid: int) -> int:
    return status_kb(pid, "VmRSS")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def thread_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/task"))


def sample(pid: int) -> dict[str, int]:
    """RSS split as the kernel counts it: private (anonymous) memory, where a leak shows,
    and file-backed pages, here mostly the embedding model's weights, which the engine
    maps from its file and pages in as new tokens are first seen (bounded by the file's
    size, shared with the page cache, reclaimable by the OS)."""
    return {
        "rss_kb": rss_kb(pid),
        "anon_kb": status_kb(pid, "RssAnon"),
        "file_kb": status_kb(pid, "RssFile"),
        "fds": fd_count(pid),
        "threads": thread_count(pid),
    }


PROMPTS = (
    "{a}加{b}等于多少",
    "what is {a} * {b}",
    "你好",
    "remember that soak item {n} is {a}",
)
MIXES = {"all": PROMPTS, "calc": PROMPTS[:3]}


def run(turns: int, warmup: int, keep: bool = False, mix: str = "all") -> dict[str, Any]:
    """`mix="calc"` leaves out the memory writes, so stored data stops growing."""
    prompts = MIXES[mix]
    root = Path(tempfile.mkdtemp(prefix="soak-"))
    home, vault = root / "home", root / "vault"
    home.mkdir()
    (vault / "Inbox").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(ASSISTANT_HOME=str(home), ASSISTANT_VAULT=str(vault))
    env["NO_PROXY"] = "127.0.0.1,localhost,::1"
    log = (root / "daemon.stderr").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "assistant", "daemon"],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
    )
    result: dict[str, Any] = {"turns": turns, "warmup": warmup, "mix": mix, "rss_mb_by_turn": {}}
    try:
        started = time.monotonic()
        client = discover(home, wait_s=0)
        while client is None:
            if proc.poll() is not None:
                raise SystemExit(f"the daemon exited: see {root / 'daemon.stderr'}")
            time.sleep(0.1)
            client = discover(home, wait_s=0)
        result["startup_s"] = round(time.monotonic() - started, 2)
        failures: list[str] = []
        at_warmup: dict[str, int] | None = None
        wall0 = time.monotonic()
        for n in range(turns):
            text = prompts[n % len(prompts)].format(n=n, a=n % 97 + 1, b=n % 13 + 2)
            answer = client.call("ask", {"text": text, "session": f"soak-{n}"})
            if answer.get("stop_reason") != "final":
                failures.append(f"turn {n}: {answer.get('stop_reason')}")
            if n + 1 == min(warmup, turns):
                at_warmup = sample(proc.pid)
            if (n + 1) % 100 == 0:
                result["rss_mb_by_turn"][n + 1] = round(rss_kb(proc.pid) / 1024, 1)
                print(f"  {n + 1} turns, {time.monotonic() - wall0:.0f} s", flush=True)
        result["turns_wall_s"] = round(time.monotonic() - wall0, 1)
        time.sleep(1.0)  # let the last session-end work settle
        at_end = sample(proc.pid)
        assert at_warmup is not None
        result["at_warmup"], result["at_end"] = at_warmup, at_end
        growth = (at_end["rss_kb"] - at_warmup["rss_kb"]) / at_warmup["rss_kb"] * 100
        result["rss_growth_percent"] = round(growth, 2)
        anon_growth = (at_end["anon_kb"] - at_warmup["anon_kb"]) / at_warmup["anon_kb"] * 100
        result["anon_growth_percent"] = round(anon_growth, 2)
        result["file_growth_mb"] = round((at_end["file_kb"] - at_warmup["file_kb"]) / 1024, 1)
        result["not_final"] = failures[:20]
        with sqlite3.connect(f"file:{home / 'assistant.db'}?mode=ro", uri=True) as db:
            traced = db.execute("SELECT COUNT(*) FROM turns WHERE session LIKE 'soak-%'")
            result["traced_turns"] = traced.fetchone()[0]
            rows = db.execute(
                "SELECT role, COUNT(DISTINCT session) FROM messages "
                "WHERE session LIKE 'soak-%' AND role IN ('user', 'assistant') GROUP BY role"
            ).fetchall()
        sessions = dict(rows)
        result["sessions_with_user_message"] = sessions.get("user", 0)
        result["sessions_with_assistant_message"] = sessions.get("assistant", 0)
        checks = {
            "rss_growth_le_10_percent": growth <= 10.0,
            "private_memory_growth_le_10_percent": anon_growth <= 10.0,
            "no_fd_leak": at_end["fds"] <= at_warmup["fds"] + FD_SLACK,
            "no_thread_leak": at_end["threads"] <= at_warmup["threads"] + THREAD_SLACK,
            "all_turns_final": not failures,
            "traces_complete": result["traced_turns"] == turns,
            "messages_complete": result["sessions_with_user_message"] == turns
            and result["sessions_with_assistant_message"] == turns,
        }
        result["checks"] = checks
        result["passed"] = all(checks.values())
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                result["exit_code"] = proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument(
        "--mix",
        choices=sorted(MIXES),
        default="all",
        help="all: arithmetic, small talk and a memory write every 4th turn; calc: no writes",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args()
    result = run(args.turns, args.warmup, args.keep, args.mix)
    w, e = result["at_warmup"], result["at_end"]
    print(f"soak: {args.turns} turns through the daemon in {result['turns_wall_s']} s")
    print(
        f"RSS {w['rss_kb'] / 1024:.1f} MB at turn {args.warmup} -> {e['rss_kb'] / 1024:.1f} MB "
        f"at the end ({result['rss_growth_percent']:+.2f} %, limit +10 %)"
    )
    print(
        f"  private {w['anon_kb'] / 1024:.1f} -> {e['anon_kb'] / 1024:.1f} MB "
        f"({result['anon_growth_percent']:+.2f} %), file-backed {w['file_kb'] / 1024:.1f} -> "
        f"{e['file_kb'] / 1024:.1f} MB"
    )
    print(f"RSS (MB) by turn: {result['rss_mb_by_turn']}")
    print(f"file descriptors {w['fds']} -> {e['fds']}; threads {w['threads']} -> {e['threads']}")
    print(
        f"traced turns {result['traced_turns']}/{args.turns}; sessions with user and assistant "
        f"messages {result['sessions_with_user_message']}/"
        f"{result['sessions_with_assistant_message']}"
    )
    for name, ok in result["checks"].items():
        print(f"  {'ok  ' if ok else 'FAIL'} {name}")
    if args.json:
        print(json.dumps(result))
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
