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


_TAGGED_CALL = re.compile(
    r"<(tool_call|function_call|tools?)>.*?(?:</\1>|\Z)|<\|python_tag\|>.*", re.S | re.I
)
_CALL_KEYS = ("arguments", "parameters", "args")
# Every form below needs one of these: a JSON object or list, a tag, or `NAME:`.
_CALL_MARKS = ("{", "[", "<", ":")
_EXTRA_BLANK_LINES = re.compile(r"\n{3,}")


def without_tool_call_syntax(answer: str, tool_names: Sequence[str] = ()) -> str:
    """The answer minus tool-call syntax a template or model produced as text (a call
    it could not make, e.g. once tools are no longer offered): `<tool_call>…</tool_call>`,
    `functions.NAME:` or a line naming one of our tools followed by a JSON object, and a
    JSON object shaped like a call (`{"name": …, "arguments": …}`) standing alone."""
    if not any(mark in answer for mark in _CALL_MARKS):  # the common answer: no call syntax
        return _EXTRA_BLANK_LINES.sub("\n\n", answer).strip()
    text = _TAGGED_CALL.sub("", answer)
    names = "|".join(re.escape(name) for name in sorted(tool_names, key=len, reverse=True))
    head = r"functions\.[\w.-]+" + (f"|(?:{names})" if names else "")
    marker = re.compile(rf"(?m)^[ \t]*(?:{head})[ \t]*[:(]?[ \t]*\n?[ \t]*(?=[{{\[])")
    kept, position = [], 0
    while (found := _next_call(text, position, marker)) is not None:
        start, end = found
        kept.append(text[position:start])
        position = end
    kept.append(text[position:])
    cleaned = "".join(kept)
    if names:  # a lone line naming a tool as a call (`functions.calc_evaluate:`)
        cleaned = re.sub(rf"(?m)^[ \t]*(?:functions\.)?(?:{names})[ \t]*:[ \t]*$", "", cleaned)
    cleaned = re.sub(r"(?m)^[ \t]*functions\.[\w.-]+[ \t]*:[ \t]*$", "", cleaned)
    return _EXTRA_BLANK_LINES.sub("\n\n", cleaned).strip()


def _next_call(text: str, position: int, marker: re.Pattern[str]) -> tuple[int, int] | None:
    """The span of the next tool call written as text at or after `position`."""
    decoder = json.JSONDecoder()
    candidates = re.compile(r"(?m)^[ \t]*(?=[{\[])")
    while True:
        named = marker.search(text, position)
        bare = candidates.search(text, position)
        options = [m for m in (named, bare) if m is not None]
        if not options:
            return None
        match = min(options, key=lambda m: m.start())
        start, brace = match.start(), match.end()
        try:
            value, end = decoder.raw_decode(text, brace)
        except ValueError:
            if match is named:  # a call cut short: drop it to the end of its object
                return start, len(text)
            position = brace + 1
            continue
        if match is named or _looks_like_call(value):
            return start, end
        position = end


def opens_tool_call(line: str, tool_names: Sequence[str]) -> bool:
    """Whether a streamed line may begin a tool call written as text (held back)."""
    stripped = line.strip()
    if stripped.startswith(("{", "<tool_call", "<function_call", "<|python_tag|>")):
        return True
    if re.match(r"\[\s*(\{|$)", stripped):  # a list of calls, not "[a note]"
        return True
    if re.match(r"functions\.[\w.-]+\s*:?", stripped):
        return True
    bare = stripped.removesuffix(":").strip()
    return bool(bare) and bare in tool_names


def may_open_tool_call(prefix: str, tool_names: Sequence[str]) -> bool:
    """Whether the start of a streamed line may still turn out to open a tool call."""
    stripped = prefix.strip()
    if not stripped or stripped[0] == "{" or opens_tool_call(stripped, tool_names):
        return True
    heads = ("functions.", "<tool_call>", "<function_call>", "<|python_tag|>", *tool_names)
    return any(head.startswith(stripped) or stripped.startswith(head) for head in heads)


def held_call_complete(held: str) -> bool:
    """Whether held-back text is whole enough to decide what of it is shown."""
    lowered = held.lower()
    if re.search(r"<(tool_call|function_call)>", lowered):
        return bool(re.search(r"</(tool_call|function_call)>", lowered))
    brace = min((i for i in (held.find("{"), held.find("[")) if i >= 0), default=-1)
    if brace < 0:
        return False
    try:
        json.JSONDecoder().raw_decode(held, brace)
    except ValueError:
        return False
    return True


def _looks_like_call(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_looks_like_call(item) for item in value)
    if not isinstance(value, dict):
        return False
    if isinstance(value.get("function"), dict):
        return _looks_like_call(value["function"])
    if isinstance(value.get("tool_calls"), list):
        return True
    return isinstance(value.get("name"), str) and any(key in value for key in _CALL_KEYS)


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
