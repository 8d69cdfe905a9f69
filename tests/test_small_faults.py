"""The smaller faults of issue 13 (item 13): each a clear one-line error, no traceback,
the same through the daemon's control API as in-process."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from clirun import run_cli
from starlette.testclient import TestClient

from assistant import commands
from assistant.daemon.api import create_app
from assistant.errors import CommandError
from assistant.traces import Recorder, TraceStore
from memory.db import Database
from memory.errors import StorageError
from memory.working import WorkingMemory

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "tok-small-faults"


def _clean(result: Any, code: int, *phrases: str) -> None:
    assert result.returncode == code, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, result.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


def test_a_config_file_that_is_not_utf8_is_named(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_bytes(b"[loop]\nmax_requests = 4 # caf\xe9\n")
    _clean(run_cli(tmp_path, "status"), 2, "config.toml", "not UTF-8")


@pytest.mark.parametrize("command", [("status",), ("trace", "last"), ("memory", "list")])
def test_assistant_home_pointing_at_a_file_is_named(tmp_path: Path, command: tuple) -> None:
    home = tmp_path / "not-a-folder"
    home.write_text("oops", encoding="utf-8")
    _clean(run_cli(home, *command), 2, str(home), "is a file, not a folder")


def test_a_garbage_jobs_db_is_named(tmp_path: Path) -> None:
    (tmp_path / "jobs.db").write_bytes(b"this is not a database at all " * 100)
    _clean(run_cli(tmp_path, "jobs", "list"), 1, "jobs.db is corrupt", "move it aside")
    assert (tmp_path / "jobs.db").read_bytes().startswith(b"this is not")  # left as it was


def test_a_storage_fault_while_saving_a_failed_turn_is_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A corrupt page meets the failed turn's last save: one line, no stack (old: a long
    traceback before the clear error)."""
    database = Database(tmp_path / "assistant.db")
    try:
        recorder = Recorder(TraceStore(database), WorkingMemory(database))

        def corrupt() -> None:
            raise StorageError(
                f"{tmp_path}/assistant.db is corrupt (database disk image is malformed)"
            )

        monkeypatch.setattr(database, "flush", corrupt)
        with caplog.at_level(logging.WARNING):
            recorder.save_what_ran()
    finally:
        monkeypatch.undo()
        database.close()
    [record] = [r for r in caplog.records if "failed turn" in r.getMessage()]
    assert "is corrupt" in record.getMessage() and not record.exc_info


def test_configuration_errors_exit_as_the_docs_say(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[loop]\nmax_requests = 0\n", encoding="utf-8")
    result = run_cli(tmp_path, "status")
    _clean(result, 2, "configuration", "max_requests")
    documented = (ROOT / "docs" / "RELIABILITY.md").read_text(encoding="utf-8")
    assert "a configuration problem is `error: configuration: <message>`, exit status 2" in (
        " ".join(documented.split())
    )


@pytest.mark.parametrize(
    "command",
    [
        ("memory", "search", "x", "-k", "-1"),
        ("memory", "list", "--limit", "-5"),
        ("memory", "list", "--limit", "0"),
        ("vault", "search", "x", "-k", "-3"),
        ("jobs", "history", "--limit", "-1"),
    ],
)
def test_negative_counts_are_refused_by_the_cli(tmp_path: Path, command: tuple) -> None:
    result = run_cli(tmp_path, *command)
    assert result.returncode == 2 and "must be at least 1" in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


def test_a_long_session_name_is_a_clean_error_in_process(tmp_path: Path) -> None:
    _clean(run_cli(tmp_path, "ask", "--session", "s" * 250, "hi"), 1, "1-200 characters")


# -- the same checks through the control API ------------------------------------------------


class NoServices:
    """The checks come before any service is used."""

    served_by = "daemon"

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"services.{name} was reached")


@pytest.fixture
def api() -> TestClient:
    client = TestClient(create_app(NoServices(), TOKEN), raise_server_exceptions=False)  # type: ignore[arg-type]
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    return client


@pytest.mark.parametrize(
    ("method", "path", "body", "phrase"),
    [
        ("GET", "/memory?status=bogus", None, "status must be one of"),
        ("GET", "/memory?limit=-1", None, "limit must be a whole number of at least 1"),
        ("GET", "/memory/search?query=x&k=-2", None, "k must be a whole number of at least 1"),
        ("GET", "/vault/search?query=x&k=0", None, "k must be"),
        ("GET", "/jobs/history?limit=-1", None, "limit must be"),
        ("GET", "/sessions?limit=-1", None, "limit must be"),
        ("POST", "/ask", {"text": "hi", "session": "s" * 250}, "1-200 characters"),
    ],
)
def test_the_control_api_refuses_the_same_way(
    api: TestClient, method: str, path: str, body: Any, phrase: str
) -> None:
    response = api.request(method, path, json=body)
    assert response.status_code == 400, response.text
    data = response.json()
    assert isinstance(data["detail"], str) and phrase in data["detail"]


def test_a_malformed_request_is_one_readable_line(api: TestClient) -> None:
    response = api.get("/memory/search?query=x&k=lots")
    assert response.status_code == 422
    data = response.json()
    assert data["error"] == "BAD_REQUEST" and isinstance(data["detail"], str)
    assert data["detail"].startswith("query k:") and "'lots'" in data["detail"]


def test_the_operations_check_before_touching_anything() -> None:
    with pytest.raises(CommandError, match="status must be one of"):
        commands.memory_list(NoServices(), "bogus")  # type: ignore[arg-type]
