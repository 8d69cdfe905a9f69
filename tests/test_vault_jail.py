"""The path jail (SPEC V3): nothing outside the vault, nothing in .obsidian, only markdown."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from memory.db import Database
from tools.base import ToolError
from tools.vault.jail import VaultJail
from tools.vault.store import Vault

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root, symlinks=True)
    return Vault(root, Database(tmp_path / "vault.db"))


def _refused(call: Callable[[], object], code: str) -> str:
    with pytest.raises(ToolError) as refused:
        call()
    assert refused.value.code == code, refused.value.detail
    return refused.value.detail


@pytest.mark.parametrize(
    ("path", "code", "why"),
    [
        ("../outside.md", "PATH_OUTSIDE_VAULT", "'..'"),
        ("Projects/../../outside.md", "PATH_OUTSIDE_VAULT", "'..'"),
        ("..\\outside.md", "PATH_OUTSIDE_VAULT", "'..'"),
        ("/etc/passwd", "PATH_OUTSIDE_VAULT", "absolute"),
        ("~/notes.md", "PATH_OUTSIDE_VAULT", "absolute"),
        ("C:/Users/me/note.md", "PATH_OUTSIDE_VAULT", "absolute"),
        (".obsidian/app.json", "PATH_FORBIDDEN", "Obsidian's settings folder"),
        (".obsidian/workspace", "PATH_FORBIDDEN", ".obsidian"),
        (".git/config", "PATH_FORBIDDEN", "git"),
        ("Projects/.hidden.md", "PATH_FORBIDDEN", "hidden"),
        ("Attachments/phoenix-architecture.png", "NOT_MARKDOWN", ".png"),
        ("notes.txt", "NOT_MARKDOWN", ".txt"),
        ("board.canvas", "NOT_MARKDOWN", ".canvas"),
        ("bad\x00name.md", "INVALID_PATH", "NUL"),
        ("", "INVALID_PATH", "needed"),
    ],
)
def test_escapes_and_forbidden_targets_are_refused_with_the_reason(
    vault: Vault, path: str, code: str, why: str
) -> None:
    detail = _refused(lambda: vault.jail.note(path, for_write=True), code)
    assert why in detail
    assert _refused(lambda: vault.create(path, "x"), code)


def test_the_extension_is_added_and_names_with_dots_stay_notes(vault: Vault) -> None:
    jail = vault.jail
    assert jail.note("Inbox/Idea").rel == "Inbox/Idea.md"
    assert jail.note("./Inbox//Idea.md").rel == "Inbox/Idea.md"
    assert jail.note("Meetings/2026.11.30 sync").rel == "Meetings/2026.11.30 sync.md"
    assert jail.note("Dr. Li").rel == "Dr. Li.md"
    assert jail.note("Projects\\Project Phoenix").rel == "Projects/Project Phoenix.md"
    assert jail.folder("/").rel == "" and jail.folder("Projects/").rel == "Projects"
    _refused(lambda: jail.note("Inbox/what?.md", for_write=True), "INVALID_PATH")


def test_a_symlink_leading_out_of_the_vault_is_refused(vault: Vault, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret\n", encoding="utf-8")
    os.symlink(outside, vault.root / "Linked")
    os.symlink(outside / "secret.md", vault.root / "Inbox" / "shortcut.md")
    for path in ("Linked/secret.md", "Inbox/shortcut.md", "Linked/new.md"):
        assert "symbolic link" in _refused(lambda p=path: vault.jail.note(p), "PATH_OUTSIDE_VAULT")
    _refused(lambda: vault.read("Inbox/shortcut.md"), "PATH_OUTSIDE_VAULT")
    _refused(lambda: vault.create("Linked/new.md", "x"), "PATH_OUTSIDE_VAULT")
    _refused(lambda: vault.list_notes("Linked"), "PATH_OUTSIDE_VAULT")
    assert not (outside / "new.md").exists()
    assert (outside / "secret.md").read_text(encoding="utf-8") == "secret\n"
    skipped = {item.path: item.reason for item in vault.scan().skipped}
    assert "symbolic link" in skipped["Inbox/shortcut.md"]


def test_a_symlink_inside_the_vault_into_obsidian_is_refused(vault: Vault) -> None:
    os.symlink(vault.root / ".obsidian" / "app.json", vault.root / "settings.md")
    _refused(lambda: vault.jail.note("settings.md"), "PATH_FORBIDDEN")


def test_obsidian_settings_are_never_listed_or_touched(vault: Vault) -> None:
    before = (vault.root / ".obsidian" / "app.json").read_bytes()
    assert not any(path.startswith(".obsidian") for path in vault.note_paths())
    _refused(lambda: vault.list_notes(".obsidian"), "PATH_FORBIDDEN")
    _refused(lambda: vault.delete(".obsidian/app.json"), "PATH_FORBIDDEN")
    assert (vault.root / ".obsidian" / "app.json").read_bytes() == before


def test_relative_maps_watcher_paths_and_rejects_outsiders(tmp_path: Path) -> None:
    jail = VaultJail(tmp_path)
    assert jail.relative(tmp_path / "Inbox" / "a.md") == "Inbox/a.md"
    assert jail.relative("Inbox/a.md") == "Inbox/a.md"
    assert jail.relative("/somewhere/else.md") is None
