"""Deferred writes (memory.db.Database.defer): in order, never lost by the process that
made them, and on disk by their deadline without help."""

from __future__ import annotations

import sqlite3
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
