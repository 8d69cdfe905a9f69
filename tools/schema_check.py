"""Is a foreign tool's input schema one that grammar-based servers digest (SPEC O5)?

Our own tools keep to a portable subset of JSON Schema; a schema from an MCP server may
use anything. `portable_problems` names what in a schema falls outside the subset, so a
tool with such a schema is reported and not offered, instead of failing a request at a
strict server. It follows the signature of `check_portable(schema) -> list[str]`
(tools/schema_subset.py, issue 12): this module is the adapter until that one is merged.
"""

from __future__ import annotations

from typing import Any

# Keywords llama.cpp / vLLM / Ollama grammar converters translate; others are refused.
ALLOWED = frozenset(
    {
        "type", "properties", "required", "items", "enum", "const", "description",
        "default", "title", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
        "minLength", "maxLength", "minItems", "maxItems", "pattern", "format",
        "additionalProperties", "anyOf", "examples", "$schema", "uniqueItems",
    }
)  # fmt: skip
TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})
MAX_DEPTH = 8


def portable_problems(schema: Any) -> list[str]:
    """What keeps `schema` (a tool's parameters) outside the portable subset; [] if none."""
    problems: list[str] = []
    if not isinstance(schema, dict):
        return ["the schema is not an object"]
    if schema.get("type") != "object":
        problems.append("the top level must be {'type': 'object'}")
    _walk(schema, "$", 0, problems)
    return problems


def _walk(node: Any, where: str, depth: int, problems: list[str]) -> None:
    if not isinstance(node, dict):
        if not isinstance(node, bool):
            problems.append(f"{where}: a schema must be an object")
        return
    if depth > MAX_DEPTH:
        problems.append(f"{where}: nested deeper than {MAX_DEPTH} levels")
        return
    for key in node:
        if key not in ALLOWED:
            problems.append(f"{where}: keyword {key!r} is not portable")
    kinds = node.get("type")
    for kind in kinds if isinstance(kinds, list) else [kinds] if kinds else []:
        if kind not in TYPES:
            problems.append(f"{where}: unknown type {kind!r}")
    properties = node.get("properties", {})
    if isinstance(properties, dict):
        for name, sub in properties.items():
            _walk(sub, f"{where}.{name}", depth + 1, problems)
    items = node.get("items")
    if items is not None:
        _walk(items, f"{where}[]", depth + 1, problems)
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        _walk(extra, f"{where}.*", depth + 1, problems)
    for index, option in enumerate(node.get("anyOf", []) or []):
        _walk(option, f"{where}|{index}", depth + 1, problems)
