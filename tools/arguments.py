"""Reading a model's tool-call arguments as JSON that cannot hurt the process (SPEC L5, §9).

A model's output is untrusted: arguments nested thousands deep (Python's parser raises
`RecursionError`), an integer of 5,000 digits (`ValueError` past Python's conversion
limit), `NaN`/`Infinity` (not JSON, and not storable as JSON later), a key given twice
(which value did the model mean?) and lone UTF-16 surrogates (`"\\ud800"`: a `str` that
cannot be encoded, so hashing, SQLite and HTTP fail on it). Each becomes a `ToolError`
the model can read and correct; none reaches the loop as an exception.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from tools.base import ToolError

MAX_DEPTH = 64  # real argument models nest 3-4 levels; the parser recurses per level
MAX_DIGITS = 1000  # an integer longer than this is no id, count or amount a tool takes
_SURROGATE = re.compile("[\ud800-\udfff]")
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_LONG_DIGITS = re.compile(rf"\d{{{MAX_DIGITS + 1}}}")


def escape_surrogates(text: str) -> str:
    """`text` with each lone surrogate written as its JSON escape (`\\ud800`): the same JSON
    value, but text that encodes as UTF-8 (for SQLite, hashes and HTTP)."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def replace_surrogates(text: str) -> str:
    """`text` with each lone surrogate replaced by U+FFFD, for prose (a model's answer)."""
    if not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def nesting_depth(raw: str) -> int:
    """How deep the brackets of a JSON text nest, brackets inside strings not counted."""
    if raw.count("[") + raw.count("{") <= MAX_DEPTH:
        return min(raw.count("[") + raw.count("{"), MAX_DEPTH)
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", raw))
    depth = deepest = 0
    for char in brackets:
        if char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(depth - 1, 0)
    return deepest


class _Refused(ValueError):
    """Raised inside the parser's hooks; becomes a ToolError with `code`."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Refused(
                "DUPLICATE_KEY", f"the key {key!r} appears twice; send each argument once"
            )
        found[key] = value
    return found


def _constant(name: str) -> Any:
    raise _Refused("INVALID_NUMBER", f"{name} is not a JSON number; send a finite number")


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _Refused(
            "INVALID_NUMBER", f"an integer of {len(text.lstrip('-'))} digits is too large"
        )
    return int(text)


def strict_loads(raw: str) -> Any:
    """Strict JSON for arguments: raises `json.JSONDecodeError` for text that is not JSON
    (the caller may repair it) and `ToolError` for JSON a tool must never see."""
    depth = nesting_depth(raw)
    if depth > MAX_DEPTH:
        raise ToolError(
            "ARGUMENTS_TOO_DEEP",
            f"the arguments nest {depth} levels deep; the limit is {MAX_DEPTH}",
        )
    try:
        # not orjson: it reads an integer past 64 bits as a float, silently rounded. The
        # integer hook only when a long run of digits is there (it costs a call per number);
        # an overflowing float becomes inf, which check_value refuses
        value = json.loads(
            raw,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_int=_integer if _LONG_DIGITS.search(raw) else None,
        )
    except _Refused as exc:
        raise ToolError(exc.code, exc.detail) from None
    except RecursionError:
        raise ToolError("ARGUMENTS_TOO_DEEP", "the arguments nest too deep to read") from None
    check_value(value)
    return value


def check_value(value: Any, depth: int = 0) -> None:
    """Refuse what JSON-like data must not hold: lone surrogates, non-finite numbers,
    nesting past `MAX_DEPTH` (for values that did not come through `strict_loads`: repaired)."""
    if depth > MAX_DEPTH:
        raise ToolError("ARGUMENTS_TOO_DEEP", f"the arguments nest past {MAX_DEPTH} levels")
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found:
            raise ToolError(
                "INVALID_TEXT",
                f"the arguments hold a lone UTF-16 surrogate (\\u{ord(found.group()):04x}), "
                "which is not Unicode text; send the characters themselves",
            )
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ToolError("INVALID_NUMBER", f"{value} is not a JSON number")
    elif isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_DIGITS * 3.33:
            raise ToolError("INVALID_NUMBER", "an integer that large is not a valid argument")
    elif isinstance(value, dict):
        for key, item in value.items():
            check_value(key, depth + 1)
            check_value(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            check_value(item, depth + 1)
