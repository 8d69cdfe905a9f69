"""Answers with integrity (issue 12, item 3): what the loop does with a reply that is
empty, cut, or an echo of our own notes, and with a request too big for the context.

Kept apart from `loop.py` so the loop stays one short function: these helpers decide
what text the user gets; the loop decides when to ask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from assistant.model import Message
from memory.compression import elided_stub, extractive_summary, shorten
from tools.runner import CallOutcome

RUNTIME_NOTE = "[runtime note]"
INTERNAL_MARKS = (RUNTIME_NOTE, "[grounding check]")
TRUNCATED_NOTE = "[The answer was cut off: the model reached its token limit ([model] max_tokens).]"
TRUNCATED_DETAIL = "the answer was cut at the model's token limit (finish_reason length)"
COMPOSED_HEADER = "The model gave no usable answer; here is what the tools returned in this turn:"
ECHO_RUN_WORDS = 8
_WORD = re.compile(r"\w+", re.UNICODE)
_RESULT_KEYS = ("value", "result", "answer", "total", "count", "text", "path")


def without_internal_notes(answer: str, notes: Sequence[str]) -> str:
    """The answer minus every line that echoes one of our internal notes: a line with a
    note's marker, or one that repeats eight words of a note in a row."""
    runs = set().union(*(_runs(note) for note in notes)) if notes else set()
    kept = []
    for line in answer.splitlines():
        lowered = line.lower()
        if any(mark in lowered for mark in INTERNAL_MARKS):
            continue
        if runs and _runs(line) & runs:
            continue
        kept.append(line)
    return "\n".join(kept).strip()


def _runs(text: str) -> set[tuple[str, ...]]:
    words = [w.lower() for w in _WORD.findall(text)]
    return {tuple(words[i : i + ECHO_RUN_WORDS]) for i in range(len(words) - ECHO_RUN_WORDS + 1)}


def composed_answer(calls: Sequence[CallOutcome], why: str | None = None) -> str | None:
    """An answer made from this turn's tool results, saying that it is, for when the
    model gave none; None when no tool returned anything to show."""
    done = [call for call in calls if call.status == "ok"]
    if not done:
        return None
    lines = [f"I had to stop: {why}." if why else "", COMPOSED_HEADER]
    for call in done[-6:]:
        lines.append(f"- {call.name}{_arguments(call.arguments)}: {_result_text(call.result)}")
    return "\n".join(line for line in lines if line)


def _arguments(arguments: dict[str, Any] | None) -> str:
    if not arguments:
        return ""
    if len(arguments) == 1:
        (value,) = arguments.values()
        return f"({shorten(str(value), 80)})"
    return "(" + shorten(json.dumps(arguments, ensure_ascii=False), 120) + ")"


def _result_text(result: Any) -> str:
    if isinstance(result, dict):
        for key in _RESULT_KEYS:
            if key in result and not isinstance(result[key], dict | list):
                return shorten(str(result[key]), 300)
        return shorten(json.dumps(result, ensure_ascii=False), 300)
    return shorten(str(result), 300)


def compacted(
    messages: Sequence[Message], turn_start: int, preview_chars: int = 200
) -> list[Message]:
    """The request made smaller after a context-length refusal: the earlier
    conversation folded into a short extractive summary, this turn's older tool results
    as stubs (the latest round kept whole). Calls keep their results, so pairing holds."""
    system = [m for m in messages[:1] if m.get("role") == "system"]
    earlier = [m for m in messages[len(system) : turn_start] if m.get("role") != "system"]
    summaries = [m for m in messages[len(system) : turn_start] if m.get("role") == "system"]
    head = list(system)
    if earlier or summaries:
        previous = "\n".join(m.get("content") or "" for m in summaries) or None
        head.append(
            {
                "role": "system",
                "content": "Summary of the earlier conversation (shortened to fit the "
                "model's context):\n" + extractive_summary(previous, earlier, max_chars=1200),
            }
        )
    current = [dict(m) for m in messages[turn_start:]]
    last_calls = max((i for i, m in enumerate(current) if m.get("tool_calls")), default=-1)
    names = {
        call.get("id"): (call.get("function") or {}).get("name", "tool")
        for m in current
        for call in m.get("tool_calls") or ()
    }
    for index, message in enumerate(current):
        if message.get("role") == "tool" and index < last_calls:
            stub = elided_stub(
                message.get("content"),
                names.get(message.get("tool_call_id"), "tool"),
                preview_chars,
            )
            if stub is not None:
                message["content"] = stub
    return [*head, *current]
