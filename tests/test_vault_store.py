"""Safe writes (SPEC V4): atomic, no clobbering, journaled, undoable, own writes known."""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest

from memory.db import Database
from tools.base import ToolError
from tools.vault.store import Vault, VaultEvent

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"
NOW = dt.datetime(2026, 11, 29, 9, 30).astimezone()


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    shutil.copytree(EXAMPLE, root)
    return Vault(root, Database(tmp_path / "vault.db"), clock=lambda: NOW)


def _text(vault: Vault, path: str) -> str:
    return (vault.root / path).read_text(encoding="utf-8")


def _snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_the_repository_example_is_never_written(vault: Vault) -> None:
    assert vault.root != EXAMPLE.resolve()
    before = _snapshot(EXAMPLE)
    vault.create("Inbox/New.md", "hello")
    vault.delete("Inbox/Ideas to sort.md")
    assert _snapshot(EXAMPLE) == before


def test_list_by_folder_tag_and_recent_change(vault: Vault) -> None:
    rows, count = vault.list_notes("Projects")
    assert [r["path"] for r in rows] == [
        "Projects/Project Phoenix.md",
        "Projects/Release Checklist.md",
        "Projects/数据库选型.md",
        "Projects/知识库迁移.md",
    ]
    assert count == 4 and rows[0]["tags"] == ["project", "phoenix", "risk"]
    tagged, _ = vault.list_notes(tag="phoenix")
    assert {r["path"] for r in tagged} == {
        "Projects/Project Phoenix.md",  # frontmatter
        "Daily/2026-11-24.md",  # inline #phoenix
        "Meetings/2026-11-20 Phoenix kickoff.md",
    }  # not Release Checklist: its tag is project/phoenix, a child of "project"
    nested, _ = vault.list_notes(tag="project")
    assert "Projects/Release Checklist.md" in {r["path"] for r in nested}
    old = (NOW - dt.timedelta(days=30)).timestamp()
    for path in vault.root.rglob("*.md"):
        os.utime(path, (old, old))
    vault.create("Inbox/Fresh.md", "new")
    recent, _ = vault.list_notes(since=(NOW - dt.timedelta(days=1)).timestamp(), recent_first=True)
    assert [r["path"] for r in recent] == ["Inbox/Fresh.md"]
    _, total = vault.list_notes(limit=2)
    assert total == len(vault.note_paths())


def test_create_never_clobbers_and_overwrite_must_be_asked(vault: Vault) -> None:
    original = _text(vault, "Inbox/Ideas to sort.md")
    with pytest.raises(ToolError) as exists:
        vault.create("Inbox/Ideas to sort", "replaced")
    assert exists.value.code == "NOTE_EXISTS"
    assert _text(vault, "Inbox/Ideas to sort.md") == original
    vault.create("Inbox/Ideas to sort", "replaced", overwrite=True)
    assert _text(vault, "Inbox/Ideas to sort.md") == "replaced\n"
    created = vault.create("New Folder/Deep/Note", "# Note")
    assert created.path == "New Folder/Deep/Note.md" and created.op == "create"


def test_a_failing_rename_leaves_the_old_note_whole(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = "Projects/Project Phoenix.md"
    original = _text(vault, path)

    def crash(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(ToolError) as failed:
        vault.append(path, "- a new line")
    assert failed.value.code == "WRITE_FAILED" and "unchanged" in failed.value.detail
    assert _text(vault, path) == original
    leftovers = [p.name for p in (vault.root / "Projects").iterdir() if p.name.startswith(".")]
    assert leftovers == []
    assert vault.journal() == []  # a write that did not happen is not undoable
    monkeypatch.undo()
    vault.append(path, "- a new line")
    assert _text(vault, path) == original.rstrip("\n") + "\n- a new line\n"


def test_append_to_the_end_or_under_a_heading(vault: Vault) -> None:
    vault.append("知识库迁移", "- 11-29：共享盘清单整理完毕。", heading="进展")
    text = _text(vault, "Projects/知识库迁移.md")
    assert "3,400 个页面。\n- 11-29：共享盘清单整理完毕。\n\n## 风险" in text
    vault.append("Projects/知识库迁移.md", "Last line.")
    assert _text(vault, "Projects/知识库迁移.md").endswith("需要人工核对。\nLast line.\n")
    with pytest.raises(ToolError) as missing:
        vault.append("Inbox/Nope.md", "x")
    assert missing.value.code == "NOT_FOUND"
    assert vault.append("Inbox/Nope.md", "x", create=True).op == "create"


def test_replace_section_keeps_the_rest(vault: Vault) -> None:
    path = "Projects/Project Phoenix.md"
    before = _text(vault, path)
    vault.replace_section(path, "Risks", "- None left.")
    after = _text(vault, path)
    assert "## Risks\n\n- None left.\n" in after and "payment sandbox has been" not in after
    assert after.split("## Risks")[0] == before.split("## Risks")[0]
    with pytest.raises(ToolError) as missing:
        vault.replace_section(path, "Budget", "x")
    assert missing.value.code == "SECTION_NOT_FOUND" and "Goals" in missing.value.extra["headings"]


def test_move_updates_links_across_the_vault_and_undo_restores_all(vault: Vault) -> None:
    before = _snapshot(vault.root)
    result = vault.move("Projects/Release Checklist.md", "Archive/Release Runbook")
    assert result.path == "Archive/Release Runbook.md"
    assert not (vault.root / "Projects/Release Checklist.md").exists()
    phoenix = _text(vault, "Projects/Project Phoenix.md")
    assert "[[Release Runbook]]" in phoenix and "[[Release Runbook#Rollback]]" in phoenix
    assert "[[Release Checklist" not in "".join(
        p.read_text(encoding="utf-8") for p in vault.root.rglob("*.md")
    )
    updated = {c["path"] for c in result.changes if c["op"] == "link_update"}
    assert "Meetings/2026-11-20 Phoenix kickoff.md" in updated
    undone = vault.undo()
    assert [u["op"] for u in undone.undone] == ["move"] and undone.stopped is None
    assert _snapshot(vault.root) == {**before}


def test_move_updates_every_link_form_and_leaves_code_alone(vault: Vault) -> None:
    links = (
        '---\nrelated: "[[Release Checklist]]"\n---\n'
        "- [[Release Checklist|the checklist]] and [[Release Checklist#Rollback]]\n"
        "- ![[Release Checklist]] and [[Projects/Release Checklist]]\n"
        "- [md](Projects/Release%20Checklist.md)\n"
        "- [rel](../Projects/Release%20Checklist.md#Rollback)\n"
        '- [angle](<../Projects/Release Checklist.md> "title")\n'
        "- [web](https://x.org/Release%20Checklist.md)\n"
        "- inline `[[Release Checklist]]` and `[x](../Projects/Release%20Checklist.md)` stay\n"
        "```\n[[Release Checklist]] [x](../Projects/Release%20Checklist.md)\n```\n"
    )
    vault.create("Inbox/Links.md", links)
    before = _snapshot(vault.root)
    result = vault.move("Projects/Release Checklist.md", "Archive/Launch Day")
    text = _text(vault, "Inbox/Links.md")
    assert text == (
        '---\nrelated: "[[Launch Day]]"\n---\n'
        "- [[Launch Day|the checklist]] and [[Launch Day#Rollback]]\n"
        "- ![[Launch Day]] and [[Archive/Launch Day]]\n"
        "- [md](Archive/Launch%20Day.md)\n"
        "- [rel](../Archive/Launch%20Day.md#Rollback)\n"
        '- [angle](<../Archive/Launch Day.md> "title")\n'
        "- [web](https://x.org/Release%20Checklist.md)\n"
        "- inline `[[Release Checklist]]` and `[x](../Projects/Release%20Checklist.md)` stay\n"
        "```\n[[Release Checklist]] [x](../Projects/Release%20Checklist.md)\n```\n"
    )
    assert "update 8 link(s) in Inbox/Links.md" in vault.journal()[0]["summary"]
    assert {c["path"] for c in result.changes if c["op"] == "link_update"} >= {
        "Inbox/Links.md",
        "Projects/Project Phoenix.md",
    }
    vault.undo()
    assert _snapshot(vault.root) == before


def test_renaming_in_place_and_refusing_to_move_onto_a_note(vault: Vault) -> None:
    assert vault.move("People/Alice Chen.md", "Alice").path == "People/Alice.md"
    with pytest.raises(ToolError) as taken:
        vault.move("People/Alice.md", "Projects/数据库选型.md")
    assert taken.value.code == "NOTE_EXISTS"


def test_undo_restores_the_last_writes_newest_first(vault: Vault) -> None:
    before = _snapshot(vault.root)
    vault.create("Inbox/A.md", "a")
    vault.append("Inbox/A.md", "more")
    vault.delete("Inbox/Ideas to sort.md")
    vault.create("Projects/Project Phoenix.md", "gone", overwrite=True)
    assert [j["op"] for j in vault.journal()] == ["overwrite", "delete", "append", "create"]
    first = vault.undo(2)
    assert [u["op"] for u in first.undone] == ["overwrite", "delete"]
    assert (vault.root / "Inbox/Ideas to sort.md").exists()
    assert _text(vault, "Inbox/A.md") == "a\nmore\n"
    second = vault.undo(5)
    assert [u["op"] for u in second.undone] == ["append", "create"]
    assert _snapshot(vault.root) == before
    assert vault.undo().undone == []


def test_undo_refuses_to_overwrite_edits_made_since(vault: Vault) -> None:
    vault.append("Inbox/Ideas to sort.md", "- from the assistant")
    (vault.root / "Inbox/Ideas to sort.md").write_text("the user rewrote it\n", encoding="utf-8")
    result = vault.undo()
    assert result.undone == [] and "edited since" in (result.stopped or "")
    assert _text(vault, "Inbox/Ideas to sort.md") == "the user rewrote it\n"
    forced = vault.undo(force=True)
    assert forced.undone and "from the assistant" not in _text(vault, "Inbox/Ideas to sort.md")


def test_own_writes_are_recognised_and_user_edits_are_not(vault: Vault) -> None:
    vault.create("Inbox/Mine.md", "mine")
    assert vault.was_own_write("Inbox/Mine.md")
    assert vault.was_own_write(vault.root / "Inbox" / "Mine.md")
    assert vault.was_own_write(vault.root / "Inbox" / ".Mine.md.abc123.vault-tmp")
    assert not vault.was_own_write("Inbox/Ideas to sort.md")
    stat = (vault.root / "Inbox/Mine.md").stat()
    (vault.root / "Inbox/Mine.md").write_text("the user's edit\n", encoding="utf-8")
    os.utime(vault.root / "Inbox/Mine.md", ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert not vault.was_own_write("Inbox/Mine.md")
    vault.delete("Inbox/Ideas to sort.md")
    assert vault.was_own_write("Inbox/Ideas to sort.md")
    assert not vault.was_own_write("/elsewhere/file.md")


def test_listeners_hear_every_write_and_undo(vault: Vault) -> None:
    events: list[VaultEvent] = []
    vault.subscribe(events.append)
    vault.move("Inbox/Ideas to sort.md", "Inbox/Sorted.md")
    vault.undo()
    assert events[0].removed == ("Inbox/Ideas to sort.md",)
    assert events[0].changed[0] == "Inbox/Sorted.md"
    assert "Inbox/Ideas to sort.md" in events[1].changed
    assert "Inbox/Sorted.md" in events[1].removed


def test_templates_and_daily_notes_follow_obsidian_settings(vault: Vault) -> None:
    assert vault.daily_folder == "Daily" and vault.daily_template == "Templates/Daily"
    source, plan = vault.plan_template("周报", "Weekly/{{date:GGGG-[W]WW}} 周报")
    assert source.rel == "Templates/周报模板.md"
    assert plan[0].path.rel == "Weekly/2026-W48 周报.md"
    assert "# 2026-W48 周报" in (plan[0].after_text or "")
    assert 'created: "2026-11-29"' in (plan[0].after_text or "")
    with pytest.raises(ToolError) as unknown:
        vault.template_path("Budget")
    assert unknown.value.code == "TEMPLATE_NOT_FOUND"
    assert "Templates/Meeting.md" in unknown.value.extra["templates"]
    found, daily = vault.plan_daily("- first entry")
    vault.apply(daily)
    assert found.rel == "Daily/2026-11-29.md"
    text = _text(vault, found.rel)
    assert text.startswith("# 2026-11-29 Sunday") and text.endswith("## Log\n- first entry\n")
    _, again = vault.plan_daily("- second entry")
    vault.apply(again)
    assert _text(vault, found.rel).endswith("- first entry\n- second entry\n")


def test_the_journal_keeps_only_the_latest_writes(tmp_path: Path) -> None:
    root = tmp_path / "v"
    root.mkdir()
    vault = Vault(root, Database(tmp_path / "j.db"), journal_keep=3)
    for n in range(6):
        vault.create(f"n{n}.md", str(n))
    assert [j["path"] for j in vault.journal(10)] == ["n5.md", "n4.md", "n3.md"]
