"""Memory tools (SPEC M8): the model's explicit handle on long-term conclusions."""

from __future__ import annotations

import time
from typing import Any, Literal

from pydantic import Field

from memory.conclusions import Conclusion, ConclusionStore
from memory.hygiene import junk_reason
from tools.base import Tool, ToolArgs, ToolContext, ToolError, tool


def _row(conclusion: Conclusion) -> dict[str, Any]:
    row = {
        "id": conclusion.id,
        "text": conclusion.text,
        "kind": conclusion.kind,
        "status": conclusion.status,
        "since": time.strftime("%Y-%m-%d", time.localtime(conclusion.valid_from)),
    }
    if conclusion.subject:
        row["subject"] = conclusion.subject
    if conclusion.tags:
        row["tags"] = conclusion.tags
    if conclusion.source_path:
        row["source"] = conclusion.source_path
    return row


class RememberArgs(ToolArgs):
    text: str = Field(
        min_length=1,
        max_length=2000,
        description="The conclusion in one self-contained sentence, e.g. 'My dentist is Dr. Li'.",
    )
    kind: Literal["fact", "preference", "decision", "note"] = Field(
        "fact", description="fact, preference, decision or note."
    )
    subject: str | None = Field(
        None,
        max_length=80,
        description="What it is about (e.g. 'dentist'), so a later value replaces this one.",
    )
    tags: list[str] = Field(default_factory=list, description="Optional tags, e.g. ['health'].")


class RecallArgs(ToolArgs):
    query: str = Field(min_length=1, max_length=500, description="What to look for.")
    k: int = Field(5, ge=1, le=20, description="How many conclusions to return.")
    kind: Literal["fact", "preference", "decision", "note"] | None = Field(
        None, description="Only this kind."
    )
    tag: str | None = Field(None, description="Only conclusions with this tag.")


class ForgetArgs(ToolArgs):
    id: str | None = Field(None, description="The id of the conclusion to forget (from recall).")
    query: str | None = Field(
        None, description="Or: what to forget; the single best match is retired."
    )


def memory_tools(store: ConclusionStore) -> list[Tool]:
    """The memory tools, bound to one conclusion store."""

    @tool(read_only=False, sequential=True, version="1.0")
    def memory_remember(args: RememberArgs, context: ToolContext) -> dict[str, Any]:
        """Store a lasting conclusion in long-term memory.

        Call this when the user asks you to remember something, or states a fact about
        themselves, a preference or a decision that will matter in later conversations.
        A restatement updates the existing memory; a new value for the same subject
        replaces the old one (kept as history). Confirm briefly to the user what you stored.
        """
        junk = junk_reason(args.text)
        if junk is not None:
            raise ToolError("INVALID_ARGUMENTS", f"{junk}; nothing was stored")
        remembered = store.remember(
            args.text,
            kind=args.kind,
            subject=args.subject,
            tags=args.tags,
            source_session=context.session or None,
        )
        result: dict[str, Any] = {"action": remembered.action, **_row(remembered.conclusion)}
        if remembered.previous is not None:
            result["replaced"] = _row(remembered.previous)
        return result

    @tool(read_only=True, cacheable=False, version="1.0")
    def memory_recall(args: RecallArgs) -> dict[str, Any]:
        """Search long-term memory for what was concluded earlier.

        Call this when the user asks what you know, remember, or decided about something
        ("what did we decide about X?", "what is my dentist's name?"), or when an answer
        depends on their earlier facts or preferences. Answer only from the returned
        conclusions; if none match, say you have nothing stored about it.
        """
        found = store.recall(
            args.query,
            args.k,
            kinds=[args.kind] if args.kind else None,
            tags=[args.tag] if args.tag else None,
        )
        return {"query": args.query, "count": len(found), "conclusions": [_row(c) for c in found]}

    @tool(read_only=False, sequential=True, version="1.0")
    def memory_forget(args: ForgetArgs) -> dict[str, Any]:
        """Retire a conclusion from long-term memory so it is no longer recalled.

        Call this only when the user asks you to forget something or says a stored
        conclusion is wrong. Pass the id from memory_recall when you have it.
        """
        target = args.id
        if not target and args.query:
            matches = store.recall(args.query, 1)
            if not matches:
                raise ToolError("NOT_FOUND", f"nothing in memory matches {args.query!r}")
            target = matches[0].id
        if not target:
            raise ToolError("INVALID_ARGUMENTS", "give the id (or a query) of what to forget")
        forgotten = store.forget(target)
        if forgotten is None:
            raise ToolError("NOT_FOUND", f"no active conclusion with id {target!r}")
        return {"action": "retired", **_row(forgotten)}

    return [memory_remember, memory_recall, memory_forget]
