"""The vault journal (SPEC V4): applying planned writes, putting them back, undo, and
recovery from a crash part way through a write.

Every write is an intent first: one transaction stores the write (`vault_writes`, state
`applying`) and, per file, its exact bytes before, the hash of its bytes after and the
folders the write will create (`vault_journal`); the SQLite WAL is then fsynced, and only
then does the first file change. When every file is written the write becomes `done`.
A write that stops part way on an error (a full disk) is put back at once. One that a
crash stopped (kill -9, power loss) is found when the vault is next opened (`recover`):
if every file already holds its new bytes it is marked complete, otherwise every file is
put back to its old bytes and the folders it made are removed; either way it is reported
(`vault status`, the log). Stray temp files of atomic writes are removed then too.

Undo is a write of its own (the inverse changes, through the same intent), so an undo a
crash interrupts is recovered the same way. Undo restores bytes exactly, and removes the
folders the undone write created once they are empty.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import sqlite_utils

from memory.db import Database, Migrations, Statement
from memory.errors import StorageError
from tools.base import ToolError
from tools.vault.files import (
    VaultEvent,
    VaultFiles,
    atomic_write,
    bytes_hash,
    failure,
    fsync_folder,
    missing_folders,
    remove_folders,
)
from tools.vault.jail import VaultPath
from tools.vault.notes import read_note_bytes
from tools.vault.plans import Change, check_preview

log = logging.getLogger(__name__)

JOURNAL_KEEP = 500
PARALLEL_FROM = 8  # a write of this many files or more is written by several threads
WRITE_THREADS = 16
RECOVERIES_SHOWN = 10

migrations = Migrations("vault_journal")


@migrations
def m001_journal(db: sqlite_utils.Database) -> None:
    db.execute(
        "CREATE TABLE vault_journal (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "write_id TEXT NOT NULL, at REAL NOT NULL, op TEXT NOT NULL, path TEXT NOT NULL, "
        "new_path TEXT, before TEXT, after_hash TEXT, actor TEXT, summary TEXT, "
        "undone_at REAL)"
    )
    db.execute("CREATE INDEX vault_journal_by_write ON vault_journal (write_id)")


@migrations
def m002_intents(db: sqlite_utils.Database) -> None:
    """Exact bytes (the old `before` column held translated text), the folders a change
    creates or drops, and one row per write saying whether it finished."""
    db.execute("ALTER TABLE vault_journal ADD COLUMN before_bytes BLOB")
    db.execute("ALTER TABLE vault_journal ADD COLUMN made_folders TEXT")
    db.execute("ALTER TABLE vault_journal ADD COLUMN drop_folders TEXT")
    db.execute(
        "CREATE TABLE vault_writes (write_id TEXT PRIMARY KEY, root TEXT NOT NULL, "
        "kind TEXT NOT NULL, undoes TEXT, state TEXT NOT NULL, at REAL NOT NULL, "
        "summary TEXT, outcome TEXT, recovered_at REAL)"
    )
    db.execute("CREATE INDEX vault_writes_by_state ON vault_writes (state)")


@dataclass
class WriteResult:
    write_id: str
    op: str
    path: str
    changes: list[dict[str, Any]]

    def as_dict(self) -> dict[str, Any]:
        return {"write_id": self.write_id, "op": self.op, "path": self.path, "files": self.changes}


@dataclass
class UndoResult:
    undone: list[dict[str, Any]]
    stopped: str | None = None


@dataclass(frozen=True)
class Recovery:
    """What opening the vault did about one write a crash interrupted."""

    write_id: str
    summary: str
    outcome: str  # "completed" or "rolled back"
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "write_id": self.write_id,
            "summary": self.summary,
            "outcome": self.outcome,
            "detail": self.detail,
        }


@dataclass
class RecoveryReport:
    writes: list[Recovery] = field(default_factory=list)
    temp_files_removed: list[str] = field(default_factory=list)


def _before(entry: dict[str, Any]) -> bytes | None:
    """A journal row's bytes before; rows from before m002 hold text."""
    if entry.get("before_bytes") is not None:
        return bytes(entry["before_bytes"])
    return None if entry["before"] is None else entry["before"].encode("utf-8")


def _folders(value: str | None) -> list[str]:
    return list(json.loads(value)) if value else []


def _event(changes: list[Change]) -> VaultEvent:
    changed: list[str] = []
    removed: list[str] = []
    for change in changes:
        if not change.writes:
            continue
        if change.op == "move":
            assert change.new_path is not None
            removed.append(change.path.rel)
            changed.append(change.new_path.rel)
        elif change.after is None:
            removed.append(change.path.rel)
        else:
            changed.append(change.path.rel)
    return VaultEvent(tuple(changed), tuple(removed))


def _change_row(change: Change) -> dict[str, Any]:
    row: dict[str, Any] = {"op": change.op, "path": change.path.rel}
    if change.new_path is not None:
        row["new_path"] = change.new_path.rel
    if not change.writes:
        row["why"] = change.summary
    return row


class Journal:
    """Applies, reverts, undoes and recovers the writes of one vault."""

    def __init__(
        self, files: VaultFiles, database: Database, *, journal_keep: int = JOURNAL_KEEP
    ) -> None:
        self.files = files
        self.database = database
        self.journal_keep = journal_keep
        self.lock = threading.RLock()
        database.migrate(migrations)

    # -- applying -------------------------------------------------------------------------

    def apply(
        self,
        changes: list[Change],
        *,
        actor: str | None = None,
        expect: dict[str, str | None] | None = None,
        may_start: Callable[[], bool] | None = None,
    ) -> WriteResult:
        """Journal and perform a planned write; a file changed since it was planned stops
        it. `expect`: the `plan_state` the user saw in a preview; a plan made from other
        content is refused (STALE_PREVIEW) and nothing is written. `may_start`: asked once
        the write lock is held, just before the first byte is journaled; False means the
        caller gave up waiting, and nothing is written (`NOT_RUN`)."""
        if not any(change.writes for change in changes):
            raise ToolError("NOTHING_TO_DO", "the write changes nothing")
        if expect is not None:
            check_preview(changes, expect)
        write_id = f"w_{uuid.uuid4().hex[:12]}"
        with self.lock:
            for change in changes:
                self._check_unchanged(change)
            if may_start is not None and not may_start():
                raise ToolError(
                    "NOT_RUN", "the write was given up before it started; nothing was changed"
                )
            self._run(write_id, changes, actor=actor)
            with suppress(StorageError):  # an old entry kept a while longer does no harm
                self._prune()
        self.files.notify(_event(changes))  # outside the lock: indexing never blocks writes
        main = changes[0]
        where = main.new_path.rel if main.new_path is not None else main.path.rel
        return WriteResult(write_id, main.op, where, [_change_row(c) for c in changes])

    def _run(
        self,
        write_id: str,
        changes: list[Change],
        *,
        actor: str | None,
        undoes: str | None = None,
    ) -> None:
        """The intent, then the files, then `done`; put back on an error part way."""
        writing = [change for change in changes if change.writes]
        try:
            row_ids = self._intend(write_id, writing, actor, undoes)
        except StorageError as exc:
            raise self._failed(writing[0], [], f"the vault journal failed: {exc}") from exc
        pairs = list(zip(writing, row_ids, strict=True))
        if len(pairs) < PARALLEL_FROM:
            performed: list[tuple[Change, int]] = []
            for change, row_id in pairs:
                try:
                    self._perform(change)
                except OSError as exc:
                    performed.append((change, row_id))  # half done: put back with the rest
                    raise self._failed(change, performed, failure(exc), write_id) from exc
                performed.append((change, row_id))
        else:
            self._perform_many(write_id, pairs)
        statements: list[Statement] = [
            ("UPDATE vault_writes SET state = 'done' WHERE write_id = ?", (write_id,))
        ]
        if undoes is not None:
            statements.append(
                ("UPDATE vault_journal SET undone_at = ? WHERE write_id = ?", (time.time(), undoes))
            )
        try:
            self.database.write_many(statements)
        except StorageError:  # the files are written; opening the vault completes the record
            log.warning("vault: could not mark write %s done; recovery will", write_id)

    def _perform_many(self, write_id: str, pairs: list[tuple[Change, int]]) -> None:
        """Many files (a move's link updates): written by a few threads at once, so their
        fsyncs overlap (one after another they were most of a move's time). The intent
        is already journaled, so the order does not matter: a crash part way is rolled
        back whatever was done. On an error, every file is put back (`_revert` leaves
        one that was never reached as it is)."""
        with ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="vault-write") as pool:
            futures = [pool.submit(self._perform, change) for change, _ in pairs]
        for (change, _), future in zip(pairs, futures, strict=True):
            exc = future.exception()
            if exc is None:
                continue
            if not isinstance(exc, OSError):
                self._failed(change, pairs, f"{type(exc).__name__}: {exc}", write_id)
                raise exc
            raise self._failed(change, pairs, failure(exc), write_id) from exc

    def _intend(
        self, write_id: str, changes: list[Change], actor: str | None, undoes: str | None
    ) -> list[int]:
        """Store the whole write before any file changes, durably (WAL fsynced)."""
        now = time.time()
        summary = "; ".join(change.summary for change in changes[:3])
        if len(changes) > 3:
            summary += f"; and {len(changes) - 3} more"
        statements: list[Statement] = [
            (
                "INSERT INTO vault_writes (write_id, root, kind, undoes, state, at, summary) "
                "VALUES (?, ?, ?, ?, 'applying', ?, ?)",
                (
                    write_id,
                    str(self.files.root),
                    "undo" if undoes else "write",
                    undoes,
                    now,
                    summary,
                ),
            )
        ]
        landing: set[str] = set()
        for change in changes:
            lands = change.new_path if change.new_path is not None else change.path
            made = [] if change.after is None else self._new_folders(lands, landing)
            statements.append(
                (
                    "INSERT INTO vault_journal (write_id, at, op, path, new_path, before_bytes, "
                    "after_hash, actor, summary, made_folders, drop_folders, undone_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        write_id,
                        now,
                        change.op,
                        change.path.rel,
                        change.new_path.rel if change.new_path else None,
                        change.before,
                        bytes_hash(change.after) if change.after is not None else None,
                        actor,
                        change.summary,
                        json.dumps(made) if made else None,
                        json.dumps(list(change.drop_folders)) if change.drop_folders else None,
                        now if undoes else None,  # an undo's own rows are not undoable writes
                    ),
                )
            )
        self.database.write_many(statements)
        self._sync_wal()
        rows = self.database.query(
            "SELECT id FROM vault_journal WHERE write_id = ? ORDER BY id", [write_id]
        )
        return [row["id"] for row in rows]

    def _new_folders(self, lands: VaultPath, claimed: set[str]) -> list[str]:
        """The folders a change landing at `lands` will create (vault-relative, deepest
        first), each claimed by the first change of the write that creates it."""
        made = []
        for folder in missing_folders(lands.abs.parent):
            rel = folder.relative_to(self.files.root).as_posix()
            if rel not in claimed:
                claimed.add(rel)
                made.append(rel)
        return made

    def _sync_wal(self) -> None:
        """The database commits with synchronous=NORMAL (WAL not fsynced per commit): an
        intent must survive a power cut, so its WAL is fsynced here."""
        wal = Path(f"{self.database.path}-wal")
        with suppress(OSError):
            fd = os.open(wal, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _failed(
        self,
        failed: Change,
        performed: list[tuple[Change, int]],
        why: str,
        write_id: str | None = None,
    ) -> ToolError:
        """A write stopped part way (a full disk, say): put back what it had done so far,
        newest first, and drop its journal rows, so the vault is as before and the journal
        claims nothing. What cannot be put back stays journaled for `vault undo`."""
        stuck: list[Change] = []
        for change, row_id in reversed(performed):
            try:
                self._revert(change)
            except OSError:
                stuck.append(change)
                continue
            try:
                self.database.write("DELETE FROM vault_journal WHERE id = ?", (row_id,))
            except StorageError:  # undo sees the file as it was and skips the entry
                log.warning("could not drop journal row %s of a failed write", row_id)
        if write_id is not None:
            self._forget_unperformed(write_id, stuck)
        if stuck:
            self.files.notify(_event(stuck))
            names = ", ".join(change.path.rel for change in stuck)
            outcome = (
                f"{len(stuck)} file(s) could not be put back ({names}); `assistant vault "
                "undo` restores them once there is room"
            )
        elif any(change is not failed for change, _ in performed):
            outcome = "nothing was changed (the files already written were put back)"
        else:
            outcome = "the note is unchanged"
        note = failed.path.rel
        return ToolError("WRITE_FAILED", f"could not write {note}: {why}; {outcome}", path=note)

    def _forget_unperformed(self, write_id: str, stuck: list[Change]) -> None:
        """After a failed write: rows of files never reached go, and the write is closed
        (`done` if something stuck, so `vault undo` can restore it; else `failed`)."""
        stuck_paths = [change.path.rel for change in stuck]
        marks = ",".join("?" * len(stuck_paths))
        keep = f" AND path NOT IN ({marks})" if stuck_paths else ""
        try:
            self.database.write_many(
                [
                    (
                        f"DELETE FROM vault_journal WHERE write_id = ?{keep}",
                        (write_id, *stuck_paths),
                    ),
                    (
                        "UPDATE vault_writes SET state = ? WHERE write_id = ?",
                        ("done" if stuck else "failed", write_id),
                    ),
                ]
            )
        except StorageError:
            log.warning("vault: could not close the failed write %s", write_id)

    def _revert(self, change: Change) -> None:
        """Put back one change this write performed, or half performed."""
        old = change.path.abs
        if change.op == "move":
            assert change.new_path is not None
            new = change.new_path.abs
            if not new.exists():
                return  # nothing landed
            if old.exists() and not os.path.samefile(old, new):
                os.unlink(new)  # the copy landed, the note is still where it was
            elif change.before == change.after:
                os.replace(new, old)
            else:
                assert change.before is not None
                atomic_write(old, change.before)
                if not os.path.samefile(old, new):
                    os.unlink(new)
            return
        current = self._bytes(old)
        if current == change.before:
            return  # the write never reached the file
        if change.before is None:
            os.unlink(old)
        else:
            atomic_write(old, change.before)

    def _check_unchanged(self, change: Change) -> None:
        current = self.files.raw_bytes(change.path)
        if current != change.before:
            state = "now exists" if change.before is None else "changed on disk"
            raise ToolError(
                "NOTE_CHANGED", f"{change.path.rel} {state} since this write was planned; retry"
            )

    def _perform(self, change: Change) -> None:
        files = self.files
        if change.op == "move":
            assert change.new_path is not None and change.after is not None
            if change.after == change.before:
                change.new_path.abs.parent.mkdir(parents=True, exist_ok=True)
                os.replace(change.path.abs, change.new_path.abs)
                fsync_folder(change.new_path.abs.parent)
                fsync_folder(change.path.abs.parent)
            else:
                atomic_write(change.new_path.abs, change.after)
                os.unlink(change.path.abs)
            files.remember_own(change.new_path)
            files.remember_own(change.path)
        elif change.after is None:
            os.unlink(change.path.abs)
            files.remember_own(change.path)
        else:
            atomic_write(change.path.abs, change.after)
            files.remember_own(change.path)
        if change.drop_folders:
            remove_folders([files.root / rel for rel in change.drop_folders])

    def _prune(self) -> None:
        self.database.write_many(
            [
                (
                    "DELETE FROM vault_journal WHERE id < (SELECT min(first) FROM (SELECT "
                    "min(id) AS first FROM vault_journal GROUP BY write_id ORDER BY first "
                    "DESC LIMIT ?))",
                    (self.journal_keep,),
                ),
                (
                    "DELETE FROM vault_writes WHERE state IN ('done', 'failed') AND write_id "
                    "NOT IN (SELECT write_id FROM vault_journal)",
                    (),
                ),
            ]
        )

    # -- listing and undo -------------------------------------------------------------------

    def journal(self, limit: int = 20, *, include_undone: bool = False) -> list[dict[str, Any]]:
        """The latest writes, newest first: one row per write with the files it touched."""
        undone = "" if include_undone else "WHERE undone_at IS NULL"
        writes = self.database.query(
            f"SELECT write_id, max(id) AS last FROM vault_journal {undone} GROUP BY write_id "
            "ORDER BY last DESC LIMIT ?",
            [limit],
        )
        rows = []
        for write in writes:
            entries = self._entries(write["write_id"])
            main = entries[0]
            rows.append(
                {
                    "write_id": write["write_id"],
                    "at": dt.datetime.fromtimestamp(main["at"]).isoformat(timespec="seconds"),
                    "op": main["op"],
                    "path": main["new_path"] or main["path"],
                    "summary": "; ".join(e["summary"] for e in entries if e["summary"]),
                    "files": len(entries),
                    "actor": main["actor"],
                    "undone": main["undone_at"] is not None,
                }
            )
        return rows

    def _entries(self, write_id: str) -> list[dict[str, Any]]:
        return self.database.query(
            "SELECT * FROM vault_journal WHERE write_id = ? ORDER BY id", [write_id]
        )

    def undo(self, n: int = 1, *, force: bool = False) -> UndoResult:
        """Undo the last `n` writes, newest first. A write whose notes were edited since is
        not undone (unless `force`): undo stops there and says why."""
        result = UndoResult([])
        with self.lock:
            writes = self.database.query(
                "SELECT write_id, max(id) AS last FROM vault_journal WHERE undone_at IS NULL "
                "GROUP BY write_id ORDER BY last DESC LIMIT ?",
                [max(n, 0)],
            )
            for write in writes:
                entries = list(reversed(self._entries(write["write_id"])))
                try:
                    inverse = [c for entry in entries for c in self._inverse(entry, force)]
                except ToolError as exc:
                    result.stopped = exc.detail
                    break
                undo_id = f"u_{uuid.uuid4().hex[:12]}"
                if inverse:
                    try:
                        self._run(undo_id, inverse, actor="undo", undoes=write["write_id"])
                    except ToolError as exc:
                        result.stopped = f"undo of {write['write_id']} failed: {exc.detail}"
                        break
                else:  # already as it was: only the record changes
                    self.database.update(
                        "UPDATE vault_journal SET undone_at = ? WHERE write_id = ?",
                        (time.time(), write["write_id"]),
                    )
                main = entries[-1]
                result.undone.append(
                    {
                        "write_id": write["write_id"],
                        "op": main["op"],
                        "path": main["new_path"] or main["path"],
                        "summary": main["summary"],
                    }
                )
                self.files.notify(_event(inverse))
        return result

    def _state(self, rel: str) -> tuple[VaultPath, bytes | None]:
        jail = self.files.jail
        found = jail.note(rel) if rel.lower().endswith(".md") else jail.existing_file(rel)
        return found, self.files.raw_bytes(found) if found.abs.is_file() else None

    def _inverse(self, entry: dict[str, Any], force: bool) -> list[Change]:
        """Check that one journal entry can be undone; return the changes that undo it."""
        path, current = self._state(entry["path"])
        before = _before(entry)
        after_hash = entry["after_hash"]
        made = tuple(_folders(entry.get("made_folders")))
        summary = f"undo: {entry['summary']}"

        def conflict(why: str) -> ToolError:
            return ToolError("UNDO_CONFLICT", f"cannot undo '{entry['summary']}': {why}")

        if entry["op"] == "move":
            target, moved = self._state(entry["new_path"])
            if current == before and moved is None:
                return []
            if not force and (moved is None or bytes_hash(moved) != after_hash):
                raise conflict(f"{target.rel} was changed or removed since")
            if not force and current is not None:
                raise conflict(f"a note now exists at {path.rel}")
            assert before is not None
            if moved is None:
                return [Change("restore", path, current, before, summary=summary)]
            if current is not None:  # forced over a note now at the old path
                return [
                    Change("restore", path, current, before, summary=summary),
                    Change("delete", target, moved, None, summary=summary, drop_folders=made),
                ]
            return [
                Change(
                    "move", target, moved, before, new_path=path, summary=summary, drop_folders=made
                )
            ]
        if current == before:
            return []  # already as it was (or the write never reached the disk)
        if not force:
            if entry["op"] == "delete":
                if current is not None:
                    raise conflict(f"a note was created at {path.rel} since")
            elif current is None:
                raise conflict(f"{path.rel} was removed since")
            elif bytes_hash(current) != after_hash:
                raise conflict(f"{path.rel} was edited since")
        if before is None:
            if current is None:
                return []
            return [Change("delete", path, current, None, summary=summary, drop_folders=made)]
        return [Change("restore", path, current, before, summary=summary)]

    # -- recovery ---------------------------------------------------------------------------

    def recover(self) -> RecoveryReport:
        """Resolve every write of this vault that a crash left `applying`, and remove stray
        temp files. Safe only while no write runs: the vault is being opened."""
        report = RecoveryReport()
        with self.lock:
            for temp in self.files.stray_temp_files():
                with suppress(OSError):
                    temp.unlink()
                    report.temp_files_removed.append(temp.relative_to(self.files.root).as_posix())
            open_writes = self.database.query(
                "SELECT * FROM vault_writes WHERE state = 'applying' AND root = ? ORDER BY at",
                [str(self.files.root)],
            )
            for write in open_writes:
                report.writes.append(self._recover_write(write))
        for removed in report.temp_files_removed:
            log.warning("vault: removed a temp file a crash left behind: %s", removed)
        for recovery in report.writes:
            log.warning(
                "vault: the write '%s' was interrupted; %s at restart%s",
                recovery.summary,
                recovery.outcome,
                f" ({recovery.detail})" if recovery.detail else "",
            )
        return report

    def _recover_write(self, write: dict[str, Any]) -> Recovery:
        write_id = write["write_id"]
        entries = self._entries(write_id)
        changed: list[str] = []
        removed: list[str] = []
        if all(self._landed(entry) for entry in entries):
            outcome, detail = "completed", "every file already held its new content"
            statements: list[Statement] = []
            if write["undoes"]:
                statements.append(
                    (
                        "UPDATE vault_journal SET undone_at = ? WHERE write_id = ?",
                        (time.time(), write["undoes"]),
                    )
                )
        else:
            problems = []
            for entry in reversed(entries):
                problem = self._roll_back(entry, changed, removed)
                if problem:
                    problems.append(problem)
            outcome = "rolled back" if not problems else "rolled back in part"
            detail = "; ".join(problems)
            statements = [("DELETE FROM vault_journal WHERE write_id = ?", (write_id,))]
        statements.append(
            (
                "UPDATE vault_writes SET state = ?, outcome = ?, recovered_at = ? "
                "WHERE write_id = ?",
                ("recovered", f"{outcome}: {detail}" if detail else outcome, time.time(), write_id),
            )
        )
        self.database.write_many(statements)
        if changed or removed:
            self.files.notify(VaultEvent(tuple(changed), tuple(removed)))
        return Recovery(write_id, write["summary"] or write_id, outcome, detail)

    def _abs(self, rel: str) -> Path:
        path = self.files.root / rel
        if not path.resolve().is_relative_to(self.files.root):
            raise ValueError(f"{rel!r} leads outside the vault")
        return path

    def _bytes(self, path: Path) -> bytes | None:
        try:
            return read_note_bytes(path, max_bytes=max(self.files.max_bytes, 1 << 30))
        except FileNotFoundError:
            return None

    def _landed(self, entry: dict[str, Any]) -> bool:
        """Does the file already hold what this entry wrote?"""
        after_hash = entry["after_hash"]
        if entry["op"] == "move":
            new = self._bytes(self._abs(entry["new_path"]))
            gone = not self._abs(entry["path"]).exists()
            return gone and new is not None and bytes_hash(new) == after_hash
        current = self._bytes(self._abs(entry["path"]))
        if after_hash is None:
            return current is None
        return current is not None and bytes_hash(current) == after_hash

    def _roll_back(self, entry: dict[str, Any], changed: list[str], removed: list[str]) -> str:
        """Put one entry's file back to its bytes before; '' when done, else why not."""
        before = _before(entry)
        after_hash = entry["after_hash"]
        old = self._abs(entry["path"])
        current = self._bytes(old)
        problem = ""
        try:
            if entry["op"] == "move":
                new = self._abs(entry["new_path"])
                landed = self._bytes(new)
                landed_ok = landed is not None and bytes_hash(landed) == after_hash
                if landed is not None and not landed_ok and current == before:
                    pass  # nothing of this move happened (a file already there is not ours)
                elif current == before and landed_ok:
                    new.unlink()  # the copy landed, the note was still where it was
                    removed.append(entry["new_path"])
                elif current is None and landed_ok:
                    assert before is not None
                    atomic_write(old, before)
                    new.unlink()
                    changed.append(entry["path"])
                    removed.append(entry["new_path"])
                elif current != before:
                    problem = f"{entry['path']} and {entry['new_path']} were left as found"
            elif current == before:
                pass  # nothing of this write happened: nothing to undo
            elif (current is None and after_hash is None) or (
                current is not None and bytes_hash(current) == after_hash
            ):
                if before is None:
                    old.unlink()
                    removed.append(entry["path"])
                else:
                    atomic_write(old, before)
                    changed.append(entry["path"])
            else:
                problem = f"{entry['path']} holds neither its old nor its new content; left as is"
        except OSError as exc:
            problem = f"{entry['path']}: {failure(exc)}"
        remove_folders([self._abs(rel) for rel in _folders(entry.get("made_folders"))])
        return problem

    def recoveries(self, limit: int = RECOVERIES_SHOWN) -> list[dict[str, Any]]:
        """The latest writes that a restart completed or rolled back, newest first."""
        rows = self.database.query(
            "SELECT write_id, summary, outcome, at, recovered_at FROM vault_writes "
            "WHERE state = 'recovered' AND root = ? ORDER BY recovered_at DESC LIMIT ?",
            [str(self.files.root), limit],
        )
        return [
            {
                "write_id": row["write_id"],
                "summary": row["summary"],
                "outcome": row["outcome"],
                "started": dt.datetime.fromtimestamp(row["at"]).isoformat(timespec="seconds"),
                "recovered": dt.datetime.fromtimestamp(row["recovered_at"]).isoformat(
                    timespec="seconds"
                ),
            }
            for row in rows
        ]
