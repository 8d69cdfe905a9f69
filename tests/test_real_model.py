"""Integration tests against a real OpenAI-compatible server (opt-in: `-m real_model`).

They run only when `ASSISTANT_REAL_MODEL_URL` names a chat-completions endpoint (for
example `http://127.0.0.1:8000/v1` of `python -m llama_cpp.server --chat_format
chatml-function-calling`, see bench/real_server.py); otherwise they are skipped, so the
default suite and CI never need a server. `ASSISTANT_REAL_MODEL_NAME` (default
`local-model`) and `ASSISTANT_REAL_MODEL_KEY` are passed on when set.

Why they exist: everything else is proven against our own fake server, and the first
contact with a real one broke on things no fake reproduced. These drive the real CLI and
daemon in subprocesses, through a counting proxy, and assert what a user would notice
with any model, however weak: no request the server rejects, no placeholder or internal
note in an answer, no session that a later "hello" cannot continue, at most one request
of ours at the server at a time, and every turn inside its time budget.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from counting_proxy import CountingProxy  # noqa: E402

REAL_URL = os.environ.get("ASSISTANT_REAL_MODEL_URL", "")
TURN_TIMEOUT_S = 180.0
PLACEHOLDERS = ("(the model returned an empty answer)", "[runtime note]", "[grounding check]")

pytestmark = [
    pytest.mark.real_model,
    pytest.mark.skipif(not REAL_URL, reason="set ASSISTANT_REAL_MODEL_URL to run against a server"),
]


@pytest.fixture
def proxy() -> Iterator[CountingProxy]:
    upstream = REAL_URL.rstrip("/").removesuffix("/v1")
    counting = CountingProxy(upstream, timeout_s=3 * TURN_TIMEOUT_S)
    try:
        yield counting
    finally:
        counting.close()


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "config.toml").write_text(
        f"[loop]\nturn_timeout_s = {TURN_TIMEOUT_S}\n"
        "[memory]\ncompress_after_turns = 3\nkeep_turns = 1\n",
        encoding="utf-8",
    )
    return tmp_path


def _env(home: Path, proxy: CountingProxy) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(
        ASSISTANT_HOME=str(home),
        OPENAI_BASE_URL=proxy.base_url,
        OPENAI_API_KEY=os.environ.get("ASSISTANT_REAL_MODEL_KEY", "not-needed"),
        ASSISTANT_MODEL=os.environ.get("ASSISTANT_REAL_MODEL_NAME", "local-model"),
        NO_PROXY="127.0.0.1,localhost,::1",
    )
    return env


def _ask(home: Path, proxy: CountingProxy, text: str, session: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", "--json", "--session", session, text],
        capture_output=True,
        text=True,
        env=_env(home, proxy),
        timeout=TURN_TIMEOUT_S + 240,
        cwd=ROOT,
    )
    assert done.stdout.strip(), f"no JSON on stdout (exit {done.returncode}): {done.stderr}"
    outcome = json.loads(done.stdout)
    if outcome.get("error_code") == "MODEL_EMPTY_REPLY":
        # a weak model's silence, also when asked again without tools: said in one line,
        # nothing stored; the product's part is that it is honest about it
        assert done.returncode != 0 and "error:" in done.stderr, done.stderr
        return outcome
    assert outcome["stop_reason"] != "model_error", outcome["stop_detail"]
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    for marker in PLACEHOLDERS:
        assert marker not in outcome["answer"], outcome["answer"]
    return outcome


def _turn_seconds(home: Path) -> list[float]:
    with sqlite3.connect(home / "assistant.db") as db:
        rows = db.execute("SELECT finished_at - started_at FROM turns").fetchall()
    return [row[0] for row in rows if row[0] is not None]


def _capability_probe(body: dict[str, Any]) -> str | None:
    """The request shape a refusal taught the product about, if it was one it learns from
    (issue 12: a streamed tool request, `json_schema`), else None."""
    try:
        request = json.loads(body["request"])
    except ValueError:
        return None
    if body["status"] == 200 and request.get("stream") and request.get("tools"):
        return "streamed tool request"
    kind = (request.get("response_format") or {}).get("type")
    if body["status"] in (400, 422, 500) and kind == "json_schema":
        return "json_schema"
    return None


def _assert_clean_wire(proxy: CountingProxy) -> None:
    """No request refused because of what we sent, except each capability the product
    learns once per data directory (kept in endpoints.json, so never asked twice)."""
    wire = proxy.report()
    probes = Counter(_capability_probe(body) for body in proxy.full_bodies)
    assert wire["failed"] == len(proxy.full_bodies), wire
    assert None not in probes, [b for b in proxy.full_bodies if not _capability_probe(b)][:2]
    assert all(count == 1 for count in probes.values()), probes
    assert wire["max_in_flight"] <= 1, wire
    assert wire["abandoned"] == 0, wire


def test_a_tool_turn_is_accepted_and_the_session_stays_usable(home, proxy):
    first = _ask(home, proxy, "Use the calculator tool: what is 17*5+4?", "tools")
    if any(
        call["tool"] == "calc_evaluate" and call["status"] == "ok" for call in first["tool_calls"]
    ):
        assert "89" in first["answer"], first["answer"]
    _ask(home, proxy, "hello", "tools")
    _assert_clean_wire(proxy)
    assert all(seconds <= TURN_TIMEOUT_S for seconds in _turn_seconds(home))


def test_a_plain_question_gets_an_answer_without_tools_noise(home, proxy):
    outcome = _ask(home, proxy, "Say hello and name one colour.", "plain")
    assert outcome["answer"].strip() or outcome["error_code"] == "MODEL_EMPTY_REPLY"
    _assert_clean_wire(proxy)


def test_a_session_that_compresses_keeps_answering(home, proxy):
    lines = [
        "My name is Sam and I live in Lyon.",
        "What is 12 times 7?",
        "I prefer tea over coffee.",
        "Name a red fruit.",
        "What is 100 divided by 8?",
    ]
    for line in lines:
        _ask(home, proxy, line, "long")
    _ask(home, proxy, "hello", "long")
    _assert_clean_wire(proxy)
    with sqlite3.connect(home / "assistant.db") as db:
        summaries = [row[0] for row in db.execute("SELECT text FROM summaries")]
    for text in summaries:  # a stored summary is a summary, not a transcript dump
        assert not any(
            line.lstrip().lower().startswith(("user:", "assistant:")) for line in text.splitlines()
        ), text


def test_three_concurrent_asks_through_the_daemon_reach_the_server_one_at_a_time(home, proxy):
    env = _env(home, proxy)
    daemon = subprocess.Popen(
        [sys.executable, "-m", "assistant", "daemon"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 120
        while not (home / "api.json").exists():
            assert daemon.poll() is None and time.monotonic() < deadline, "no daemon"
            time.sleep(0.2)
        outcomes: list[dict[str, Any]] = []
        errors: list[BaseException] = []

        def one(text: str, session: str) -> None:
            try:
                outcomes.append(_ask(home, proxy, text, session))
            except (AssertionError, OSError, ValueError, subprocess.SubprocessError) as exc:
                errors.append(exc)

        threads = [
            threading.Thread(target=one, args=(text, f"d{n}"))
            for n, text in enumerate(["What is 6*7?", "Say hi.", "What is 100 minus 11?"])
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=3 * TURN_TIMEOUT_S + 300)
        assert not errors, errors[0]
        assert [o["served_by"] for o in outcomes] == ["daemon"] * 3
        _assert_clean_wire(proxy)
    finally:
        daemon.send_signal(signal.SIGTERM)
        try:
            daemon.wait(timeout=120)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=30)
