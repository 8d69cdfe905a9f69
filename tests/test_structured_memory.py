"""Structured output for the summariser and extractor, checked summaries, and memory
hygiene with weak models (issue 12, items 6 and 7), through the real `openai` SDK."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from fake_openai import FakeOpenAI, calls, completion

from assistant.app import Assistant
from assistant.config import ModelSettings, load_settings
from assistant.openai_model import OpenAIChatModel
from assistant.remembering import EXTRACTION_PROMPT, SUMMARY_PROMPT, SUMMARY_SCHEMA
from tools.calc import calc_evaluate


@pytest.fixture
def server(fake_endpoint):
    return fake_endpoint


@pytest.fixture
def assistant(server, tmp_path, monkeypatch):
    vault = tmp_path / "vault"
    vault.mkdir()
    monkeypatch.setenv("ASSISTANT_VAULT", str(vault))
    made = Assistant(load_settings())
    made.memory.compressor.policy = made.memory.compressor.policy.model_copy(
        update={"compress_after_turns": 2, "keep_turns": 1}
    )
    yield made
    made.close()


def kinds(server: FakeOpenAI) -> list[str | None]:
    return [(body.get("response_format") or {}).get("type") for body in server.requests]


def test_json_schema_then_json_object_then_text_and_the_endpoint_remembers(server):
    server.profile.json_modes = ()  # neither json_schema nor json_object
    server.script(completion('{"summary": "one"}'), completion('{"summary": "two"}'))
    model = OpenAIChatModel(ModelSettings(base_url=server.base_url, api_key="t", name="m"))
    ask = [{"role": "user", "content": "summarise"}]
    assert json.loads(model.complete_json(ask, SUMMARY_SCHEMA, name="summary").content) == {
        "summary": "one"
    }
    model.complete_json(ask, SUMMARY_SCHEMA, name="summary")
    assert kinds(server) == ["json_schema", "json_object", None, None]


def test_json_object_is_used_where_json_schema_is_refused(server):
    server.profile.json_modes = ("json_object",)
    server.script(completion('{"summary": "x"}'))
    model = OpenAIChatModel(ModelSettings(base_url=server.base_url, api_key="t", name="m"))
    model.complete_json([{"role": "user", "content": "s"}], SUMMARY_SCHEMA, name="summary")
    assert kinds(server) == ["json_schema", "json_object"]
    assert model.caps.json_mode == "json_object"


def brain(summary: str, conclusions: list[dict[str, Any]] | None = None):
    def answer(body: dict[str, Any]) -> Any:
        system = body["messages"][0]["content"]
        if system == SUMMARY_PROMPT:
            return completion(summary)
        if system == EXTRACTION_PROMPT:
            return completion(json.dumps({"conclusions": conclusions or []}))
        return completion("Noted.")

    return answer


def chat(assistant: Assistant, server: FakeOpenAI, summary: str) -> None:
    server.script(*[brain(summary)] * 20)
    for text in (
        "My sister Ana lives in Porto.",
        "She moved there in 2019.",
        "Her cat is called Miso.",
    ):
        assistant.ask(text, session="s")


def test_a_grounded_summary_is_stored_and_asked_for_as_json(assistant, server):
    chat(assistant, server, '{"summary": "The user\'s sister Ana lives in Porto since 2019."}')
    latest = assistant.memory.compressor.latest("s")
    assert latest is not None and latest.text == "The user's sister Ana lives in Porto since 2019."
    summaries = [b for b in server.requests if b["messages"][0]["content"] == SUMMARY_PROMPT]
    assert summaries[0]["response_format"]["type"] == "json_schema"
    assert summaries[0]["max_tokens"] == 1024


@pytest.mark.parametrize(
    "bad",
    [
        "New messages:\nuser: I'm a student at the university of Lyon",  # the real one
        '{"summary": "The user is a student at the university of Lyon."}',  # made up
        '{"summary": "Ana moved to Porto in 2017."}',  # a wrong number
        '{"summary": "(the model returned an empty answer)"}',
        '{"summary": "user: My sister Ana lives in Porto. assistant: Noted."}',
    ],
)
def test_a_summary_that_fails_the_check_keeps_the_old_history(assistant, server, bad):
    chat(assistant, server, bad)
    assert any(b["messages"][0]["content"] == SUMMARY_PROMPT for b in server.requests)
    assert assistant.memory.compressor.latest("s") is None
    server.script(completion("Yes."))
    assistant.ask("Anything else?", session="s")
    later = next(
        b["messages"]
        for b in reversed(server.requests)
        if b["messages"][0]["content"] != SUMMARY_PROMPT
    )
    assert later[-1]["content"] == "Anything else?"
    assert "Lyon" not in json.dumps(later) and "2017" not in json.dumps(later)
    assert any("Ana lives in Porto" in (m.get("content") or "") for m in later)


def test_junk_model_conclusions_are_dropped_and_the_failure_is_one_log_line(
    assistant, server, caplog
):
    server.script(completion("Noted."))
    assistant.ask("I like green tea.", session="t")
    server.script(
        brain(
            "",
            [
                {"text": "The user likes green tea", "kind": "preference"},
                {"text": "...", "kind": "fact"},
                {"text": "what does the user like?", "kind": "fact"},
                {"text": "x", "kind": "belief"},
            ],
        )
    )
    stored = assistant.end_session("t")
    assert stored == 1
    texts = [c.text for c in assistant.memory.store.recall("green tea", 5)]
    assert texts == ["The user likes green tea"]

    server.script(completion('{"conclusions": 12}'))
    server.script(completion("Noted."))
    assistant.ask("Remember that my dentist is Dr. Li.", session="u")
    with caplog.at_level(logging.WARNING):
        assistant.end_session("u")
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings and all("\n" not in line for line in warnings)


@pytest.mark.parametrize("text", ["", "...", "text", "memory_remember", "What is my name?"])
def test_memory_remember_refuses_junk_with_an_error_the_model_sees(assistant, server, text):
    server.script(calls(("memory_remember", {"text": text})), completion("Sorry."))
    outcome = assistant.ask("remember it", session="m")
    call = outcome.tool_calls[0]
    assert call.status != "ok"
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "nothing was stored" in tool_message["content"] or "INVALID" in tool_message["content"]
    assert not assistant.memory.store.has_active()


@pytest.mark.parametrize("path", ["vault_create", "vault_create.md", "Inbox/title.md", "<title>"])
def test_vault_create_refuses_a_tool_name_or_placeholder_title(assistant, server, tmp_path, path):
    server.script(calls(("vault_create", {"path": path, "content": "x"})), completion("Sorry."))
    outcome = assistant.ask("make a note", session="v")
    assert outcome.tool_calls[0].status != "ok"
    tool_message = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert "not a note title" in tool_message["content"]
    assert list((tmp_path / "vault").rglob("*.md")) == []


def test_a_real_title_is_still_created(assistant, server, tmp_path):
    server.script(
        calls(("vault_create", {"path": "Inbox/Trip to Porto.md", "content": "x"})),
        completion("Created."),
    )
    assistant.ask("make a note about the Porto trip", session="v")
    assert (tmp_path / "vault" / "Inbox" / "Trip to Porto.md").exists()


def test_calc_tool_still_works_with_memory_on(assistant, server):
    server.script(calls(("calc_evaluate", {"expression": "40+49"})), completion("89"))
    assert assistant.ask("40+49?").answer == "89"
    assert calc_evaluate.name == "calc_evaluate"


def test_only_conclusions_above_the_relevance_floor_enter_the_context(tmp_path):
    offline = Assistant(load_settings())
    try:
        store = offline.memory.store
        store.remember("My dentist is Dr. Li at the Rue Verte clinic.", subject="dentist")
        store.remember("The user prefers aisle seats on long flights.", kind="preference")
        for junk in ("vault_create", "The user said hello.", "..."):  # stored before the rule
            store.remember(junk, kind="note")
        dentist = [c.text for c in offline.memory.relevant("Who is my dentist?")]
        assert dentist[0] == "My dentist is Dr. Li at the Rue Verte clinic."
        assert not {"vault_create", "..."} & set(dentist)
        unrelated = offline.memory.relevant("Compute 12 times 7 for me")
        assert [c.text for c in unrelated if c.kind == "note"] == []
    finally:
        offline.close()


def test_a_one_shot_ask_prints_no_pydantic_dump_on_stderr(server, tmp_path):
    import os
    import subprocess
    import sys

    def reply(body: dict[str, Any]) -> Any:
        if body["messages"][0]["content"] == EXTRACTION_PROMPT:
            return completion('{"conclusions": [{"kind": "belief"}, {"text": 5, "tags": "x"}]}')
        return completion("Noted: Dr. Li.")

    server.script(*[reply] * 4)
    env = {
        **os.environ,
        "ASSISTANT_HOME": str(tmp_path),
        "OPENAI_BASE_URL": server.base_url,
        "OPENAI_API_KEY": "test",
        "ASSISTANT_MODEL": "fake-model",
    }
    done = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", "Remember that my dentist is Dr. Li."],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "Noted: Dr. Li." in done.stdout
    assert "validation error" not in done.stderr and "input_value" not in done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) <= 2
