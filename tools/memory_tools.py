"""Memory tools (SPEC M8): the model's explicit handle on long-term conclusions."""

from __future__ import annotations

import hashlib
import time
from typing import Any, Literal

from pydantic import BaseModel, Field

from memory.conclusions import Conclusion, ConclusionStore, as_of_timestamp
from memory.hygiene import junk_reason
from memory.instructions import InstructionRefused
from tools.base import Tool, ToolArgs, ToolContext, ToolError, tool
from tools.confirm import STALE_PREVIEW, GuardedPreview, expected_state


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
    if conclusion.origin:
        row["stored_by"] = conclusion.origin
    if conclusion.valid_to is not None:
        row["until"] = time.strftime("%Y-%m-%d", time.localtime(conclusion.valid_to))
    if conclusion.conflicts_with:
        row["conflicts_with"] = conclusion.conflicts_with  # a newer row says otherwise
    return row


def _fingerprint(conclusion: Conclusion) -> str:
    return hashlib.sha256(conclusion.text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


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
    as_of: str | None = Field(
        None,
        description="A date YYYY-MM-DD: answer from what was true then (e.g. 'who was my "
        "dentist in March?'), including values replaced since.",
    )


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
        try:
            remembered = store.remember(
                args.text,
                kind=args.kind,
                subject=args.subject,
                tags=args.tags,
                source_session=context.session or None,
                origin=context.origin or None,
            )
        except InstructionRefused as refused:
            raise ToolError("NOT_A_CONCLUSION", str(refused)) from None
        result: dict[str, Any] = {"action": remembered.action, **_row(remembered.conclusion)}
        if remembered.previous is not None:
            result["replaced"] = _row(remembered.previous)
        if remembered.also_replaced:  # the replaced value's other rows went with it
            result["also_replaced"] = [_row(row) for row in remembered.also_replaced]
        if remembered.decision is not None:  # how it was reconciled, for the trace
            result["decision"] = remembered.decision.as_dict()
        return result

    @tool(read_only=True, cacheable=False, version="1.0")
    def memory_recall(args: RecallArgs) -> dict[str, Any]:
        """Search long-term memory for what was concluded earlier.

        Call this when the user asks what you know, remember, or decided about something
        ("what did we decide about X?", "what is my dentist's name?"), or when an answer
        depends on their earlier facts or preferences. Answer only from the returned
        conclusions; if none match, say you have nothing stored about it.
        """
        try:
            moment = as_of_timestamp(args.as_of) if args.as_of else None
        except ValueError as exc:
            raise ToolError("INVALID_ARGUMENTS", str(exc)) from None
        found = store.recall(
            args.query,
            args.k,
            kinds=[args.kind] if args.kind else None,
            tags=[args.tag] if args.tag else None,
            as_of=moment,
        )
        result = {"query": args.query, "count": len(found), "conclusions": [_row(c) for c in found]}
        if args.as_of:
            result["as_of"] = args.as_of
        return result

    def target_of(args: ForgetArgs) -> Conclusion:
        """The active conclusion a forget call means (by id, else the best match)."""
        target = args.id
        if not target and args.query:
            matches = store.recall(args.query, 1)
            if not matches:
                raise ToolError("NOT_FOUND", f"nothing in memory matches {args.query!r}")
            target = matches[0].id
        if not target:
            raise ToolError("INVALID_ARGUMENTS", "give the id (or a query) of what to forget")
        found = store.get(target)
        if found is None or found.status != "active":
            raise ToolError("NOT_FOUND", f"no active conclusion with id {target!r}")
        return found

    def preview_forget(args: BaseModel, context: ToolContext) -> GuardedPreview:
        assert isinstance(args, ForgetArgs)
        found = target_of(args)
        same, older = store.linked(found, args.query) if found.status == "active" else ([], [])
        also = "".join(f"; with it: {row.id} {row.text!r}" for row in [*same, *older])
        return GuardedPreview(
            summary=f"forget {found.id}: {found.text!r} ({found.kind}, "
            f"since {time.strftime('%Y-%m-%d', time.localtime(found.valid_from))}){also}",
            state={found.id: _fingerprint(found)},
        )

    @tool(
        read_only=False,
        dangerous=True,
        sequential=True,
        version="1.1",
        preview=preview_forget,
    )
    def memory_forget(args: ForgetArgs) -> dict[str, Any]:
        """Retire a conclusion from long-term memory so it is no longer recalled.

        Call this only when the user asks you to forget something or says a stored
        conclusion is wrong. Pass the id from memory_recall when you have it. The user
        must confirm: you get a pending action; tell the user what would be forgotten.
        """
        expected = expected_state()
        if expected:  # confirmed: exactly the row the user saw, unchanged since
            [(target, fingerprint)] = expected.items()
            found = store.get(target)
            if found is None or found.status != "active" or _fingerprint(found) != fingerprint:
                raise ToolError(
                    STALE_PREVIEW, f"conclusion {target} changed or went since the preview"
                )
        else:
            found = target_of(args)
        done = store.forget_with(found.id, asked=args.query)
        if not done:
            raise ToolError("NOT_FOUND", f"no active conclusion with id {found.id!r}")
        forgotten, *also = done
        restore = f"assistant memory restore {found.id}"
        result = {"action": "retired", **_row(forgotten), "restore": restore}
        if also:  # the same fact stored again, or an older value it had replaced
            result["also"] = [_row(row) for row in also]
        return result

    return [memory_remember, memory_recall, memory_forget]
