"""The vault model (SPEC V1): frontmatter, links, tags, sections, backlinks, skipped files."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from tools.vault.notes import (
    LinkResolver,
    _split_long,
    backlinks,
    chunk_note,
    find_sections,
    moment_format,
    parse_links,
    parse_note,
    relink,
    render_template,
    section_text,
    skip_reason,
    tag_matches,
)

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"

NOTE = """---
title: Plan
tags: [project, "#Alpha"]
due: 2026-12-03
---
# Plan

Intro with #inline-tag and #项目/子项 but not #123 or a [link](http://x.com/#frag).
See [[Other Note]], [[Other Note#Risks|the risks]], ![[diagram.png]] and [[#Goals]].

## Goals

- Ship it. #goal

### Detail

Deep text.

## Code

```python
# not a heading #not-a-tag [[Not A Link]]
```

Inline `#nope [[Nope]]` code. <!-- #hidden --> %% [[Hidden]] %%
"""


def test_frontmatter_links_tags_and_headings_are_parsed() -> None:
    note = parse_note("Projects/Plan.md", NOTE)
    assert note.title == "Plan"
    assert note.frontmatter["due"] == dt.date(2026, 12, 3)
    assert note.frontmatter_error is None
    assert note.body.startswith("# Plan")
    assert note.tags == ["project", "Alpha", "inline-tag", "项目/子项", "goal"]
    links = [(link.target, link.heading, link.alias, link.embed) for link in note.links]
    assert links == [
        ("Other Note", None, None, False),
        ("Other Note", "Risks", "the risks", False),
        ("diagram.png", None, None, True),
        ("", "Goals", None, False),
    ]
    assert [(h.level, h.text) for h in note.headings] == [
        (1, "Plan"),
        (2, "Goals"),
        (3, "Detail"),
        (2, "Code"),
    ]


def test_tags_as_a_string_and_nested_tags_match_their_parent() -> None:
    note = parse_note("a.md", "---\ntags: work, 周报 todo\n---\nbody #work/q4\n")
    assert note.tags == ["work", "周报", "todo", "work/q4"]
    assert tag_matches(note.tags, "#WORK") and tag_matches(["work/q4"], "work")
    assert not tag_matches(["workshop"], "work")


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        ("---\ntitle: [unclosed\n---\n# Body\ntext #tag\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n# Body\ntext #tag\n", "not key: value pairs"),
    ],
)
def test_broken_frontmatter_is_reported_and_the_note_stays_readable(raw: str, error: str) -> None:
    note = parse_note("broken.md", raw)
    assert error in (note.frontmatter_error or "")
    assert note.frontmatter == {}
    assert note.body.startswith("# Body")
    assert note.tags == ["tag"] and [h.text for h in note.headings] == ["Body"]


def test_a_note_without_frontmatter_and_one_with_an_unclosed_block() -> None:
    plain = parse_note("p.md", "# Title\n\n---\n\nafter a rule\n")
    assert plain.frontmatter_error is None and plain.body_start == 0
    unclosed = parse_note("u.md", "---\ntitle: x\n# Title\n")
    assert "no closing" in (unclosed.frontmatter_error or "")
    assert [h.text for h in unclosed.headings] == ["Title"]


def test_sections_include_their_subsections() -> None:
    note = parse_note("Plan.md", NOTE)
    [goals] = find_sections(note, "## goals")
    text = section_text(note, goals)
    assert text.startswith("## Goals") and "Deep text." in text and "## Code" not in text
    assert find_sections(note, "Missing") == []


def test_chunks_follow_headings_and_carry_the_title_and_trail() -> None:
    note = parse_note("Plan.md", NOTE)
    chunks = chunk_note(note)
    assert [c.heading for c in chunks] == [
        "Plan",
        "Plan > Goals",
        "Plan > Goals > Detail",
        "Plan > Code",
    ]
    assert chunks[2].embed_text.startswith("Plan\nPlan > Goals > Detail\n")
    assert len({c.hash for c in chunks}) == len(chunks)
    paragraphs = "\n\n".join(f"paragraph {i} " * 30 for i in range(20))
    long = parse_note("Long.md", "# Long\n\n" + paragraphs)
    pieces = chunk_note(long, max_chars=600)
    assert len(pieces) > 5 and all(len(c.text) <= 600 for c in pieces)


def _long_section(words: list[str]) -> list[str]:
    """Forty paragraphs and lists of varied length: a section far over the chunk limit."""
    blocks = []
    for i in range(40):
        size = 8 + (i * 7) % 45
        text = " ".join(words[(i * 3 + j) % len(words)] for j in range(size))
        blocks.append(f"- {text}\n- item {i}" if i % 3 == 0 else f"Paragraph {i}: {text}.")
    return blocks


def test_a_one_line_edit_in_a_long_section_changes_one_chunk() -> None:
    words = [
        "release",
        "plan",
        "budget",
        "迁移",
        "数据库",
        "review",
        "latency",
        "rollout",
        "周报",
        "owner",
        "risk",
    ]
    blocks = _long_section(words)
    text = "# Long\n\n## Log\n\n" + "\n\n".join(blocks) + "\n"
    before = chunk_note(parse_note("Long.md", text))
    assert len(before) >= 8 and all(len(c.text) <= 1200 for c in before)
    for number in range(0, 40, 3):
        edited = list(blocks)
        edited[number] += " (edited: one more clause)"
        after = chunk_note(parse_note("Long.md", "# Long\n\n## Log\n\n" + "\n\n".join(edited)))
        new = {c.hash for c in after} - {c.hash for c in before}
        assert len(new) == 1, f"editing block {number} changed {len(new)} chunks"


def test_long_text_is_split_in_order_without_losing_a_character() -> None:
    text = "\n\n".join(_long_section(["a", "bb", "ccc", "dddd"])) + "\n" + "x" * 3000 + "\n"
    pieces = _split_long(text, 500)
    assert "".join(pieces) == text.rstrip("\n") and all(len(piece) <= 500 for piece in pieces)


def test_links_resolve_like_obsidian_and_backlinks_are_found() -> None:
    notes = [
        parse_note(p.relative_to(EXAMPLE).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted(EXAMPLE.rglob("*.md"))
        if ".obsidian" not in p.parts
    ]
    resolver = LinkResolver(n.path for n in notes)
    assert resolver.resolve("Project Phoenix") == "Projects/Project Phoenix.md"
    assert resolver.resolve("projects/release checklist.md") == "Projects/Release Checklist.md"
    assert resolver.resolve("Nowhere") is None
    sources = {b.source for b in backlinks(notes, "Projects/知识库迁移.md", resolver)}
    assert {"Projects/数据库选型.md", "Daily/2026-11-24.md", "Weekly/2026-W47 周报.md"} <= sources
    assert "Projects/知识库迁移.md" not in sources


def test_same_named_notes_prefer_the_same_folder() -> None:
    resolver = LinkResolver(["A/Index.md", "B/Index.md", "B/Note.md", "Index2.md"])
    assert resolver.resolve("Index", "B/Note.md") == "B/Index.md"
    assert not resolver.unique_name("A/Index.md")
    assert resolver.link_text("A/Index.md") == "A/Index"


def test_relink_keeps_headings_and_aliases_and_skips_code() -> None:
    raw = (
        "See [[Old]], [[Old#Part|alias]], ![[Old]] and [[Older]]; `[[Old]]` stays.\n"
        "```\n[[Old]] [x](Old.md)\n```\n"
    )
    note = parse_note("x.md", raw)
    old = LinkResolver(["Old.md", "Older.md", "x.md"])
    new = LinkResolver(["New.md", "Older.md", "x.md"])
    text, count = relink(note, "x.md", old, new, {"Old.md": "New.md"})
    assert count == 3
    assert text.splitlines()[0] == (
        "See [[New]], [[New#Part|alias]], ![[New]] and [[Older]]; `[[Old]]` stays."
    )
    assert text.splitlines()[2] == "[[Old]] [x](Old.md)"
    assert parse_links("[[a|b]]")[0].alias == "b"


def test_relink_rewrites_markdown_links_in_their_own_style() -> None:
    raw = (
        "---\nrelated: '[[My Note]]'\n---\n"
        '[a](A/My%20Note.md) [b](../A/My%20Note.md#Some%20heading) [c](<A/My Note.md> "t")\n'
        "[d](My%20Note.md) ![e](/A/My%20Note.md) [f](https://example.com/My%20Note.md)\n"
        "[ref]: A/My%20Note.md\n[^1]: My Note is a footnote, not a link\n"
    )
    note = parse_note("B/src.md", raw)
    old = LinkResolver(["A/My Note.md", "B/src.md"])
    new = LinkResolver(["C/Your Note (draft).md", "B/src.md"])
    text, count = relink(note, "B/src.md", old, new, {"A/My Note.md": "C/Your Note (draft).md"})
    assert count == 7
    assert text == (
        "---\nrelated: '[[Your Note (draft)]]'\n---\n"
        "[a](C/Your%20Note%20%28draft%29.md) [b](../C/Your%20Note%20%28draft%29.md#Some%20heading)"
        ' [c](<C/Your Note (draft).md> "t")\n'
        "[d](Your%20Note%20%28draft%29.md) ![e](/C/Your%20Note%20%28draft%29.md)"
        " [f](https://example.com/My%20Note.md)\n"
        "[ref]: C/Your%20Note%20%28draft%29.md\n[^1]: My Note is a footnote, not a link\n"
    )


def test_relink_keeps_the_moved_notes_own_relative_links_pointing_right() -> None:
    raw = "[peer](Peer.md) [up](../Top.md) [[Peer]] ![img](../Attachments/pic.png)\n"
    raw += "[same](./Peer.md)\n"
    note = parse_note("A/Moved.md", raw)
    paths = ["A/Moved.md", "A/Peer.md", "Top.md"]
    old = LinkResolver(paths)
    new = LinkResolver(["B/C/Moved.md", "A/Peer.md", "Top.md"])
    text, count = relink(
        note,
        "B/C/Moved.md",
        old,
        new,
        {"A/Moved.md": "B/C/Moved.md"},
        file_exists=lambda rel: rel == "Attachments/pic.png",
    )
    # a bare name still finds its note from anywhere; relative paths are recomputed
    assert text.splitlines() == [
        "[peer](Peer.md) [up](../../Top.md) [[Peer]] ![img](../../Attachments/pic.png)",
        "[same](../../A/Peer.md)",
    ]
    assert count == 3


def test_files_that_are_not_notes_are_skipped_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# fine\n", encoding="utf-8")
    (tmp_path / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    (tmp_path / "binary.md").write_bytes(b"abc\x00def")
    (tmp_path / "latin1.md").write_bytes("caf\xe9 au lait, d\xe9j\xe0 vu".encode("latin-1"))
    (tmp_path / "huge.md").write_text("x" * 2048, encoding="utf-8")
    assert skip_reason(tmp_path / "ok.md") is None
    assert "not markdown" in (skip_reason(tmp_path / "image.png") or "")
    assert "binary" in (skip_reason(tmp_path / "binary.md") or "")
    assert "UTF-8" in (skip_reason(tmp_path / "latin1.md") or "")
    assert "too large" in (skip_reason(tmp_path / "huge.md", max_bytes=1024) or "")


def test_template_variables_and_moment_formats() -> None:
    now = dt.datetime(2026, 11, 29, 9, 5)
    text = (
        "{{title}} {{date}} {{time}} {{date:GGGG-[W]WW}} {{ date : dddd, MMMM Do YYYY }} "
        "{{x}} {{nope}}"
    )
    filled = render_template(text, title="周报", now=now, variables={"x": "y"})
    assert filled == "周报 2026-11-29 09:05 2026-W48 Sunday, November 29th 2026 y {{nope}}"
    assert moment_format(now, "YY/M/D h:mm A [at] Q") == "26/11/29 9:05 AM at 4"
