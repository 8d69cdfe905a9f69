"""Compact JSON text for everything stored or sent (trace rows, messages, tool results).

orjson writes it several times faster than the standard library, and a busy turn writes
a dozen such strings; the standard library takes over for what orjson refuses (integers
past 64 bits, which the calculator can produce, and non-string keys). Dates, dataclasses
and anything else unknown become `str(value)` either way, so the text is the same.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(value: Any, *, sort_keys: bool = False) -> str:
    try:
        options = _OPTIONS | orjson.OPT_SORT_KEYS if sort_keys else _OPTIONS
        return orjson.dumps(value, default=str, option=options).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(
            value, ensure_ascii=False, default=str, separators=(",", ":"), sort_keys=sort_keys
        )


def with_members(json_object: str, **members: str) -> str:
    """Add members whose values are JSON text already to a serialised, non-empty object:
    text written once (a message, a reply) is reused, not parsed and written again."""
    extra = ",".join(f'"{name}":{text}' for name, text in members.items())
    return f"{json_object[:-1]},{extra}}}"
