"""Crash-safe moves (issue 13, item 4): the intent is journaled before the first file
changes; a process killed part way through a move (os._exit: no cleanup runs, as with
kill -9) leaves a vault that the next open completes or rolls back, and says so."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from memory.db import Database
from tools.vault.index import VaultIndex
from tools.vault.store import TEMP_SUFFIX, Vault

ROOT = Path(__file__).resolve().parent.parent
LINKERS = 40


def _vault_with_backlinks(root: Path) -> None:
    (root / "Topics").mkdir(parents=True)
    (root / "Topics" / "Kyoto.md").write_text("# Kyoto\n\nTemples.\n", encoding="utf-8")
    for i in range(LINKERS):
        (root / f"Trip {i:02d}.md").write_bytes(
            f"# Trip {i}\r\n\r\nSee [[Topics/Kyoto]] and "
            "[[Topics/Kyoto#Temples|the temples]].\r\n".encode()
        )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def _crash_during_move(
    tmp_path: Path, root: Path, *, after_files: int
) -> subprocess.CompletedProcess:
    """Move Topics/Kyoto.md to Travel/Japan/Kyoto.md (a folder the move creates) in a child
    process that dies without any cleanup once `after_files` files have changed."""
    script = textwrap.dedent(
        f"""
        import os, sys, threading
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from memory.db import Database
        from tools.vault import journal
        from tools.vault.store import Vault

        vault = Vault(Path({str(root)!r}), Database(Path({str(tmp_path / "a.db")!r})))
        real = journal.Journal._perform
        done = [0]
        lock = threading.Lock()

        def perform(self, change):
            with lock:
                if 0 <= {after_files} <= done[0]:
                    os._exit(9)
            real(self, change)
            with lock:
                done[0] += 1

        real_many = Database.write_many

        def write_many(self, statements):
            statements = list(statements)
            if any("SET state = 'done'" in sql for sql, _ in statements):
                os._exit(9)
            return real_many(self, statements)

        journal.Journal._perform = perform
        Database.write_many = write_many
        vault.move("Topics/Kyoto.md", "Travel/Japan/Kyoto.md")
        os._exit(0)
        """
    )
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("after_files", [0, 1, LINKERS // 4, LINKERS // 2])
def test_a_move_killed_part_way_is_rolled_back_byte_for_byte_at_the_next_open(
    tmp_path: Path, after_files: int
) -> None:
    root = tmp_path / "vault"
    _vault_with_backlinks(root)
    before, folders = _snapshot(root), _folders(root)
    died = _crash_during_move(tmp_path, root, after_files=after_files)
    assert died.returncode == 9, died.stderr
    if after_files:
        assert _snapshot(root) != before  # the crash left the vault half moved
    vault = Vault(root, Database(tmp_path / "a.db"))
    assert _snapshot(root) == before
    assert _folders(root) == folders  # Travel/Japan/ the move created is gone
    [recovery] = vault.recovered.writes
    assert recovery.outcome == "rolled back" and "Kyoto" in recovery.summary
    shown = vault.recoveries()
    assert shown[0]["outcome"] == "rolled back"
    assert vault.journal() == []  # nothing claims the move happened
    again = Vault(root, Database(tmp_path / "a.db"))
    assert again.recovered.writes == []  # reported once, resolved for good


def test_a_move_killed_after_its_last_file_is_completed_at_the_next_open(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    _vault_with_backlinks(root)
    died = _crash_during_move(tmp_path, root, after_files=-1)
    assert died.returncode == 9, died.stderr
    vault = Vault(root, Database(tmp_path / "a.db"))
    [recovery] = vault.recovered.writes
    assert recovery.outcome == "completed"
    assert (root / "Travel/Japan/Kyoto.md").exists() and not (root / "Topics/Kyoto.md").exists()
    linking = (root / "Trip 07.md").read_bytes()
    assert b"[[Travel/Japan/Kyoto]]" in linking and b"\r\n" in linking
    assert vault.journal()[0]["op"] == "move"
    vault.undo()
    assert (root / "Topics/Kyoto.md").exists() and not (root / "Travel").exists()


def test_stray_temp_files_are_removed_when_the_vault_opens(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    _vault_with_backlinks(root)
    stray = root / "Topics" / f".Kyoto.md.x1y2{TEMP_SUFFIX}"
    stray.write_text("half a note", encoding="utf-8")
    user_file = root / "Topics" / ".hidden.md"
    user_file.write_text("mine", encoding="utf-8")
    vault = Vault(root, Database(tmp_path / "a.db"))
    assert not stray.exists() and user_file.exists()
    assert vault.recovered.temp_files_removed == [f"Topics/.Kyoto.md.x1y2{TEMP_SUFFIX}"]


def test_the_intent_is_in_the_journal_before_the_first_file_changes(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    _vault_with_backlinks(root)
    database = Database(tmp_path / "a.db")
    vault = Vault(root, database)
    seen: list[tuple[str, int]] = []
    real = vault.writes._perform

    def perform(change):  # type: ignore[no-untyped-def]
        rows = database.query("SELECT count(*) AS n FROM vault_journal")[0]["n"]
        state = database.query("SELECT state FROM vault_writes")[0]["state"]
        seen.append((state, rows))
        real(change)

    vault.writes._perform = perform  # type: ignore[method-assign]
    vault.move("Topics/Kyoto.md", "Travel/Kyoto.md")
    assert seen[0] == ("applying", LINKERS + 1)  # every file's row, before the first change
    assert database.query("SELECT state FROM vault_writes")[0]["state"] == "done"


def test_vault_status_reports_what_a_restart_recovered(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    _vault_with_backlinks(root)
    _crash_during_move(tmp_path, root, after_files=3)
    database = Database(tmp_path / "a.db")
    vault = Vault(root, database)
    status = VaultIndex(vault, database, None).status(check_disk=False)
    assert status["recovered"][0]["outcome"] == "rolled back"
    assert "Kyoto" in status["recovered"][0]["summary"]


def test_an_interrupted_undo_is_rolled_back_and_can_run_again(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    _vault_with_backlinks(root)
    vault = Vault(root, Database(tmp_path / "a.db"))
    vault.move("Topics/Kyoto.md", "Travel/Japan/Kyoto.md")
    moved = _snapshot(root)
    script = textwrap.dedent(
        f"""
        import os, sys, threading
        sys.path.insert(0, {str(ROOT)!r})
        from pathlib import Path
        from memory.db import Database
        from tools.vault import journal
        from tools.vault.store import Vault

        vault = Vault(Path({str(root)!r}), Database(Path({str(tmp_path / "a.db")!r})))
        real = journal.Journal._perform
        done = [0]
        lock = threading.Lock()

        def perform(self, change):
            with lock:
                if done[0] >= 5:
                    os._exit(9)
            real(self, change)
            with lock:
                done[0] += 1

        journal.Journal._perform = perform
        vault.undo()
        """
    )
    died = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert died.returncode == 9
    reopened = Vault(root, Database(tmp_path / "a.db"))
    assert reopened.recovered.writes[0].outcome == "rolled back"
    assert _snapshot(root) == moved
    assert reopened.undo().undone
    assert (root / "Topics/Kyoto.md").exists() and not (root / "Travel").exists()
    assert os.listdir(root / "Topics") == ["Kyoto.md"]


def test_an_action_left_running_by_a_crash_is_interrupted_at_restart(tmp_path: Path) -> None:
    from tools.confirm import PendingActions

    database = Database(tmp_path / "a.db")
    PendingActions(database)
    database.write(
        "INSERT INTO pending_actions (id, tool, arguments, summary, created_at, expires_at, "
        "status) VALUES ('a_1', 'vault_move', '{}', 'move x', 0, 1e12, 'running')"
    )
    restarted = PendingActions(database)
    assert restarted.interrupted == ["a_1"]
    action = restarted.get("a_1")
    assert action is not None and action.status == "interrupted"
    assert action.result["error"] == "INTERRUPTED"
