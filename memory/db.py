"""Opening SQLite files, and named, append-only migrations (after simonw/llm).

Every store opens its file through `open_database`, which sets WAL mode and a busy
timeout and turns SQLite's terse failures into a `StorageError` naming the file.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import sqlite_utils

from memory.errors import StorageError

Migration = Callable[[sqlite_utils.Database], None]


class Migrations:
    """An ordered list of named steps; applying it twice changes nothing."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self._steps: list[tuple[str, Migration]] = []

    def __call__(self, step: Migration) -> Migration:
        self._steps.append((step.__name__, step))
        return step

    def apply(self, db: sqlite_utils.Database) -> list[str]:
        db.execute(
            "CREATE TABLE IF NOT EXISTS _migrations "
            "(scope TEXT, name TEXT, applied_at REAL, PRIMARY KEY (scope, name))"
        )
        done = {
            row[0]
            for row in db.execute("SELECT name FROM _migrations WHERE scope = ?", [self.scope])
        }
        applied = []
        for name, step in self._steps:
            if name in done:
                continue
            with db.conn:
                step(db)
                db.execute(
                    "INSERT INTO _migrations (scope, name, applied_at) VALUES (?, ?, ?)",
                    [self.scope, name, time.time()],
                )
            applied.append(name)
        return applied


def describe_sqlite_error(path: Path, exc: BaseException) -> str:
    text = str(exc)
    if "not a database" in text or "malformed" in text:
        return f"{path} is corrupt ({text}); move it aside to start fresh, or restore a backup"
    if "locked" in text or "busy" in text:
        return f"{path} is locked by another process ({text})"
    if "readonly" in text or "read-only" in text:
        return f"{path} is read-only ({text}); the data directory must be writable"
    if "disk is full" in text or "disk I/O" in text:
        return f"cannot write {path}: {text}; free some disk space"
    if "unable to open" in text:
        return f"cannot open {path} ({text}); check the data directory exists and is writable"
    return f"{path}: {text}"


Statement = tuple[str, Sequence[object]]


class OwnedLock:
    """A re-entrant lock that can say whether the calling thread holds it, so work that
    needs the database is not handed to a thread that would wait for this one."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._owner: int | None = None
        self._depth = 0

    def __enter__(self) -> OwnedLock:
        self._lock.acquire()
        self._owner = threading.get_ident()
        self._depth += 1
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._depth -= 1
        if self._depth == 0:
            self._owner = None
        self._lock.release()

    def held_by_me(self) -> bool:
        return self._owner == threading.get_ident()


class Database:
    """One SQLite file shared by the stores and threads of one process.

    Writes are serialised by a lock; `write_many` lets several stores commit related rows
    (a message and its trace) in one transaction.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = OwnedLock()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, check_same_thread=False, timeout=10.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            self.db = sqlite_utils.Database(conn)
        except (sqlite3.Error, OSError) as exc:
            raise StorageError(describe_sqlite_error(path, exc)) from exc

    def migrate(self, migrations: Migrations) -> list[str]:
        try:
            with self.lock:
                return migrations.apply(self.db)
        except sqlite3.Error as exc:
            raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def write(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run one statement in its own transaction; returns the last row id."""
        return self.write_many([(sql, params)])

    def write_many(self, statements: Iterable[Statement]) -> int:
        """Run statements in one transaction: all of them are stored, or none."""
        try:
            with self.lock, self.db.conn:
                lastrowid = 0
                for sql, params in statements:
                    lastrowid = self.db.conn.execute(sql, params).lastrowid or lastrowid
                return lastrowid
        except sqlite3.Error as exc:
            raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def update(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run one UPDATE/DELETE in its own transaction; returns how many rows it changed."""
        try:
            with self.lock, self.db.conn:
                return self.db.conn.execute(sql, params).rowcount
        except sqlite3.Error as exc:
            raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def query(self, sql: str, params: Sequence[object] = ()) -> list[dict]:
        try:
            with self.lock:  # plain cursor: sqlite-utils' query parses the SQL first
                cursor = self.db.conn.execute(sql, params)
                keys = [column[0] for column in cursor.description or ()]
                return [dict(zip(keys, row, strict=True)) for row in cursor]
        except sqlite3.Error as exc:
            raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def close(self) -> None:
        with self.lock:
            self.db.conn.close()
