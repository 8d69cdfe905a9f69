"""Deferred writes (memory.db.Database.defer): in order, never lost by the process that
made them, and on disk by their deadline without help."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from polling import wait_for

from memory.db import Database
from memory.errors import StorageError


def _database(tmp_path: Path) -> Database:
    database = Database(tmp_path / "x.db")
    database.write("CREATE TABLE log (id INTEGER PRIMARY KEY, text TEXT)")
    return database


def _on_disk(tmp_path: Path) -> list[str]:
    with sqlite3.connect(tmp_path / "x.db") as conn:
        return [row[0] for row in conn.execute("SELECT text FROM log ORDER BY id")]


INSERT = "INSERT INTO log (text) VALUES (?)"


def test_deferred_rows_commit_before_a_later_write_and_keep_their_order(tmp_path: Path) -> None:
    database = _database(tmp_path)
    database.defer([(INSERT, ["first"]), (INSERT, ["second"])], within_s=3600)
    assert _on_disk(tmp_path) == []  # another process does not see them yet
    database.write(INSERT, ["third"])
    assert _on_disk(tmp_path) == ["first", "second", "third"]
    database.close()


def test_this_process_reads_what_it_deferred(tmp_path: Path) -> None:
    database = _database(tmp_path)
    database.defer([(INSERT, ["mine"])], within_s=3600)
    assert [row["text"] for row in database.query("SELECT text FROM log")] == ["mine"]
    database.close()


def test_the_flusher_commits_by_the_deadline_without_another_write(tmp_path: Path) -> None:
    database = _database(tmp_path)
    database.defer([(INSERT, ["alone"])], within_s=0.05)
    wait_for(lambda: _on_disk(tmp_path) == ["alone"], "the flusher to commit the row")
    database.close()


def test_close_commits_what_is_deferred(tmp_path: Path) -> None:
    database = _database(tmp_path)
    database.defer([(INSERT, ["last words"])], within_s=3600)
    database.close()
    assert _on_disk(tmp_path) == ["last words"]


def test_a_failed_commit_keeps_the_deferred_rows_for_the_next_one(tmp_path: Path) -> None:
    database = _database(tmp_path)
    database.defer([(INSERT, ["kept"])], within_s=3600)
    with pytest.raises(StorageError, match="no such table"):
        database.write("INSERT INTO missing (x) VALUES (1)")
    assert _on_disk(tmp_path) == []
    database.write(INSERT, ["after"])
    assert _on_disk(tmp_path) == ["kept", "after"]
    database.close()


def test_zero_deadline_writes_at_once(tmp_path: Path) -> None:
    database = _database(tmp_path)
    database.defer([(INSERT, ["now"])], within_s=0)
    assert _on_disk(tmp_path) == ["now"]
    database.close()


def test_a_statement_can_take_its_values_when_it_is_committed(tmp_path: Path) -> None:
    """A row that keeps changing while it waits is written once, as it is at the commit."""
    database = _database(tmp_path)
    state = {"text": "draft"}
    database.defer([(INSERT, lambda: [state["text"]])], within_s=3600)
    state["text"] = "final"
    database.flush()
    assert _on_disk(tmp_path) == ["final"]
    database.close()


def test_flush_returns_only_once_a_commit_in_progress_is_on_disk(tmp_path: Path) -> None:
    """The flusher may have taken the queue already: flush still waits for its commit,
    so what a caller flushed (an answer it is about to acknowledge) is on disk."""
    database = _database(tmp_path)
    building, release = threading.Event(), threading.Event()

    def values() -> list[str]:
        building.set()
        release.wait(timeout=30)
        return ["answer"]

    database.defer([(INSERT, values)], within_s=0.01)
    wait_for(building.is_set, "the flusher to start committing")
    seen_after_flush: list[list[str]] = []
    caller = threading.Thread(
        target=lambda: (database.flush(), seen_after_flush.append(_on_disk(tmp_path)))
    )
    caller.start()
    caller.join(timeout=0.5)  # a flush that did not wait would be done by now
    release.set()
    caller.join(timeout=30)
    assert seen_after_flush == [["answer"]]
    database.close()
