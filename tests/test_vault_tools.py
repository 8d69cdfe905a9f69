"""The vault tools (SPEC V2, V5) through the real runner: every tool on a temporary copy of
vault_example, synonyms models use, errors as data, and dangerous calls held for the user."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory.db import Database
from tools.base import ToolContext
from tools.confirm import ConfirmationError, PendingActions
from tools.registry import ToolRegistry
from tools.runner import CallOutcome, ToolRunner
from tools.vault import Vault, VaultIndex, vault_tools

EXAMPLE = Path(__file__).resolve().parent.parent / "vault_example"
NOW = dt.datetime(2026, 11, 29, 9, 30).astimezone()


class Harness:
    def __init__(self, tmp_path: Path) -> None:
        root = tmp_path / "vault"
        shutil.copytree(EXAMPLE, root)
        self.database = Database(tmp_path / "assistant.db")
        self.vault = Vault(root, self.database, clock=lambda: NOW)
        self.index = VaultIndex(self.vault, self.database, None)  # full text only: fast
        self.index.index_vault()
        self.registry = ToolRegistry(vault_tools(self.vault, self.index))
        self.pending = PendingActions(self.database)
        self.runner = ToolRunner(self.registry, pending=self.pending, result_budget=20_000)

    def call(self, name: str, unattended: bool = False, **arguments: Any) -> CallOutcome:
        prepared = self.runner.prepare(f"call_{uuid.uuid4().hex[:6]}", name, json.dumps(arguments))

        def context(call: Any) -> ToolContext:
            return ToolContext(
                session="s1",
                turn_id="t1",
                call_id=call.call_id,
                idempotency_key=uuid.uuid4().hex,
                unattended=unattended,
            )

        [outcome] = self.runner.run([prepared], context)
        return outcome

    def ok(self, name: str, **arguments: Any) -> dict[str, Any]:
        outcome = self.call(name, **arguments)
        assert outcome.status == "ok", outcome.result
        return outcome.result

    def text(self, path: str) -> str:
        return (self.vault.root / path).read_text(encoding="utf-8")

    def snapshot(self) -> dict[str, bytes]:
        root = self.vault.root
        return {
            p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
        }


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    yield Harness(tmp_path)


def test_the_tools_say_when_to_call_them_and_how_they_write(harness: Harness) -> None:
    tools = {name: harness.registry.get(name) for name in harness.registry.names()}
    assert set(tools) == {
        "vault_list",
        "vault_read",
        "vault_search",
        "vault_create",
        "vault_append",
        "vault_replace_section",
        "vault_overwrite",
        "vault_move",
        "vault_delete",
        "vault_create_from_template",
        "vault_daily_note",
    }
    for name, item in tools.items():
        assert item is not None and "Call this" in item.description, name
        if item.read_only:
            assert not item.cacheable, f"{name} would serve stale notes from the cache"
        else:
            assert item.sequential, name
    dangerous = {name for name, item in tools.items() if item and item.dangerous}
    assert dangerous == {"vault_replace_section", "vault_overwrite", "vault_move", "vault_delete"}
    schema = tools["vault_read"].parameters_schema  # type: ignore[union-attr]
    assert schema["required"] == ["path"]


def test_list_read_and_search_with_the_synonyms_models_use(harness: Harness) -> None:
    listed = harness.ok("vault_list", dir="Projects")
    assert listed["count"] == 4
    assert (
        harness.ok("vault_list", directory=["Inbox"])["notes"][0]["path"]
        == "Inbox/Ideas to sort.md"
    )
    assert harness.ok("vault_list", tags="周报")["count"] == 2
    old = (NOW - dt.timedelta(days=30)).timestamp()
    for path in harness.vault.root.rglob("*.md"):
        os.utime(path, (old, old))
    assert harness.ok("vault_list", days=7)["notes"] == []
    harness.ok("vault_daily_note", text="- fresh")
    assert [r["path"] for r in harness.ok("vault_list", days=7)["notes"]] == ["Daily/2026-11-29.md"]
    read = harness.ok("vault_read", title="Project Phoenix", backlinks=True)
    assert read["path"] == "Projects/Project Phoenix.md"
    assert read["frontmatter"]["due"] == "2026-12-03"  # a YAML date, as JSON data
    assert "Release Checklist" in read["links"] and "People/Alice Chen.md" in read["backlinks"]
    section = harness.ok("vault_read", note="Projects/知识库迁移", section="风险")
    assert section["section"] == "风险" and "800 GB" in section["content"]
    assert "进展" not in section["content"]
    found = harness.ok("vault_search", q="payment sandbox", limit=3)
    assert found["results"][0]["path"] == "Projects/Project Phoenix.md"
    assert "**payment sandbox**" in found["results"][0]["snippet"]
    chinese = harness.ok("vault_search", query="附件 传输窗口")
    assert chinese["results"][0]["path"] == "Projects/知识库迁移.md"


def test_errors_come_back_as_data_that_says_why(harness: Harness) -> None:
    missing = harness.call("vault_read", path="Project Phenix")
    assert missing.status == "NOT_FOUND"
    assert missing.result["did_you_mean"] == ["Projects/Project Phoenix.md"]
    escape = harness.call("vault_read", path="../../etc/passwd")
    assert escape.status == "PATH_OUTSIDE_VAULT" and "'..'" in escape.result["detail"]
    settings = harness.call("vault_create", path=".obsidian/app.json", content="{}")
    assert settings.status == "PATH_FORBIDDEN"
    image = harness.call("vault_append", path="Attachments/phoenix-architecture.png", text="x")
    assert image.status == "NOT_MARKDOWN"
    section = harness.call("vault_read", path="Projects/Project Phoenix.md", heading="Budget")
    assert section.status == "SECTION_NOT_FOUND" and "Risks" in section.result["headings"]


def test_create_and_append_write_and_never_clobber(harness: Harness) -> None:
    created = harness.ok(
        "vault_create",
        note="Inbox/Reading list",
        body="# Reading list\n\n- Designing Data-Intensive Applications",
        properties={"tags": ["reading"], "status": "active"},
    )
    assert created["status"] == "created" and created["path"] == "Inbox/Reading list.md"
    assert "undo" in created["undo"]
    note = harness.vault.read("Inbox/Reading list.md")
    assert note.frontmatter == {"status": "active", "tags": ["reading"]}
    again = harness.call("vault_create", path="Inbox/Reading list.md", content="other")
    assert again.status == "NOTE_EXISTS" and "overwrite" in again.result["detail"]
    appended = harness.ok("vault_append", file="Reading list", content="- SICP")
    assert appended["status"] == "appended"
    assert harness.text("Inbox/Reading list.md").endswith("Applications\n- SICP\n")
    assert harness.ok("vault_search", query="SICP")["results"][0]["path"] == "Inbox/Reading list.md"


@pytest.mark.parametrize(
    ("tool", "arguments", "expect_in_diff"),
    [
        (
            "vault_replace_section",
            {"path": "Projects/Project Phoenix.md", "heading": "Risks", "text": "- None."},
            "+- None.",
        ),
        ("vault_overwrite", {"path": "Inbox/Ideas to sort.md", "content": "empty"}, "+empty"),
        ("vault_delete", {"path": "People/Alice Chen.md"}, "-# Alice Chen"),
        (
            "vault_move",
            {"path": "Projects/Release Checklist.md", "to": "Archive/Release Checklist"},
            "rename Projects/Release Checklist.md -> Archive/Release Checklist.md",
        ),
    ],
)
def test_dangerous_calls_wait_for_confirmation_then_run_once(
    harness: Harness, tool: str, arguments: dict[str, Any], expect_in_diff: str
) -> None:
    before = harness.snapshot()
    outcome = harness.call(tool, **arguments)
    assert outcome.status == "pending_confirmation" and outcome.dangerous
    payload = outcome.result
    assert expect_in_diff in payload["diff"] and "Nothing has changed yet" in payload["note"]
    assert harness.snapshot() == before
    with pytest.raises(ConfirmationError):
        harness.pending.confirm(payload["action_id"], harness.registry, unattended=True)
    assert harness.snapshot() == before
    done = harness.pending.confirm(payload["action_id"], harness.registry)
    assert done.status == "confirmed", done.result
    assert harness.snapshot() != before
    harness.vault.undo()
    assert harness.snapshot() == before


def test_a_move_updates_links_and_says_where(harness: Harness) -> None:
    outcome = harness.call("vault_move", path="Release Checklist", new_name="Launch Runbook")
    summary = outcome.result["would"]
    assert "move Projects/Release Checklist.md to Projects/Launch Runbook.md" in summary
    assert "update 2 link(s) in Projects/Project Phoenix.md" in summary
    done = harness.pending.confirm(outcome.result["action_id"], harness.registry)
    assert "Projects/Project Phoenix.md" in done.result["links_updated_in"]
    assert "[[Launch Runbook#Rollback]]" in harness.text("Projects/Project Phoenix.md")
    hits = harness.ok("vault_search", query="feature flag phoenix_checkout")["results"]
    assert hits[0]["path"] == "Projects/Launch Runbook.md"


def test_a_dangerous_call_that_cannot_run_is_refused_not_offered(harness: Harness) -> None:
    outcome = harness.call("vault_delete", path="Inbox/Ideas to srot.md")
    assert outcome.status == "NOT_FOUND"
    assert outcome.result["did_you_mean"] == ["Inbox/Ideas to sort.md"]
    assert harness.pending.list() == []  # nothing waits for a yes that could only fail


@pytest.mark.parametrize(
    ("tool", "arguments", "edited"),
    [
        ("vault_overwrite", {"path": "Inbox/Ideas to sort.md", "content": "x"}, None),
        (
            "vault_replace_section",
            {"path": "Projects/Project Phoenix.md", "heading": "Risks", "text": "- none"},
            None,
        ),
        ("vault_delete", {"path": "Inbox/Ideas to sort.md"}, None),
        # a move is stale when a note whose links it rewrites changed, too
        (
            "vault_move",
            {"path": "Projects/Release Checklist.md", "to": "Archive/Runbook"},
            "Daily/2026-11-26.md",
        ),
    ],
)
def test_a_confirmation_is_refused_when_the_note_changed_since_the_preview(
    harness: Harness, tool: str, arguments: dict[str, Any], edited: str | None
) -> None:
    outcome = harness.call(tool, **arguments)
    action_id = outcome.result["action_id"]
    edited = edited or arguments["path"]
    with (harness.vault.root / edited).open("a", encoding="utf-8") as handle:
        handle.write("- written by the user after the preview\n")
    before = harness.snapshot()
    with pytest.raises(ConfirmationError) as stale:
        harness.pending.confirm(action_id, harness.registry)
    assert stale.value.code == "STALE"
    assert f"{edited} changed since the preview" in str(stale.value)
    assert harness.snapshot() == before  # nothing written, nothing deleted
    assert harness.vault.journal() == []
    refused = harness.pending.get(action_id)
    assert refused is not None and refused.status == "stale"
    with pytest.raises(ConfirmationError):
        harness.pending.confirm(action_id, harness.registry)
    fresh = harness.call(tool, **arguments).result  # planned from the user's version
    done = harness.pending.confirm(fresh["action_id"], harness.registry)
    assert done.status == "confirmed", done.result
    if tool == "vault_move":
        assert "written by the user after the preview" in harness.text(edited)


def test_a_preview_that_cannot_run_gives_its_error_and_hints(harness: Harness) -> None:
    outcome = harness.call(
        "vault_replace_section", path="Inbox/Ideas to sort.md", heading="Later", text="- done"
    )
    assert outcome.status == "SECTION_NOT_FOUND"
    assert "headings" in outcome.result and harness.pending.list() == []


def test_create_from_template_fills_the_variables(harness: Harness) -> None:
    made = harness.ok(
        "vault_create_from_template",
        template_name="Meeting",
        title="Budget review",
        folder="Meetings",
    )
    assert (
        made["path"] == "Meetings/Budget review.md" and made["template"] == "Templates/Meeting.md"
    )
    text = harness.text("Meetings/Budget review.md")
    assert text.startswith('---\ntags: [meeting]\ndate: "2026-11-29"')
    assert "# Budget review" in text and "Sunday, November 29th 2026 at 09:30" in text
    weekly = harness.ok(
        "vault_create_from_template", template="周报模板", path="Weekly/{{date:GGGG-[W]WW}} 周报"
    )
    assert weekly["path"] == "Weekly/2026-W48 周报.md"
    assert "# 2026-W48 周报" in weekly["content"] and "{{" not in weekly["content"]
    twice = harness.call("vault_create_from_template", template="周报模板", path=weekly["path"])
    assert twice.status == "NOTE_EXISTS"
    unknown = harness.call("vault_create_from_template", template="Budget", title="x")
    assert unknown.status == "TEMPLATE_NOT_FOUND"


def test_the_daily_note_is_created_from_its_template_and_appended_to(harness: Harness) -> None:
    first = harness.ok("vault_daily_note", entry="- Called the bank")
    assert first["path"] == "Daily/2026-11-29.md" and first["created"] and first["appended"]
    second = harness.ok("vault_daily_note", text="- 给妈妈打电话")
    assert second["status"] == "appended" and not second["created"]
    text = harness.text("Daily/2026-11-29.md")
    assert text.startswith("# 2026-11-29 Sunday")
    assert text.endswith("## Log\n- Called the bank\n- 给妈妈打电话\n")
    shown = harness.ok("vault_daily_note")
    assert shown["status"] == "exists" and "给妈妈打电话" in shown["content"]
    past = harness.ok("vault_daily_note", date="2026-11-24")
    assert past["path"] == "Daily/2026-11-24.md" and "王磊" in past["content"]


def test_long_notes_are_cut_with_a_hint_to_read_a_section(harness: Harness) -> None:
    body = "# Long\n\n" + "".join(f"## Part {n}\n\n" + "words " * 100 + "\n\n" for n in range(30))
    harness.ok("vault_create", path="Inbox/Long.md", content=body)
    read = harness.ok("vault_read", path="Inbox/Long.md", max_chars=1000)
    assert len(read["content"]) <= 1000 and "read one section" in read["content_truncated"]
    assert read["headings"][-1] == "Part 29"
    part = harness.ok("vault_read", path="Inbox/Long.md", heading="Part 29")
    assert part["content"].startswith("## Part 29") and "content_truncated" not in part
