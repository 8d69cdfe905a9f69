"""A full disk under the vault (issue 6, item 3): ENOSPC injected into the real write path.

The disk fills while a note's temp file is written (or when it is fsynced, where delayed
allocation reports it), or the journal database is full. Every time: a clear error that
names the note and says there is no space left, the old note byte for byte as it was, no
temp file or new folder left behind, and a journal that claims no write.
"""

from __future__ import annotations

import datetime as dt
import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memory.db import Database
from tools.base import ToolError
from tools.vault.store import TEMP_SUFFIX, Change, Vault, VaultEvent

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"
NOW = dt.datetime(2026, 11, 29, 9, 30).astimezone()


class FullDisk:
    """The disk fills after `room` more bytes of vault temp files: writes to them past
    that fail with ENOSPC (after a short write, as a real full disk does), or, with
    `at_fsync`, the data is taken and the fsync fails. Other files are not touched.
    `free()` makes room again."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, room: int, *, at_fsync: bool) -> None:
        self.room = room
        self.at_fsync = at_fsync
        self.temp_fds: set[int] = set()
        self.failures = 0
        real_mkstemp: Callable[..., tuple[int, str]] = tempfile.mkstemp
        real_write, real_fsync = os.write, os.fsync

        def mkstemp(*args: Any, **kwargs: Any) -> tuple[int, str]:
            fd, name = real_mkstemp(*args, **kwargs)
            if name.endswith(TEMP_SUFFIX):
                self.temp_fds.add(fd)
            return fd, name

        def write(fd: int, data: Any) -> int:
            if fd not in self.temp_fds or self.at_fsync:
                return real_write(fd, data)
            if self.room <= 0:
                self.failures += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            written = real_write(fd, bytes(data[: self.room]))
            self.room -= written
            return written

        def fsync(fd: int) -> None:
            if fd in self.temp_fds and self.at_fsync:
                self.failures += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            real_fsync(fd)

        monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
        monkeypatch.setattr(os, "write", write)
        monkeypatch.setattr(os, "fsync", fsync)

    def free(self) -> None:
        self.room, self.at_fsync = 10**9, False

    def all_closed(self) -> bool:
        for fd in self.temp_fds:
            try:
                os.fstat(fd)
            except OSError:
                continue
            return False
        return True


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    return Vault(root, Database(tmp_path / "vault.db"), clock=lambda: NOW)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def _journal_rows(vault: Vault) -> int:
    return vault.database.query("SELECT count(*) AS n FROM vault_journal")[0]["n"]


def _assert_refused_cleanly(
    vault: Vault, error: ToolError, note: str, before: dict[str, bytes], events: list[VaultEvent]
) -> None:
    assert error.code == "WRITE_FAILED"
    assert note in error.detail and "no space left" in error.detail
    assert _snapshot(vault.root) == before  # old notes intact, no temp file, nothing new
    assert not list(vault.root.rglob(f"*{TEMP_SUFFIX}"))
    assert _journal_rows(vault) == 0 and vault.journal() == []
    assert events == []  # the index is not told of a write that did not happen


@pytest.mark.parametrize("at_fsync", [False, True], ids=["write", "fsync"])
def test_a_full_disk_leaves_the_old_note_and_no_trace(
    vault: Vault, monkeypatch: pytest.MonkeyPatch, at_fsync: bool
) -> None:
    note = "Projects/Project Phoenix.md"
    before = _snapshot(vault.root)
    events: list[VaultEvent] = []
    vault.subscribe(events.append)
    disk = FullDisk(monkeypatch, room=100, at_fsync=at_fsync)
    with pytest.raises(ToolError) as failed:
        vault.append(note, "- a line that does not fit on the disk\n" * 20)
    assert disk.failures == 1 and disk.all_closed()
    _assert_refused_cleanly(vault, failed.value, note, before, events)
    assert "the note is unchanged" in failed.value.detail
    with pytest.raises(ToolError) as overwrite:
        vault.create(note, "replacement", overwrite=True)
    _assert_refused_cleanly(vault, overwrite.value, note, before, events)
    # room again: the same write goes through and is journaled once
    disk.free()
    vault.append(note, "- fits now")
    assert _journal_rows(vault) == 1 and len(events) == 1


def test_a_new_note_in_a_new_folder_leaves_no_folder_behind(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, folders = _snapshot(vault.root), _folders(vault.root)
    FullDisk(monkeypatch, room=0, at_fsync=False)
    with pytest.raises(ToolError) as failed:
        vault.create("Archive/2026/November/Plan.md", "# Plan\n")
    _assert_refused_cleanly(vault, failed.value, "Archive/2026/November/Plan.md", before, [])
    assert _folders(vault.root) == folders


def _move_with_link_updates(vault: Vault) -> tuple[list[Change], int]:
    """A move that rewrites links in several notes, and room for the first two of them."""
    plan = vault.plan_move("Projects/Release Checklist.md", "Archive/Runbook")
    assert plan[0].before == plan[0].after  # the rename itself writes no bytes
    assert len(plan) >= 4
    return plan, sum(len(c.after or b"") for c in plan[1:3])


def test_a_move_that_fills_the_disk_part_way_is_put_back_whole(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, room = _move_with_link_updates(vault)
    before = _snapshot(vault.root)
    events: list[VaultEvent] = []
    vault.subscribe(events.append)
    disk = FullDisk(monkeypatch, room=room, at_fsync=False)
    real_unlink = os.unlink

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        real_unlink(path, *args, **kwargs)
        if str(path).endswith(TEMP_SUFFIX):
            disk.free()  # removing the failed temp file gave its blocks back

    monkeypatch.setattr(os, "unlink", unlink)
    with pytest.raises(ToolError) as failed:
        vault.apply(plan)
    assert disk.failures == 1 and disk.all_closed()
    _assert_refused_cleanly(vault, failed.value, plan[3].path.rel, before, events)
    assert "nothing was changed" in failed.value.detail


def test_what_cannot_be_put_back_on_a_full_disk_is_said_and_undone_later(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, room = _move_with_link_updates(vault)
    before = _snapshot(vault.root)
    disk = FullDisk(monkeypatch, room=room, at_fsync=False)  # and it stays full
    with pytest.raises(ToolError) as failed:
        vault.apply(plan)
    stuck = sorted(change.path.rel for change in plan[1:3])
    assert "no space left" in failed.value.detail and plan[3].path.rel in failed.value.detail
    assert "2 file(s) could not be put back" in failed.value.detail
    assert all(path in failed.value.detail for path in stuck)
    assert "assistant vault undo" in failed.value.detail
    assert (vault.root / "Projects/Release Checklist.md").exists()  # the rename was put back
    assert not list(vault.root.rglob(f"*{TEMP_SUFFIX}"))
    assert (
        sorted(row["path"] for row in vault.database.query("SELECT path FROM vault_journal"))
        == stuck
    )
    disk.free()
    assert vault.undo().stopped is None
    assert _snapshot(vault.root) == before


def test_a_full_journal_database_refuses_the_write_before_touching_the_note(
    vault: Vault,
) -> None:
    note = "Inbox/Big.md"
    vault.create(note, "x" * 50_000)  # the journal keeps this as the text to restore
    before = _snapshot(vault.root)
    connection = vault.database.db.conn
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"
    with pytest.raises(ToolError) as failed:
        vault.create(note, "small", overwrite=True)
    assert failed.value.code == "WRITE_FAILED"
    assert note in failed.value.detail and "journal" in failed.value.detail
    assert "disk is full" in failed.value.detail and "unchanged" in failed.value.detail
    assert _snapshot(vault.root) == before
    connection.execute("PRAGMA max_page_count = 1073741823")
    assert [row["op"] for row in vault.journal()] == ["create"]
