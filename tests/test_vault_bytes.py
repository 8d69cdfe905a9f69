"""Byte-faithful writes (issue 14, defects 1, 2, 5): line endings, BOM, trailing newline
and non-UTF-8 bytes survive every write; the journal keeps exact bytes; undo restores the
vault byte for byte, folders a move created included. Fixtures are written here: CRLF
notes, a Latin-1 tail past the first 8 KiB, a Latin-1 note, a BOM note."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.db import Database
from tools.base import ToolError
from tools.vault.store import Vault

LATIN1_TAIL = (
    b"# Old notes\n\n"
    + b"filler line of ascii text\n" * 400  # ~10 KiB: past the 8 KiB the scan peeks at
    + b"See [[Kyoto]] for the caf\xe9 list.\n"
)


def _write(root: Path, rel: str, data: bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    _write(root, "Places/Kyoto.md", b"# Kyoto\r\n\r\nTemples [[Osaka]].\r\n")
    _write(root, "Places/Osaka.md", b"# Osaka\n")
    for i in range(5):
        _write(
            root,
            f"Trips/Trip {i}.md",
            b"---\r\ntags: [trip]\r\n---\r\n# Trip\r\n\r\nWent to [[Places/Kyoto|Kyoto]].\r\n"
            b"Also [Kyoto](../Places/Kyoto.md) again\r\n",
        )
    _write(root, "Old/Latin tail.md", LATIN1_TAIL)
    _write(root, "Old/Latin.md", b"# Vieux\n\n[[Kyoto]] \xe0 voir\n")
    _write(root, "Bom.md", b"\xef\xbb\xbf# Bom\r\n\r\nline one\r\nline two")
    return Vault(root, Database(tmp_path / "a.db"))


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _folders(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_dir()}


def test_a_move_keeps_crlf_and_undo_restores_every_byte_and_folder(vault: Vault) -> None:
    before, folders = _snapshot(vault.root), _folders(vault.root)
    result = vault.move("Places/Kyoto.md", "Travel/Japan/Kyoto.md")
    updated = [row["path"] for row in result.changes if row["op"] == "link_update"]
    assert len(updated) == 5
    trip = (vault.root / "Trips/Trip 0.md").read_bytes()
    assert trip == (
        b"---\r\ntags: [trip]\r\n---\r\n# Trip\r\n\r\nWent to [[Travel/Japan/Kyoto|Kyoto]].\r\n"
        b"Also [Kyoto](../Travel/Japan/Kyoto.md) again\r\n"
    )
    moved = (vault.root / "Travel/Japan/Kyoto.md").read_bytes()
    assert moved.count(b"\r\n") == 3 and b"\n" not in moved.replace(b"\r\n", b"")
    vault.undo()
    assert _snapshot(vault.root) == before
    assert _folders(vault.root) == folders  # Travel/ and Travel/Japan/ are gone again


def test_notes_that_are_not_utf8_are_never_rewritten_and_the_preview_names_them(
    vault: Vault,
) -> None:
    tail, latin = (
        (vault.root / "Old/Latin tail.md").read_bytes(),
        (vault.root / "Old/Latin.md").read_bytes(),
    )
    plan = vault.plan_move("Places/Kyoto.md", "Places/Kyōto")
    preview = vault.describe(plan)
    assert "cannot update 1 link(s) in Old/Latin tail.md (Kyoto)" in preview.summary
    assert "cannot update 1 link(s) in Old/Latin.md" in preview.summary
    assert "not valid UTF-8" in preview.summary
    result = vault.apply(plan)
    skipped = {row["path"]: row["why"] for row in result.changes if row["op"] == "not_updated"}
    assert set(skipped) == {"Old/Latin tail.md", "Old/Latin.md"}
    assert (vault.root / "Old/Latin tail.md").read_bytes() == tail
    assert (vault.root / "Old/Latin.md").read_bytes() == latin
    assert b"[[Places/Ky\xc5\x8dto|Kyoto]]" in (vault.root / "Trips/Trip 3.md").read_bytes()


def test_appending_to_a_note_that_is_not_utf8_is_refused_and_loses_nothing(vault: Vault) -> None:
    with pytest.raises(ToolError) as refused:
        vault.append("Old/Latin tail.md", "- one more")
    assert refused.value.code == "NOT_UTF8" and "never rewritten" in refused.value.detail
    assert (vault.root / "Old/Latin tail.md").read_bytes() == LATIN1_TAIL


def test_a_bom_crlf_and_a_missing_final_newline_survive_an_append_and_its_undo(
    vault: Vault,
) -> None:
    original = (vault.root / "Bom.md").read_bytes()
    vault.append("Bom.md", "line three\nline four")
    assert (vault.root / "Bom.md").read_bytes() == (
        b"\xef\xbb\xbf# Bom\r\n\r\nline one\r\nline two\r\nline three\r\nline four"
    )
    vault.undo()
    assert (vault.root / "Bom.md").read_bytes() == original


def test_replacing_a_section_of_a_crlf_note_keeps_crlf(vault: Vault) -> None:
    vault.replace_section("Places/Kyoto.md", "Kyoto", "New text\nand more")
    assert (vault.root / "Places/Kyoto.md").read_bytes() == (
        b"# Kyoto\r\n\r\nNew text\r\nand more\r\n"
    )


def test_an_overwrite_of_a_crlf_note_writes_crlf_and_undo_puts_the_old_bytes_back(
    vault: Vault,
) -> None:
    original = (vault.root / "Places/Kyoto.md").read_bytes()
    vault.create("Places/Kyoto.md", "# Kyoto\n\nRewritten.\n", overwrite=True)
    assert (vault.root / "Places/Kyoto.md").read_bytes() == b"# Kyoto\r\n\r\nRewritten.\r\n"
    vault.undo()
    assert (vault.root / "Places/Kyoto.md").read_bytes() == original
