"""A running summary is checked before it is stored (issue 12, item 6).

A weak model's "summary" went into every later system prompt: it began "New
messages:\\nuser: I'm a student at the university of Lyon…", which nobody had said. The
L16 idea applied to summaries: what a summary states must come from the span it covers.
A summary fails when it is empty or a placeholder, carries role prefixes, is a
transcript dump, or states numbers, dates or names found nowhere in the previous
summary and the folded messages. A failed check keeps the history as it was.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from assistant.model import Message

_ROLE_PREFIX = re.compile(
    r"(?im)^\s*(?:[-*]\s*)?(user|assistant|system|tool|new messages|previous summary|"
    r"human|ai)\s*:"
)
_PLACEHOLDER = re.compile(
    r"^\W*(summary|no summary|none|n/?a|null|todo|tbd|\.\.\.|…|the summary text( only)?|"
    r"\(the model returned an empty answer\)|empty)\W*$",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,:/-]\d+)*(?![\w])")
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
_CAPITALISED = re.compile(r"\b[A-Z][a-z][\w'’-]*")
_TITLE = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Mx|Prof|St)\.$")
_SENTENCE_START = ".!?:;\n-*•(\"'“"
_COMMON = frozenset(
    [
        "I",
        "The",
        "A",
        "An",
        "This",
        "That",
        "They",
        "We",
        "He",
        "She",
        "It",
        "User",
        "Assistant",
        "Summary",
        "Earlier",
        "Later",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Today",
        "Tomorrow",
        "Yesterday",
        "English",
        "French",
        "Chinese",
        "German",
        "Spanish",
        "Markdown",
        "Also",
        "Then",
        "Next",
    ]
)
DUMP_RUN_WORDS = 10
DUMP_SHARE = 0.5
SMALL_NUMBERS = 10  # counts the summary may make up itself ("2 requests")


def summary_problems(summary: str, previous: str | None, messages: Sequence[Message]) -> list[str]:
    """Why `summary` must not be stored (empty when it may)."""
    text = summary.strip()
    if len(text) < 8 or _PLACEHOLDER.match(text):
        return [f"the summary is empty or a placeholder ({text[:40]!r})"]
    problems = []
    prefix = _ROLE_PREFIX.search(text)
    if prefix:
        problems.append(f"the summary carries a role prefix ({prefix.group(0).strip()!r})")
    source = "\n".join([previous or "", *_texts(messages)])
    if _is_dump(text, source):
        problems.append("the summary is a copy of the transcript, not a summary")
    source_numbers = {_norm_number(n) for n in _NUMBER.findall(source)}
    unknown_numbers = [
        n for n in _NUMBER.findall(text) if _norm_number(n) not in source_numbers and not _small(n)
    ]
    if unknown_numbers:
        problems.append(f"numbers found nowhere in the span: {sorted(set(unknown_numbers))[:5]}")
    lowered_source = source.lower()
    unknown_names = [
        name for name in _names(text) if name not in _COMMON and name.lower() not in lowered_source
    ]
    if unknown_names:
        problems.append(f"names found nowhere in the span: {sorted(set(unknown_names))[:5]}")
    return problems


def _names(text: str) -> Iterable[str]:
    """Capitalised words that do not open a sentence or a line: likely names."""
    for match in _CAPITALISED.finditer(text):
        before = text[: match.start()].rstrip(" \t")
        if before and (before[-1] not in _SENTENCE_START or _TITLE.search(before)):
            yield match.group()


def _texts(messages: Iterable[Message]) -> Iterable[str]:
    for message in messages:
        yield message.get("content") or ""
        for call in message.get("tool_calls") or ():
            yield str((call.get("function") or {}).get("arguments") or "")


def _norm_number(token: str) -> str:
    cleaned = token.replace(",", "")
    try:
        value = float(cleaned)
    except ValueError:
        return cleaned
    return f"{value:g}"


def _small(token: str) -> bool:
    return token.isdigit() and int(token) <= SMALL_NUMBERS


def _is_dump(summary: str, source: str) -> bool:
    words = [w.lower() for w in _WORD.findall(summary)]
    if len(words) < DUMP_RUN_WORDS * 2:
        return False
    source_words = [w.lower() for w in _WORD.findall(source)]
    runs = {
        tuple(source_words[i : i + DUMP_RUN_WORDS])
        for i in range(len(source_words) - DUMP_RUN_WORDS + 1)
    }
    own = [tuple(words[i : i + DUMP_RUN_WORDS]) for i in range(len(words) - DUMP_RUN_WORDS + 1)]
    copied = sum(run in runs for run in own)
    return copied / len(own) > DUMP_SHARE
