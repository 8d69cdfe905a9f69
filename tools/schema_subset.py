"""The portable subset of JSON Schema for tool parameters (issue 12, item 1).

Grammar-based servers (llama.cpp and llama-cpp-python, vLLM's guided decoding, Ollama's
format) turn a tool's parameter schema into a grammar the sampler follows. Large
repetition bounds blow that grammar up: `maxLength: 2000` made llama-cpp-python's
grammar builder give up and the server process die. Other keywords are handled
unevenly (`$ref`, `pattern`, `format`, exclusive bounds, `oneOf`/`allOf`). So what we
offer stays inside a small subset that every one of them digests, and limits beyond it
(an expression's length) are enforced by pydantic after the arguments are parsed.

`check_portable` lists what in a schema is outside the subset (the MCP layer uses it on
foreign tools' schemas too); `make_portable` drops the validation-only keywords that
are outside it, for schemas whose limits are enforced after parsing anyway.
"""

from __future__ import annotations

from typing import Any

TYPES = frozenset({"object", "string", "integer", "number", "boolean", "array", "null"})
KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "description",
        "enum",
        "const",
        "items",
        "default",
        "anyOf",
        "additionalProperties",
        "minimum",
        "maximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "title",
        "examples",
    }
)
MAX_REPEAT = 64  # largest minLength/maxLength/minItems/maxItems a grammar may unroll
MAX_ENUM = 64
MAX_ANY_OF = 4
MAX_DEPTH = 6
VALIDATION_ONLY = frozenset(
    {"pattern", "format", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "$comment"}
)
_REPEATS = ("minLength", "maxLength", "minItems", "maxItems")


def check_portable(schema: Any, *, where: str = "parameters") -> list[str]:
    """Problems that put `schema` outside the portable subset (empty when it is inside).

    The top level must be an object schema, as every tool-calling API expects."""
    if not isinstance(schema, dict):
        return [f"{where}: a schema must be a JSON object, not {type(schema).__name__}"]
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append(f"{where}: the top level must be `type: object`")
    _check(schema, where, 0, problems)
    return problems


def _check(schema: Any, where: str, depth: int, problems: list[str]) -> None:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        problems.append(f"{where}: not a schema ({schema!r})")
        return
    if depth > MAX_DEPTH:
        problems.append(f"{where}: nested deeper than {MAX_DEPTH} levels")
        return
    for key in schema:
        if key not in KEYWORDS:
            problems.append(f"{where}: keyword {key!r} is outside the portable subset")
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if kind is not None else []
    for name in kinds:
        if name not in TYPES:
            problems.append(f"{where}: unknown type {name!r}")
    for key in _REPEATS:
        value = schema.get(key)
        if isinstance(value, int) and value > MAX_REPEAT:
            problems.append(
                f"{where}: {key} {value} is over {MAX_REPEAT} (grammar servers unroll it; "
                "enforce it after parsing)"
            )
    if len(schema.get("enum") or ()) > MAX_ENUM:
        problems.append(f"{where}: enum of more than {MAX_ENUM} values")
    branches = schema.get("anyOf")
    if branches is not None:
        if not isinstance(branches, list) or len(branches) > MAX_ANY_OF:
            problems.append(f"{where}: anyOf must list at most {MAX_ANY_OF} schemas")
        else:
            for n, branch in enumerate(branches):
                _check(branch, f"{where}.anyOf[{n}]", depth + 1, problems)
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, dict):
            problems.append(f"{where}: properties must be an object")
        else:
            for name, sub in properties.items():
                _check(sub, f"{where}.{name}", depth + 1, problems)
    required = schema.get("required")
    if required is not None and not (
        isinstance(required, list) and set(required) <= set(properties or {})
    ):
        problems.append(f"{where}: required names a property that is not declared")
    if "items" in schema:
        _check(schema["items"], f"{where}[]", depth + 1, problems)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        _check(extra, f"{where}.*", depth + 1, problems)


def make_portable(schema: Any) -> Any:
    """`schema` without the validation-only keywords outside the subset (patterns,
    formats, exclusive bounds, repetition bounds over MAX_REPEAT): the caller enforces
    them after parsing. Structure (types, properties, enums) is left as it is."""
    if isinstance(schema, list):
        return [make_portable(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    kept: dict[str, Any] = {}
    for key, value in schema.items():
        if key in VALIDATION_ONLY:
            continue
        if key in _REPEATS and isinstance(value, int) and value > MAX_REPEAT:
            continue
        if key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            kept[key] = {name: make_portable(sub) for name, sub in value.items()}
        else:
            kept[key] = make_portable(value) if isinstance(value, dict | list) else value
    return kept
