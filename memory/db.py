"""Opening SQLite files, and named, append-only migrations (after simonw/llm).

Every store opens its file through `Database`, which sets WAL mode and a busy timeout
and turns SQLite's terse failures into a `StorageError` naming the file.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import sqlite_utils

from memory.errors import StorageError

log = logging.getLogger(__name__)
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


# Parameters may be a function that supplies them when the statement is committed: a row
# that keeps changing while it waits in the queue (a turn's trace) is then written once,
# with its latest state.
Params = Sequence[object] | Callable[[], Sequence[object]]
Statement = tuple[str, Params]


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
    (a message and its trace) in one transaction. `defer` lets rows that may wait a
    moment ride with the next commit (a commit costs far more than a row): they are
    committed before any later write, and by a background thread at their deadline if no
    write comes first, so they are never out of order and never unsaved for longer.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = OwnedLock()
        self._deferred: list[Statement] = []
        self._due = math.inf
        self._queue_lock = threading.Lock()  # taken bare on the hot path; _wake shares it
        self._wake = threading.Condition(self._queue_lock)
        self._flusher: threading.Thread | None = None
        self._flusher_until = math.inf  # when the flusher looks next (inf: when woken)
        self._busy_until = 0.0  # the flusher lingers while rows keep coming: no wake-ups
        self._closing = False
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)  # a data directory
            if not path.exists():  # private whatever the umask; SQLite gives -wal/-shm its mode
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
            conn = sqlite3.connect(path, check_same_thread=False, timeout=10.0)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # REFERENCES clauses document the links; enforcing them costs a parent lookup
            # per row (40 µs of a 0.25 ms turn's writes) and the parents are always written
            # first in the same transaction, which tests check with foreign_key_check
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
        """Run statements in one transaction, after any deferred ones: all are stored, or
        none (the deferred ones then stay queued)."""
        with self.lock:
            deferred = self._take_deferred()
            try:
                with self.db.conn:
                    lastrowid = 0
                    for sql, params in (*deferred, *statements):
                        values = params() if callable(params) else params
                        lastrowid = self.db.conn.execute(sql, values).lastrowid or lastrowid
                    return lastrowid
            except sqlite3.Error as exc:
                self._requeue(deferred)
                raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def defer(self, statements: Iterable[Statement], within_s: float) -> None:
        """Queue statements for the next commit, which happens within `within_s` at the
        latest (0: now). What a crash can lose is bounded by that deadline."""
        if within_s <= 0:
            self.write_many(statements)
            return
        with self._queue_lock:
            if self._closing:
                raise StorageError(f"{self.path} is closed")
            self._deferred.extend(statements)
            due = time.monotonic() + within_s
            self._due = min(self._due, due)
            self._busy_until = max(self._busy_until, due)
            if self._flusher is None:
                self._flusher = threading.Thread(
                    target=self._flush_when_due, name=f"flush {self.path.name}", daemon=True
                )
                self._flusher.start()
            elif self._due < self._flusher_until:
                self._flusher_until = self._due  # once: it may not run before the next call
                self._wake.notify()

    def flush(self) -> None:
        """Commit the deferred statements now: on return, every statement deferred before
        the call is on disk, including any the flusher thread is committing meanwhile."""
        with self.lock:
            if self._deferred:
                self.write_many(())

    def discard(self, statements: Iterable[Statement]) -> int:
        """Drop these statements (the very objects given to `defer`) if still queued:
        their work failed and was reported so, and must not land later. Waits for a
        commit in progress, which may put them back. Returns how many were dropped."""
        gone = {id(statement) for statement in statements}
        with self.lock, self._queue_lock:
            kept = [s for s in self._deferred if id(s) not in gone]
            dropped, self._deferred = len(self._deferred) - len(kept), kept
            if not kept:
                self._due = math.inf
            return dropped

    def _take_deferred(self) -> list[Statement]:
        with self._queue_lock:
            taken, self._deferred = self._deferred, []
            self._due = math.inf
            return taken

    def _requeue(self, statements: list[Statement]) -> None:
        if not statements:
            return
        with self._queue_lock:
            self._deferred[:0] = statements
            self._due = min(self._due, time.monotonic() + 1.0)  # the flusher retries later

    def _flush_when_due(self) -> None:
        while True:
            with self._wake:
                while not self._closing:
                    now = time.monotonic()
                    if self._deferred and now >= self._due:
                        break
                    # sleep to the earliest deadline; while rows keep coming, linger until
                    # the last one's deadline instead of sleeping until woken, so a stream
                    # of fast turns wakes this thread once per deadline, not once per turn
                    if self._deferred:
                        until = self._due
                    elif self._busy_until > now:
                        until = self._busy_until
                    else:
                        until = math.inf
                    self._flusher_until = until
                    self._wake.wait(None if until == math.inf else until - now)
                self._flusher_until = math.inf
                if self._closing:
                    return
            try:
                self.flush()
            except StorageError as exc:  # the message names the file; the stack is for -v
                debug = log.isEnabledFor(logging.DEBUG)
                log.error("could not commit deferred rows (%s); retrying", exc, exc_info=debug)

    def update(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run one UPDATE/DELETE in its own transaction; returns how many rows it changed."""
        self.flush()
        try:
            with self.lock, self.db.conn:
                return self.db.conn.execute(sql, params).rowcount
        except sqlite3.Error as exc:
            raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def query(self, sql: str, params: Sequence[object] = ()) -> list[dict]:
        self.flush()  # a reader in this process sees every row written before it asked
        try:
            with self.lock:  # plain cursor: sqlite-utils' query parses the SQL first
                cursor = self.db.conn.execute(sql, params)
                keys = [column[0] for column in cursor.description or ()]
                return [dict(zip(keys, row, strict=True)) for row in cursor]
        except sqlite3.Error as exc:
            raise StorageError(describe_sqlite_error(self.path, exc)) from exc

    def close(self) -> None:
        """Commit what is deferred, stop the flusher, close the file."""
        try:
            self.flush()
        finally:
            with self._wake:
                self._closing = True
                self._wake.notify()
            if self._flusher is not None:
                self._flusher.join(timeout=5)
            with self.lock:
                self.db.conn.close()
