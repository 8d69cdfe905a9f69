"""Fault injection (issue 6, item 3; SPEC §9): a misbehaving model endpoint and broken
storage. Every case ends in a clear error naming the problem (or a named stop reason),
and what was stored before the fault is still there afterwards.

Cases covered elsewhere (see docs/RELIABILITY.md): unknown tools, 500s, timeouts and the
never-ending tool caller in test_loop_openai.py and test_loop_bounds.py; two daemons on
one data directory and a control-API request without the token in test_daemon.py.

Read-only and full-disk faults are injected into SQLite itself (`PRAGMA query_only`,
`PRAGMA max_page_count`): the tests run as root on the CI machine, where chmod cannot
take write access away, and a real full disk needs a mount. SQLite then fails with its own
"attempt to write a readonly database" and "database or disk is full".
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, calls, completion, http_error

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.outcome import StopReason
from memory.errors import StorageError
from tools.calc import calc_evaluate

CLI_TIMEOUT_S = 180


def stored(assistant: Assistant, session: str) -> list[tuple[str, str | None]]:
    rows = assistant.database.query(
        "SELECT role, content FROM messages WHERE session = ? ORDER BY id", [session]
    )
    return [(row["role"], row["content"]) for row in rows]


def rows_in(path: Path, sql: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return db.execute(sql).fetchall()


def cli(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    clean.update(env or {}, ASSISTANT_HOME=str(home))
    return subprocess.run(
        [sys.executable, "-m", "assistant", *args],
        capture_output=True,
        text=True,
        env=clean,
        timeout=CLI_TIMEOUT_S,
    )


# -- the model endpoint ------------------------------------------------------------------------


def test_a_429_storm_that_outlasts_the_retries_is_a_rate_limit_error_and_keeps_history(
    fake_openai: FakeOpenAI, make_assistant: Callable[..., Assistant]
) -> None:
    fake_openai.script(completion("Hello!"), *[http_error(429, "slow down") for _ in range(3)])
    assistant = make_assistant(tools=[calc_evaluate], max_retries=2)
    first = assistant.ask("hi", session="s1")
    assert first.stop_reason is StopReason.FINAL

    second = assistant.ask("and again", session="s1")

    assert len(fake_openai.requests) == 4  # the first turn, then a try and two retries
    assert second.stop_reason is StopReason.MODEL_ERROR and not second.ok
    assert second.error_code == "MODEL_RATE_LIMITED"
    assert "429" in second.stop_detail and fake_openai.base_url in second.stop_detail
    assert stored(assistant, "s1")[:2] == [("user", "hi"), ("assistant", "Hello!")]
    assert assistant.traces.turn(second.turn_id)["error_code"] == "MODEL_RATE_LIMITED"


class BrokenBodyServer:
    """An endpoint that answers 200 with a body that is not a chat completion."""

    def __init__(self, body: bytes) -> None:
        self.hits = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server.hits += 1
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture(params=[b'{"id": "chatcmpl-1", "choices": [{"index": 0, "mess', b"<html>oops"])
def broken_endpoint(request: pytest.FixtureRequest) -> Iterator[BrokenBodyServer]:
    server = BrokenBodyServer(request.param)
    try:
        yield server
    finally:
        server.close()


def test_a_malformed_or_truncated_reply_body_is_a_bad_reply_error(
    broken_endpoint: BrokenBodyServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", broken_endpoint.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    monkeypatch.setenv("ASSISTANT_MODEL", "fake-model")
    settings = load_settings()
    settings.model.max_retries = 0
    assistant = Assistant(settings, tools=[calc_evaluate])
    try:
        outcome = assistant.ask("hi", session="s1")
        assert outcome.stop_reason is StopReason.MODEL_ERROR and not outcome.ok
        assert outcome.error_code in {"MODEL_BAD_REPLY", "MODEL_ERROR"}
        assert broken_endpoint.base_url in outcome.stop_detail
        assert stored(assistant, "s1")[0] == ("user", "hi")
    finally:
        assistant.close()


def test_one_megabyte_of_arguments_is_refused_to_the_model_and_the_turn_ends(
    fake_openai: FakeOpenAI, make_assistant: Callable[..., Assistant]
) -> None:
    huge = "1+" * 500_000 + "1"
    fake_openai.script(
        calls(("calc_evaluate", {"expression": huge})),
        completion("That expression is too big for me."),
    )
    assistant = make_assistant(tools=[calc_evaluate])
    outcome = assistant.ask("add a million ones", session="big")

    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "That expression is too big for me."
    [call] = outcome.tool_calls
    assert call.status != "ok"
    [result] = [m for m in fake_openai.requests[1]["messages"] if m["role"] == "tool"]
    assert len(result["content"]) < 20_000  # the error goes back, not the megabyte
    assert json.loads(result["content"])["error"]
    assert stored(assistant, "big")[-1] == ("assistant", "That expression is too big for me.")


def test_a_message_longer_than_a_conclusion_is_answered_not_a_traceback(tmp_path: Path) -> None:
    assistant = Assistant(load_settings())  # offline: rules extract the conclusions
    try:
        refused = assistant.ask("remember that item 0 is " + "x" * 2000, session="long")
        assert refused.ok and "a memory holds at most 1000 characters" in refused.answer
        plan = assistant.ask("my plan is " + "word " * 400, session="plan")
        assert plan.ok
        assistant.end_session("plan")  # extraction skips it instead of failing
        assert assistant.memory is not None and assistant.memory.store.list() == []
        assert stored(assistant, "long")[0][1].startswith("remember that item 0 is xxx")
    finally:
        assistant.close()


# -- storage -----------------------------------------------------------------------------------


@pytest.fixture
def remembered(tmp_path: Path) -> Iterator[Assistant]:
    """An offline assistant that has answered one turn and remembered one conclusion."""
    assistant = Assistant(load_settings())
    try:
        assert "42" in assistant.ask("15加27等于多少", session="s1").answer
        assistant.ask("remember that the boiler was serviced in March", session="s2")
        yield assistant
    finally:
        assistant.close()


def assert_nothing_lost(home: Path) -> None:
    database = home / "assistant.db"
    sessions = rows_in(database, "SELECT session, role, content FROM messages ORDER BY id")
    assert ("s1", "user", "15加27等于多少") in sessions
    assert ("s1", "assistant", "15+27 = 42。") in sessions
    assert rows_in(database, "SELECT text FROM conclusions WHERE status = 'active'") == [
        ("the boiler was serviced in March",)
    ]


def test_a_read_only_database_is_named_and_loses_nothing(
    remembered: Assistant, tmp_path: Path
) -> None:
    remembered.database.db.conn.execute("PRAGMA query_only = ON")  # see the module docstring
    with pytest.raises(StorageError) as failed:
        remembered.ask("再加 8 呢", session="s1")
    message = str(failed.value)
    assert str(tmp_path / "assistant.db") in message
    assert "is read-only" in message and "must be writable" in message
    remembered.database.db.conn.execute("PRAGMA query_only = OFF")
    assert_nothing_lost(tmp_path)


def test_a_full_disk_is_named_and_loses_nothing(remembered: Assistant, tmp_path: Path) -> None:
    conn = remembered.database.db.conn
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # no room for one more page
    with pytest.raises(StorageError) as failed:
        for n in range(20):
            remembered.ask(f"{n}加{'9' * 3000}等于多少", session="full")
    message = str(failed.value)
    assert str(tmp_path / "assistant.db") in message
    assert "disk is full" in message and "free some disk space" in message
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert_nothing_lost(tmp_path)
    assert remembered.ask("15加27等于多少", session="after").answer == "15+27 = 42。"


def test_a_corrupt_database_file_is_named_with_what_to_do(tmp_path: Path) -> None:
    database = tmp_path / "assistant.db"
    garbage = b"this is not an SQLite database\n" * 200
    database.write_bytes(garbage)

    result = cli(tmp_path, "ask", "15加27等于多少")

    assert result.returncode != 0 and result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ")
    assert str(database) in result.stderr
    assert "is corrupt" in result.stderr and "move it aside" in result.stderr
    assert database.read_bytes() == garbage  # left as it was, for the user to rescue


def test_a_database_locked_by_another_process_is_named(
    remembered: Assistant, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered.close()
    holder = sqlite3.connect(tmp_path / "assistant.db", isolation_level=None)
    real_connect = sqlite3.connect

    def impatient(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        kwargs["timeout"] = 0.2  # the busy timeout (10 s) would only make the test slow
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", impatient)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StorageError) as failed:
            second = Assistant(load_settings())
            try:
                second.ask("再加 8 呢", session="s1")
            finally:
                second.close()
        message = str(failed.value)
        assert str(tmp_path / "assistant.db") in message
        assert "is locked by another process" in message
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert_nothing_lost(tmp_path)


REOPEN = """
import json
from assistant.app import Assistant
from assistant.config import load_settings
assistant = Assistant(load_settings())
try:
    found = assistant.memory.store.recall("boiler maintenance", 1)
    print(json.dumps({
        "vector_ids": sorted(assistant.memory.vectors.ids()),
        "recalled": [c.id for c in found],
        "answer": assistant.ask("what do you know about the boiler?", session="s3").answer,
    }))
finally:
    assistant.close()
"""


def test_a_deleted_chroma_folder_is_rebuilt_from_sqlite_on_open(
    remembered: Assistant, tmp_path: Path
) -> None:
    assert remembered.memory is not None
    [kept] = remembered.memory.store.recall("boiler", 1)
    remembered.close()
    shutil.rmtree(tmp_path / "chroma")

    # the next run is another process (Chroma caches an open folder per process)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env["ASSISTANT_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", REOPEN],
        capture_output=True,
        text=True,
        env=env,
        timeout=CLI_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr
    reopened = json.loads(done.stdout.strip().splitlines()[-1])
    assert reopened["vector_ids"] == [kept.id]
    assert reopened["recalled"] == [kept.id]
    assert "serviced in March" in reopened["answer"]
    assert_nothing_lost(tmp_path)


def test_a_chroma_index_out_of_step_is_repaired_both_ways_on_open(
    remembered: Assistant, tmp_path: Path
) -> None:
    assert remembered.memory is not None
    vectors = remembered.memory.vectors
    [kept] = remembered.memory.store.recall("boiler", 1)
    vectors.delete([kept.id])
    vectors.upsert(["c_stray"], ["a conclusion that was never stored"])
    remembered.close()

    reopened = Assistant(load_settings())
    try:
        assert reopened.memory is not None
        assert reopened.memory.vectors.ids() == {kept.id}
    finally:
        reopened.close()


# -- the daemon keeps serving --------------------------------------------------------------------


def test_the_daemon_answers_the_next_ask_after_the_endpoint_fails(
    fake_openai: FakeOpenAI, tmp_path: Path
) -> None:
    from test_daemon import DaemonProcess, make_vault

    fake_openai.script(
        http_error(500, "upstream exploded", headers={"x-should-retry": "false"}),
        completion("Still here."),
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.toml").write_text("[model]\nmax_retries = 0\n", encoding="utf-8")
    daemon = DaemonProcess(
        home,
        make_vault(tmp_path / "vault"),
        {
            "OPENAI_BASE_URL": fake_openai.base_url,
            "OPENAI_API_KEY": "test",
            "ASSISTANT_MODEL": "fake-model",
        },
    )
    try:
        daemon.start()
        failed = daemon.cli("ask", "--session", "d1", "hello")
        assert failed.returncode != 0 and "Traceback" not in failed.stderr
        assert "HTTP 500" in failed.stderr and "upstream exploded" in failed.stderr

        answered = daemon.cli_json("ask", "--session", "d1", "hello again")
        assert answered["served_by"] == "daemon" and answered["answer"] == "Still here."
        assert daemon.cli_json("status")["daemon"]["pid"] == daemon.pid
        assert daemon.terminate() == 0, daemon.stderr()
    finally:
        daemon.close()
    messages = rows_in(home / "assistant.db", "SELECT role, content FROM messages")
    assert ("user", "hello") in messages and ("assistant", "Still here.") in messages
