"""Time to first token: from the endpoint's first streamed chunk to our first printed one.

A streaming chat-completions server runs in this process (server-sent events, OpenAI's
chunk shape); every streamed reply waits `--delay` seconds, then sends its first chunk
(which already carries answer text) and notes the moment it was flushed to the socket,
then the rest. Three paths are timed from that moment, all on this process's monotonic
clock (CLOCK_MONOTONIC, system-wide on Linux, so a child's output read here is on the
same clock):

- `sdk`: `OpenAIChatModel.complete(..., on_delta=...)` in this process: the first
  `on_delta` call. The floor: the openai SDK's HTTP read and SSE parsing, plus ours.
- `cli`: `assistant ask` in a child process (no daemon) whose stdout is a pseudo-terminal;
  the first answer bytes read from it. Adds the loop, its event, the terminal view and
  the pty write.
- `daemon`: the same command while a daemon owns the data directory: the turn runs there
  and its events come back as NDJSON lines (`POST /ask/stream`). Adds the event's hop to
  the API's event loop, the chunked HTTP write and the client's line read.

    python bench/ttft.py [--runs 50] [--delay 0.3] [--json]

Target (issue 12): the median of `cli` and of `daemon` <= 30 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

FIRST_PIECE = "Hello"
REST = [" there,", " this", " is", " a", " streamed", " answer."]


class StreamingServer:
    """Streams every `stream: true` request; `first_sent` holds each first-chunk time."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.first_sent: list[float] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"] or 0)))
                if not body.get("stream"):  # memory work (summary, extraction): JSON
                    payload = json.dumps(_completion('{"conclusions": []}')).encode()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                self.wfile.flush()
                time.sleep(server.delay_s)
                pieces = [{"role": "assistant", "content": FIRST_PIECE}]
                pieces += [{"content": piece} for piece in REST]
                for n, delta in enumerate(pieces):
                    self._event(_chunk(delta, None))
                    if n == 0:
                        with server._lock:
                            server.first_sent.append(time.monotonic())
                    time.sleep(0.005)
                self._event(_chunk({}, "stop"))
                if (body.get("stream_options") or {}).get("include_usage"):
                    usage = {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58}
                    self._event({**_chunk({}, None), "choices": [], "usage": usage})
                self._write(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

            def _event(self, data: dict[str, Any]) -> None:
                self._write(f"data: {json.dumps(data)}\n\n".encode())

            def _write(self, event: bytes) -> None:
                self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                self.wfile.flush()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def last_first_sent(self, count_before: int, timeout_s: float = 60.0) -> float:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                if len(self.first_sent) > count_before:
                    return self.first_sent[count_before]
            time.sleep(0.001)
        raise RuntimeError("the server never sent a first chunk")


def _chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": "bench",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def _completion(content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "bench",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58},
    }


def _env(home: Path, server: StreamingServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(
        ASSISTANT_HOME=str(home),
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="bench",
        ASSISTANT_MODEL="bench",
        NO_PROXY="127.0.0.1,localhost",
    )
    return env


def time_sdk(server: StreamingServer, runs: int) -> list[float]:
    from assistant.config import load_settings
    from assistant.openai_model import OpenAIChatModel

    settings = load_settings({"OPENAI_BASE_URL": server.base_url, "ASSISTANT_MODEL": "bench"})
    model = OpenAIChatModel(settings.model)
    gaps = []
    for _ in range(runs):
        before = len(server.first_sent)
        seen: list[float] = []
        model.complete(
            [{"role": "user", "content": "hello"}],
            None,
            temperature=0.0,
            timeout_s=30.0,
            on_delta=lambda text, seen=seen: seen.append(time.monotonic()) if not seen else None,
        )
        gaps.append(seen[0] - server.last_first_sent(before))
    return gaps


def _first_output(env: dict[str, str], session: str) -> tuple[float, str]:
    """Run `assistant ask` with stdout on a pty; the time its first bytes arrive."""
    master, slave = os.openpty()
    child = subprocess.Popen(
        [sys.executable, "-m", "assistant", "ask", "--session", session, "hello"],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    os.close(slave)
    first: float | None = None
    output = b""
    try:
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                raise RuntimeError("no output within 60 s")
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            if first is None:
                first = time.monotonic()
            output += data
    finally:
        child.wait(timeout=60)
        os.close(master)
    if first is None or child.returncode != 0:
        raise RuntimeError(f"assistant ask failed ({child.returncode}): {output!r}")
    return first, output.decode("utf-8", errors="replace")


def time_cli(server: StreamingServer, env: dict[str, str], runs: int, tag: str) -> list[float]:
    gaps = []
    for n in range(runs):
        before = len(server.first_sent)
        printed, output = _first_output(env, f"{tag}-{n}")
        if not output.startswith(FIRST_PIECE):
            raise RuntimeError(f"unexpected first output: {output!r}")
        gaps.append(printed - server.last_first_sent(before))
    return gaps


def start_daemon(env: dict[str, str], home: Path) -> subprocess.Popen[bytes]:
    log = (home.parent / "daemon.log").open("wb")
    daemon = subprocess.Popen(
        [sys.executable, "-m", "assistant", "daemon"],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if json.loads((home / "api.json").read_text())["pid"] == daemon.pid:
                return daemon
        except (OSError, ValueError, KeyError):
            pass
        if daemon.poll() is not None:
            raise RuntimeError("the daemon exited while starting")
        time.sleep(0.2)
    raise RuntimeError("the daemon did not start")


def summary(gaps: list[float]) -> dict[str, float]:
    ms = sorted(g * 1000 for g in gaps)
    return {
        "runs": len(ms),
        "median_ms": round(statistics.median(ms), 2),
        "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 2),
        "min_ms": round(ms[0], 2),
        "max_ms": round(ms[-1], 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--delay", type=float, default=0.3, help="seconds before the first chunk")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = StreamingServer(args.delay)
    root = Path(tempfile.mkdtemp(prefix="bench-ttft-"))
    home = root / "home"
    home.mkdir()
    env = _env(home, server)
    results: dict[str, Any] = {"delay_s": args.delay}
    try:
        results["sdk"] = summary(time_sdk(server, args.runs))
        results["cli"] = summary(time_cli(server, env, args.runs, "cli"))
        daemon = start_daemon(env, home)
        try:
            results["daemon"] = summary(time_cli(server, env, args.runs, "daemon"))
        finally:
            daemon.terminate()
            daemon.wait(timeout=60)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    for name in ("sdk", "cli", "daemon"):
        r = results[name]
        print(
            f"{name:<7} median {r['median_ms']:6.2f} ms  p90 {r['p90_ms']:6.2f}  "
            f"min {r['min_ms']:6.2f}  max {r['max_ms']:6.2f}  ({r['runs']} runs)"
        )
    if args.json:
        print(json.dumps(results))
    ok = results["cli"]["median_ms"] <= 30 and results["daemon"]["median_ms"] <= 30
    print("target (cli and daemon medians <= 30 ms):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
