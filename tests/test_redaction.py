"""Redaction (SPEC S4): secrets never reach the model, the trace or long-term memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.errors import ConfigError
from assistant.testing import ScriptedModel, calls, text
from memory.redact import Redactor
from tools.base import tool


@tool
def contact_lookup(name: str) -> dict[str, str]:
    """Look up a contact. Call it when the user asks for someone's details."""
    return {
        "name": name,
        "email": "li.wei@example.com",
        "phone": "13812345678",
        "note": "api key sk-proj-abcdefghijklmnopqrstuvwx",
    }


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        ("my key is sk-abcdefghijklmnopqrstuv1234", "api_key"),
        ("mail li.wei@example.com", "email"),
        ("手机 13812345678", "phone"),
        ("call +1 415 555 2671", "phone"),
        ("password: hunter2!x", "secret"),
        ("密码是 abc123456", "secret"),
        ("Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123", "bearer"),
        ("token=ghp_abcdefghijklmnopqrstuvwxyz123", "secret"),
    ],
)
def test_default_patterns_mask_secrets(raw: str, kind: str) -> None:
    masked = Redactor().text(raw)
    assert f"[REDACTED:{kind}]" in masked
    secret = raw.split()[-1].split("=")[-1]
    assert secret not in masked


def test_ordinary_numbers_and_dates_are_kept() -> None:
    for plain in ("15+27=42", "meeting on 2026-11-29 at 10:30", "order #12345"):
        assert Redactor().text(plain) == plain


def test_tool_results_shown_to_the_model_and_traces_are_redacted(tmp_path: Path) -> None:
    model = ScriptedModel([calls(("contact_lookup", {"name": "Li Wei"})), text("Found him.")])
    assistant = Assistant(load_settings(), model=model, tools=[contact_lookup])
    try:
        outcome = assistant.ask("what's Li Wei's email?")
        seen = model.requests[1]["messages"][-1]["content"]
        for secret in ("li.wei@example.com", "13812345678", "sk-proj-abcdefghijklmnopqrstuvwx"):
            assert secret not in seen
            assert secret not in json.dumps(assistant.traces.turn(outcome.turn_id))
        assert "[REDACTED:email]" in seen
    finally:
        assistant.close()


def test_custom_patterns_come_from_the_config(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[safety.patterns]\nemployee_id = "EMP-\\\\d{6}"\n', encoding="utf-8"
    )
    settings = load_settings()
    assert Redactor(settings.safety.patterns).text("id EMP-123456") == "id [REDACTED:employee_id]"


def test_a_broken_pattern_is_a_config_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[safety.patterns]\nbad = "("\n', encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings()
    assert "safety.patterns" in str(raised.value) and "bad" in str(raised.value)


def test_a_secret_in_tool_arguments_is_masked_in_every_request_of_the_trace(
    tmp_path: Path,
) -> None:
    """The model's reply opens the next request's messages; both copies are masked."""
    secret = "sk-proj-abcdefghijklmnopqrstuvwx"
    model = ScriptedModel(
        [calls(("contact_lookup", {"name": f"key {secret}"})), text("Looked it up.")]
    )
    assistant = Assistant(load_settings(), model=model, tools=[contact_lookup])
    try:
        outcome = assistant.ask("look up my key")
        requests = assistant.traces.turn(outcome.turn_id)["requests"]
        assert [r["idx"] for r in requests] == [0, 1]
        assert requests[1]["new_messages"][0] == requests[0]["reply"]
        assert requests[1]["new_messages"][1]["role"] == "tool"
        arguments = requests[0]["reply"]["tool_calls"][0]["function"]["arguments"]
        assert secret not in json.dumps(requests) and "[REDACTED:api_key]" in arguments
    finally:
        assistant.close()
