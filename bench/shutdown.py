"""SIGTERM with a model request in flight (issue 13, item 12): how long the daemon takes
to exit, and what the asking client and the trace say.

Runs the local fake OpenAI server of the tests (`tests/fake_openai.py`) answering after
600 s, a real `python -m assistant daemon` pointed at it, and per try: one `assistant ask`
through the daemon; once its request reached the endpoint, SIGTERM; the time from the
signal to the daemon's exit. Checks the exit status (0), that the client saw `cancelled`
and no "Internal Server Error", that the log has no traceback, and that the trace says
`cancelled`.

    python bench/shutdown.py [--tries 10] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fake_openai import FakeOpenAI, completion, delay  # noqa: E402


def one_try(root: Path, n: int, fake: FakeOpenAI) -> dict[str, Any]:
    home = root / f"home-{n}"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(
        ASSISTANT_HOME=str(home),
        OPENAI_BASE_URL=fake.base_url,
        OPENAI_API_KEY="test",
        ASSISTANT_MODEL="fake-model",
        NO_PROXY="127.0.0.1,localhost,::1",
    )
    fake.script(delay(600, completion("never")))
    seen = len(fake.requests)
    log = (root / f"daemon-{n}.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "assistant", "daemon"],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
    )
    try:
        while not (home / "api.json").exists():
            if daemon.poll() is not None:
                raise RuntimeError((root / f"daemon-{n}.log").read_text())
            time.sleep(0.05)
        ask = subprocess.Popen(
            [sys.executable, "-m", "assistant", "ask", "--session", "slow", "a long story"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )
        while len(fake.requests) <= seen:
            time.sleep(0.01)
        signalled = time.perf_counter()
        daemon.send_signal(signal.SIGTERM)
        code = daemon.wait(timeout=120)
        exit_s = time.perf_counter() - signalled
        out, err = ask.communicate(timeout=120)
    finally:
        if daemon.poll() is None:
            daemon.kill()
            daemon.wait()
        log.close()
    trace = subprocess.run(
        [sys.executable, "-m", "assistant", "trace", "last", "--session", "slow", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
    )
    logged = (root / f"daemon-{n}.log").read_text() + (home / "daemon.log").read_text()
    if os.environ.get("SHUTDOWN_BENCH_LOG"):
        print(logged, file=sys.stderr)
    return {
        "exit_s": round(exit_s, 3),
        "exit_code": code,
        "client_saw_cancelled": "cancelled" in err,
        "internal_server_error": "Internal Server Error" in out + err,
        "traceback_in_log": "Traceback" in logged,
        "trace_stop_reason": json.loads(trace.stdout)["stop_reason"] if trace.stdout else None,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tries", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    fake = FakeOpenAI()
    try:
        with tempfile.TemporaryDirectory(prefix="shutdown-") as tmp:
            tries = [one_try(Path(tmp), n, fake) for n in range(args.tries)]
    finally:
        fake.close()
    times = [t["exit_s"] for t in tries]
    report = {
        "tries": len(tries),
        "exit_s_median": round(statistics.median(times), 3),
        "exit_s_max": max(times),
        "clean": sum(
            t["exit_code"] == 0
            and t["client_saw_cancelled"]
            and not t["internal_server_error"]
            and not t["traceback_in_log"]
            and t["trace_stop_reason"] == "cancelled"
            for t in tries
        ),
        "runs": tries,
    }
    print(
        f"SIGTERM with a request in flight: exit median {report['exit_s_median']} s, "
        f"max {report['exit_s_max']} s; clean {report['clean']}/{report['tries']}",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps(report))
    return 0 if report["clean"] == report["tries"] else 1


if __name__ == "__main__":
    sys.exit(main())
