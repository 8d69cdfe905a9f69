"""Fit a tool result into the model's budget without losing its shape (SPEC L10).

Cutting JSON text at N characters breaks it; instead long lists become
"128 items; first 10 shown", long strings are cut with a marker, and the result says
it was truncated. The full result stays in the trace log.
"""

from __future__ import annotations

from typing import Any

from memory.jsontext import dumps

TRUNCATION_NOTE = "result truncated to fit the budget; the full result is in the trace log"


to_json = dumps


def _shrink(value: Any, max_items: int, max_chars: int) -> Any:
    if isinstance(value, str):
        if len(value) <= max_chars:
            return value
        return value[:max_chars] + f"… [{len(value) - max_chars} more chars]"
    if isinstance(value, dict):
        return {key: _shrink(item, max_items, max_chars) for key, item in value.items()}
    if isinstance(value, list | tuple):
        items = [_shrink(item, max_items, max_chars) for item in value[:max_items]]
        if len(value) <= max_items:
            return items
        return {"total": len(value), "shown": len(items), "first": items}
    return value


def fit_result(value: Any, budget: int) -> tuple[str, bool]:
    """Return the JSON text for the model and whether it had to be truncated."""
    text = to_json(value)
    if len(text) <= budget:
        return text, False
    max_chars = max(budget // 4, 40)
    for max_items in (10, 5, 3, 1, 0):
        shrunk = _shrink(value, max_items, max_chars)
        wrapped = (
            {**shrunk, "truncated": TRUNCATION_NOTE}
            if isinstance(shrunk, dict)
            else {"truncated": TRUNCATION_NOTE, "value": shrunk}
        )
        text = to_json(wrapped)
        if len(text) <= budget:
            return text, True
        max_chars = max(max_chars // 2, 40)
    preview = to_json(value)
    keep = budget
    while True:
        keep = max(keep - 64, 0)
        text = to_json({"truncated": TRUNCATION_NOTE, "preview": preview[:keep]})
        if len(text) <= budget or keep == 0:
            return text, True
