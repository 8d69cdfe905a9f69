"""Markdown read as Obsidian reads it (issue 14, defects 3, 4, 6, 7, 8): code inside
callouts, blockquotes and lists; escaped pipes in table links; headings made of inline
code, links or emphasis; titles with dots; names Obsidian forbids. Fixtures written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory.db import Database
from tools.base import ToolError
from tools.vault.notes import chunk_note, parse_note
from tools.vault.store import Vault

CALLOUT = """# Colors

> [!example] How to link
> ```md
> See [[Old]] and pick #ff0000
> ```
> A real link: [[Old]]

- a list item
  ```
  [[Old]] in a listed code block
  ```
- ```js
  const tag = "#notatag";
  ```

> ```
> [[Old]] quoted code, unclosed
Outside again: [[Old]] #real
"""

TABLE = """| Page | Link |
|---|---|
| Syntax | [[Old\\|Markdown syntax]] |
| Other | [[Old#Part\\|part]] |
"""

HEADINGS = """# Commands

## `ob sync-setup`

Sets sync up.

## Use **bold** and [[Old|the old note]]

Text.
"""


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    (root / "Tech").mkdir(parents=True)
    (root / "Old.md").write_text("# Old\n\n## Part\n", encoding="utf-8")
    (root / "Callout.md").write_text(CALLOUT, encoding="utf-8")
    (root / "Table.md").write_text(TABLE, encoding="utf-8")
    (root / "Headings.md").write_text(HEADINGS, encoding="utf-8")
    (root / "Tech" / "Node.js.md").write_text("# Node.js\n\nRuntime.\n", encoding="utf-8")
    return Vault(root, Database(tmp_path / "a.db"))


def test_code_inside_callouts_blockquotes_and_lists_is_not_links_or_tags() -> None:
    note = parse_note("Callout.md", CALLOUT)
    assert [link.line for link in note.links] == [6, 18]  # the callout's prose, the last line
    assert note.tags == ["real"]  # not ff0000, not notatag


def test_a_move_leaves_code_examples_in_callouts_alone(vault: Vault) -> None:
    vault.move("Old.md", "New.md")
    text = (vault.root / "Callout.md").read_text(encoding="utf-8")
    assert text == (
        CALLOUT.replace("> A real link: [[Old]]", "> A real link: [[New]]").replace(
            "Outside again: [[Old]]", "Outside again: [[New]]"
        )
    )


def test_escaped_pipes_in_table_links_survive_a_move(vault: Vault) -> None:
    note = parse_note("Table.md", TABLE)
    assert [(link.target, link.alias) for link in note.links] == [
        ("Old", "Markdown syntax"),
        ("Old", "part"),
    ]
    vault.move("Old.md", "Archive/Basic formatting syntax.md")
    assert (vault.root / "Table.md").read_text(encoding="utf-8") == TABLE.replace(
        "[[Old", "[[Basic formatting syntax"
    )


def test_headings_of_inline_code_links_and_emphasis_read_as_shown(vault: Vault) -> None:
    note = vault.read("Headings")
    assert [h.text for h in note.headings] == [
        "Commands",
        "ob sync-setup",
        "Use bold and the old note",
    ]
    labels = [chunk.heading for chunk in chunk_note(note)]
    assert "Commands > ob sync-setup" in labels
    section = vault.plan_append("Headings.md", "more", heading="ob sync-setup")
    assert "## `ob sync-setup`\n\nSets sync up.\nmore\n" in (section[0].after_text or "")
    assert vault.plan_append("Headings.md", "x", heading="`ob sync-setup`")


def test_a_title_with_a_dot_opens_by_its_title(vault: Vault) -> None:
    assert vault.read("Node.js").path == "Tech/Node.js.md"
    assert vault.read("Tech/Node.js").path == "Tech/Node.js.md"
    with pytest.raises(ToolError) as refused:
        vault.read("script.js")
    assert refused.value.code == "NOT_MARKDOWN"


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("Kyoto #travel", "'#'"),
        ("Plan ^1", "'^'"),
        ("[draft] plan", "'['"),
        ("a|b", "'|'"),
        ("Time: now", "':'"),
        ("why?", "'?'"),
        ("CON", "reserved"),
        ("ends with dot.", "ending in a dot"),
    ],
)
def test_names_obsidian_or_the_os_forbid_are_refused_in_create_and_move(
    vault: Vault, name: str, shown: str
) -> None:
    before = sorted(p.name for p in vault.root.rglob("*"))
    for attempt in (
        lambda: vault.create(f"Inbox/{name}", "text"),
        lambda: vault.plan_move("Old.md", name),
    ):
        with pytest.raises(ToolError) as refused:
            attempt()
        assert refused.value.code == "INVALID_PATH"
        assert shown in refused.value.detail and name in refused.value.detail
    assert sorted(p.name for p in vault.root.rglob("*")) == before
