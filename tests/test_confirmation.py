"""Dangerous actions wait for the user's yes (SPEC S2, V5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.testing import ScriptedModel, calls, text
from tools.base import ActionPreview, ToolArgs, ToolContext, ToolError, tool
from tools.confirm import STALE_PREVIEW, ConfirmationError, GuardedPreview, expected_state


class WipeArgs(ToolArgs):
    name: str


def _make(home: Path, model: ScriptedModel) -> tuple[Assistant, list[str]]:
    wiped: list[str] = []

    def preview(args: WipeArgs, context: ToolContext) -> ActionPreview:
        return ActionPreview(summary=f"delete the note {args.name}", diff=f"- {args.name}")

    @tool(read_only=False, dangerous=True, preview=preview)
    def notes_delete(args: WipeArgs) -> dict[str, Any]:
        """Delete a note. Call only when the user asks to delete one."""
        wiped.append(args.name)
        return {"deleted": args.name}

    return Assistant(load_settings(), model=model, tools=[notes_delete]), wiped


def test_a_dangerous_call_waits_and_runs_once_when_confirmed(tmp_path: Path) -> None:
    model = ScriptedModel(
        [calls(("notes_delete", {"name": "Plan.md"})), text("Confirm to delete.")]
    )
    assistant, wiped = _make(tmp_path, model)
    try:
        outcome = assistant.ask("delete Plan.md")
        [call] = outcome.tool_calls
        assert call.status == "pending_confirmation" and wiped == []
        assert call.result["would"] == "delete the note Plan.md"
        assert call.result["diff"] == "- Plan.md"
        seen_by_model = model.requests[1]["messages"][-1]["content"]
        assert "Nothing has changed yet" in seen_by_model
        action_id = call.result["action_id"]
        assert [a.id for a in assistant.pending.list()] == [action_id]
        done = assistant.confirm(action_id)
        assert done.status == "confirmed" and done.result == {"deleted": "Plan.md"}
        assert wiped == ["Plan.md"]
        with pytest.raises(ConfirmationError) as again:
            assistant.confirm(action_id)
        assert again.value.code == "ALREADY_DECIDED" and wiped == ["Plan.md"]
    finally:
        assistant.close()


def test_unknown_expired_rejected_and_unattended_confirmations_are_refused(
    tmp_path: Path,
) -> None:
    script = [
        calls(("notes_delete", {"name": n})) if i % 2 == 0 else text("ok")
        for i, n in enumerate(["a", "a", "b", "b", "c", "c"])
    ]
    assistant, wiped = _make(tmp_path, ScriptedModel(script))
    try:
        ids = [assistant.ask(f"delete {n}").tool_calls[0].result["action_id"] for n in "abc"]
        with pytest.raises(ConfirmationError) as unknown:
            assistant.confirm("a_doesnotexist")
        assert unknown.value.code == "UNKNOWN"
        with pytest.raises(ConfirmationError) as unattended:
            assistant.confirm(ids[0], unattended=True)
        assert unattended.value.code == "UNATTENDED"
        assert assistant.reject(ids[1]).status == "rejected"
        with pytest.raises(ConfirmationError):
            assistant.confirm(ids[1])
        assistant.database.update(
            "UPDATE pending_actions SET expires_at = 0 WHERE id = ?", (ids[2],)
        )
        with pytest.raises(ConfirmationError) as expired:
            assistant.confirm(ids[2])
        assert expired.value.code == "EXPIRED"
        assert wiped == []
    finally:
        assistant.close()


def test_an_unattended_turn_leaves_the_action_pending_and_says_so(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("notes_delete", {"name": "x"})), text("needs you")])
    assistant, wiped = _make(tmp_path, model)
    try:
        outcome = assistant.ask("clean up", unattended=True)
        assert "unattended" in outcome.tool_calls[0].result["note"]
        assert wiped == []
    finally:
        assistant.close()


def test_a_preview_that_went_stale_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    """The contract for any tool: the state its preview recorded comes back to it at
    confirm time; a tool that finds it changed refuses, and the action turns `stale`."""
    notes = {"Plan.md": "v1"}
    wiped: list[str] = []

    def preview(args: WipeArgs, context: ToolContext) -> ActionPreview:
        return GuardedPreview(summary=f"delete {args.name}", state={args.name: notes[args.name]})

    @tool(read_only=False, dangerous=True, preview=preview)
    def notes_delete(args: WipeArgs) -> dict[str, Any]:
        """Delete a note. Call only when the user asks to delete one."""
        if expected_state() != {args.name: notes[args.name]}:
            raise ToolError(STALE_PREVIEW, f"{args.name} changed since the preview was made")
        wiped.append(args.name)
        return {"deleted": args.name}

    script = [calls(("notes_delete", {"name": "Plan.md"})), text("confirm?")] * 2
    assistant = Assistant(load_settings(), model=ScriptedModel(script), tools=[notes_delete])
    try:
        first = assistant.ask("delete Plan.md").tool_calls[0].result["action_id"]
        notes["Plan.md"] = "v2"  # the user edits the note before saying yes
        with pytest.raises(ConfirmationError) as stale:
            assistant.confirm(first)
        assert stale.value.code == "STALE" and "Plan.md changed since the preview" in str(
            stale.value
        )
        assert wiped == [] and assistant.pending.get(first).status == "stale"  # type: ignore[union-attr]
        second = assistant.ask("delete Plan.md").tool_calls[0].result["action_id"]
        assert assistant.confirm(second).status == "confirmed" and wiped == ["Plan.md"]
    finally:
        assistant.close()
