"""Hostile and odd notes (issue 13, items 1 and 7): one bad note is skipped with its reason,
never the vault; only regular files are read; frontmatter has size and alias limits."""

from __future__ import annotations

import json
import os
import shutil
import threading
import tracemalloc
from pathlib import Path

import pytest
from clirun import run_cli

from memory.db import Database
from tools.base import ToolError
from tools.vault.index import VaultIndex
from tools.vault.notes import FRONTMATTER_MAX_CHARS, parse_note
from tools.vault.store import Vault

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "vault_example"

# 9 levels of 9 aliases: 9^9 strings once expanded, from a few hundred bytes
ALIAS_BOMB = (
    "---\n"
    'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
    + "".join(
        f"{name}: &{name} [{','.join(['*' + prev] * 9)}]\n"
        for prev, name in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + "---\n# Bomb\n\nThe body is still a note.\n"
)


@pytest.fixture
def vault_root(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    return root


def _open(tmp_path: Path, root: Path) -> tuple[Vault, VaultIndex]:
    database = Database(tmp_path / "assistant.db")
    vault = Vault(root, database)
    return vault, VaultIndex(vault, database, None)


def _bounded(fn, seconds: float = 60):  # type: ignore[no-untyped-def]
    """Run `fn` in a thread; a hang fails the test instead of stalling the suite."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call hung"
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box.get("value")


def test_an_impossible_date_in_frontmatter_is_that_notes_error_only() -> None:
    note = parse_note("Bad.md", "---\ndate: 2026-13-45\ntags: [x]\n---\n# Plan\n\nbody\n")
    assert "month must be in 1..12" in (note.frontmatter_error or "")
    assert note.frontmatter == {} and [h.text for h in note.headings] == ["Plan"]


def test_a_bad_date_leaves_index_search_and_read_working(tmp_path: Path, vault_root: Path) -> None:
    (vault_root / "Bad date.md").write_text(
        "---\ndate: 2026-13-45\n---\n# Release checklist\n\nTag the build.\n", encoding="utf-8"
    )
    vault, index = _open(tmp_path, vault_root)
    report = index.index_vault()
    assert report.notes == len(vault.note_paths())
    hits = index.search("release checklist")
    assert "Bad date.md" in [hit.path for hit in hits]
    note = vault.read("Bad date")
    assert "month must be in 1..12" in (note.frontmatter_error or "")
    status = index.status()
    assert any(row["path"] == "Bad date.md" for row in status["frontmatter_errors"])


def test_a_file_name_with_invalid_utf8_is_skipped_with_its_reason(
    tmp_path: Path, vault_root: Path
) -> None:
    name = os.fsencode(vault_root) + b"/Caf\xe9 notes.md"
    with open(name, "wb") as handle:
        handle.write(b"# Cafe\n\ntext\n")
    vault, index = _open(tmp_path, vault_root)
    index.index_vault()
    skipped = {row["path"]: row["reason"] for row in index.status()["skipped"]}
    assert skipped.get("Caf\\xe9 notes.md") == "the file name is not valid UTF-8"
    assert index.search("Project Phoenix")  # the rest of the vault is indexed
    assert "Projects/Project Phoenix.md" in [n.path for n in vault.parse_all()]


def test_the_cli_indexes_and_searches_past_a_bad_note(tmp_path: Path, vault_root: Path) -> None:
    (vault_root / "Broken.md").write_text("---\ndue: 2026-02-30\n---\nbody\n", encoding="utf-8")
    os.mkfifo(vault_root / "Pipe.md")
    home = tmp_path / "data"
    indexed = run_cli(home, "vault", "index", vault=vault_root, timeout=120)
    assert indexed.returncode == 0, indexed.stderr
    found = run_cli(home, "vault", "search", "Phoenix", "--json", vault=vault_root)
    assert found.returncode == 0, found.stderr
    assert any(hit["path"] == "Projects/Project Phoenix.md" for hit in json.loads(found.stdout))
    status = run_cli(home, "vault", "status", "--json", vault=vault_root)
    state = json.loads(status.stdout)
    reasons = {row["path"]: row["reason"] for row in state["skipped"]}
    assert "named pipe" in reasons["Pipe.md"]
    assert [row["path"] for row in state["frontmatter_errors"]] == ["Broken.md"]


def test_a_fifo_named_like_a_note_never_hangs_index_or_read(
    tmp_path: Path, vault_root: Path
) -> None:
    os.mkfifo(vault_root / "Inbox" / "Pipe.md")
    vault, index = _open(tmp_path, vault_root)
    _bounded(index.index_vault)
    assert "Inbox/Pipe.md" not in vault.note_paths()
    with pytest.raises(ToolError) as refused:
        _bounded(lambda: vault.read("Inbox/Pipe.md"))
    assert refused.value.code == "NOT_A_NOTE" and "named pipe" in refused.value.detail
    report = _bounded(lambda: index.index_note("Inbox/Pipe.md"))
    assert report.skipped == 1


def test_a_yaml_alias_bomb_is_refused_with_little_memory(tmp_path: Path, vault_root: Path) -> None:
    assert len(ALIAS_BOMB.encode()) < 400
    (vault_root / "Bomb.md").write_text(ALIAS_BOMB, encoding="utf-8")
    vault, index = _open(tmp_path, vault_root)
    tracemalloc.start()
    try:
        note = _bounded(lambda: vault.read("Bomb"))
        _bounded(index.index_vault)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "aliases" in (note.frontmatter_error or "")
    assert note.frontmatter == {} and "still a note" in note.body
    assert peak < 64 * 1024 * 1024


def test_a_self_referencing_alias_and_a_huge_block_are_refused() -> None:
    looped = parse_note("Loop.md", "---\na: &a [*a]\n---\nx\n")
    assert looped.frontmatter == {} and looped.frontmatter_error
    huge = "---\n" + "k: " + "v" * (FRONTMATTER_MAX_CHARS + 10) + "\n---\nbody\n"
    refused = parse_note("Huge.md", huge)
    assert "over the limit" in (refused.frontmatter_error or "") and refused.body == "body\n"
    fine = parse_note("Fine.md", "---\nbase: &b {x: 1}\nother: *b\n---\n")
    assert fine.frontmatter == {"base": {"x": 1}, "other": {"x": 1}}


def test_watcher_events_for_an_undecodable_name_or_a_fifo_never_crash(
    tmp_path: Path, vault_root: Path
) -> None:
    raw = os.fsencode(vault_root) + b"/Na\xefve.md"
    with open(raw, "wb") as handle:
        handle.write(b"# x\n")
    _, index = _open(tmp_path, vault_root)
    path = os.fsdecode(raw)  # what a file watcher reports
    assert index.index_note(path).skipped == 1
    assert index.remove_note(path).removed == 0
    settings = vault_root / ".obsidian" / "daily-notes.json"
    settings.unlink()
    os.mkfifo(settings)  # Obsidian's settings file, as a FIFO
    reopened = _bounded(lambda: Vault(vault_root, Database(tmp_path / "b.db")))
    assert reopened.daily_folder
