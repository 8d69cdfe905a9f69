"""Every tool schema we offer stays in the portable subset (issue 12, item 1): a
grammar-based server (llama-cpp-python) died on `maxLength: 2000`."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from assistant.app import Assistant
from assistant.config import load_settings
from tools.calc import calc_evaluate
from tools.schema_subset import MAX_REPEAT, check_portable, make_portable


@pytest.fixture
def every_tool(tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    vault.mkdir()
    monkeypatch.setenv("ASSISTANT_VAULT", str(vault))
    assistant = Assistant(load_settings())
    yield assistant.registry
    assistant.close()


def test_every_registered_tool_schema_is_portable(every_tool):
    definitions = every_tool.definitions(None)
    names = {d["function"]["name"] for d in definitions}
    assert {"calc_evaluate", "memory_remember", "vault_create", "vault_search"} <= names
    problems = {
        d["function"]["name"]: check_portable(d["function"]["parameters"]) for d in definitions
    }
    assert {name: found for name, found in problems.items() if found} == {}


def test_limits_dropped_from_the_schema_are_still_enforced_after_parsing():
    schema = calc_evaluate.parameters_schema["properties"]["expression"]
    assert "maxLength" not in schema  # was 2000: it killed llama-cpp-python's grammar builder
    with pytest.raises(ValidationError):
        calc_evaluate.args_model.model_validate({"expression": "1+" * 1500 + "1"})


@pytest.mark.parametrize(
    "schema, problem",
    [
        (
            {"type": "object", "properties": {"a": {"type": "string", "maxLength": 2000}}},
            "maxLength",
        ),
        ({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}}, "'$ref'"),
        ({"type": "object", "properties": {"a": {"type": "string", "pattern": "x+"}}}, "'pattern'"),
        ({"type": "object", "properties": {"a": {"oneOf": [{"type": "string"}]}}}, "'oneOf'"),
        ({"type": "array", "items": {"type": "string"}}, "top level"),
        ({"type": "object", "properties": {}, "required": ["b"]}, "required"),
    ],
)
def test_what_is_outside_the_subset_is_named(schema, problem):
    found = check_portable(schema)
    assert found and any(problem in line for line in found), found


def test_make_portable_keeps_structure_and_drops_only_validation_keywords():
    schema = {
        "type": "object",
        "properties": {
            "format": {"type": "string", "format": "date", "maxLength": MAX_REPEAT + 1},
            "n": {"type": "number", "exclusiveMinimum": 0, "maximum": 9},
        },
        "required": ["format"],
    }
    portable = make_portable(schema)
    assert portable == {
        "type": "object",
        "properties": {"format": {"type": "string"}, "n": {"type": "number", "maximum": 9}},
        "required": ["format"],
    }
    assert check_portable(portable) == []
