"""Hostile model output (issue 13, item 6): whatever a model sends as a tool call, the
call gets a clear error the model sees and the turn ends normally; nothing raises into
the process, nothing stops the turn's rows from being stored, and the daemon answers 200.

Driven through the real `openai` SDK against the local fake endpoint, so the arguments go
through the same JSON parsing (of the HTTP body, then of the arguments string) as with a
real server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, calls, completion
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assistant.outcome import StopReason
from tools.arguments import MAX_DEPTH, strict_loads
from tools.base import ToolArgs, ToolError, tool
from tools.calc import calc_evaluate

HOSTILE: dict[str, tuple[str, str]] = {
    # a lone surrogate as a JSON escape inside the arguments string
    "escaped lone surrogate": ('{"expression": "1+\\ud800"}', "INVALID_TEXT"),
    # a raw lone surrogate: the HTTP body carries "\ud800", the SDK's parser makes it a char
    "raw lone surrogate": ('{"expression": "1+\ud800"}', "INVALID_TEXT"),
    "surrogate in a key": ('{"expr\\udfffession": "1+1"}', "INVALID_TEXT"),
    "3,000 deep": ('{"expression": ' + "[" * 3000 + "]" * 3000 + "}", "ARGUMENTS_TOO_DEEP"),
    "3,000 deep objects": ('{"a": ' + '{"a": ' * 3000 + "1" + "}" * 3001, "ARGUMENTS_TOO_DEEP"),
    "deep and broken": ('{"expression": ' + "[" * 3000, "ARGUMENTS_TOO_DEEP"),
    "5,000-digit integer": ('{"expression": ' + "9" * 5000 + "}", "INVALID_NUMBER"),
    "float overflow": ('{"expression": 1e99999}', "INVALID_NUMBER"),
    "NaN": ('{"expression": NaN}', "INVALID_NUMBER"),
    "-Infinity": ('{"expression": -Infinity}', "INVALID_NUMBER"),
    "duplicate keys": ('{"expression": "1+1", "expression": "2+2"}', "DUPLICATE_KEY"),
}


@pytest.mark.parametrize("raw, code", HOSTILE.values(), ids=list(HOSTILE))
def test_hostile_arguments_become_a_tool_error_and_the_turn_ends_normally(
    fake_openai: FakeOpenAI, make_assistant: Any, raw: str, code: str
) -> None:
    fake_openai.script(calls(("calc_evaluate", raw)), completion("Sorry, that failed."))
    assistant = make_assistant(tools=[calc_evaluate])
    outcome = assistant.ask("compute it")
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "Sorry, that failed."
    [call] = outcome.tool_calls
    assert call.status == code
    assert not call.executed
    # the model saw the error as data, with the detail naming the problem
    second = fake_openai.requests[1]
    shown = json.loads(next(m for m in second["messages"] if m["role"] == "tool")["content"])
    assert shown["error"] == code and shown["detail"]
    # the turn is stored (trace and history), and everything encodes as UTF-8 JSON
    turn = assistant.traces.turn(outcome.turn_id)
    assert turn is not None and turn["stop_reason"] == "final"
    json.dumps(outcome.as_dict(), ensure_ascii=False).encode("utf-8")
    history = assistant.working.load(outcome.session)
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]


def test_a_lone_surrogate_in_the_answer_is_replaced_not_a_crash(
    fake_openai: FakeOpenAI, make_assistant: Any
) -> None:
    fake_openai.script(completion("half a pair: \ud83d and on"))
    assistant = make_assistant(tools=[calc_evaluate])
    outcome = assistant.ask("hi")
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "half a pair: \ufffd and on"
    assert assistant.working.load(outcome.session)[-1]["content"] == outcome.answer


class Nested(ToolArgs):
    data: Any = None


@tool(version="1")
def probe_nested(args: Nested) -> dict[str, Any]:
    """Test probe: echoes what it got."""
    return {"type": type(args.data).__name__}


def test_an_ordinary_nested_argument_still_works(
    fake_openai: FakeOpenAI, make_assistant: Any
) -> None:
    nested = {"a": [{"b": [1, 2.5, "x", None, True]}]}
    fake_openai.script(calls(("probe_nested", {"data": nested})), completion("ok"))
    outcome = make_assistant(tools=[probe_nested]).ask("go")
    assert [c.status for c in outcome.tool_calls] == ["ok"]


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.text(alphabet=st.characters(codec=None), max_size=60))
def test_fuzzed_argument_text_parses_or_is_refused_never_raises(text: str) -> None:
    """Any text, lone surrogates and brackets included: JSON, a JSONDecodeError for the
    repair step, or a ToolError; nothing else."""
    for raw in (text, '{"k": "' + text + '"}', "[" * 70 + text):
        try:
            value = strict_loads(raw)
        except (json.JSONDecodeError, ToolError):
            continue
        json.dumps(value).encode("utf-8")


def test_depth_is_counted_outside_strings_only() -> None:
    brackets_in_a_string = json.dumps({"expression": "[" * 5000})
    assert strict_loads(brackets_in_a_string) == {"expression": "[" * 5000}
    at_limit = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    strict_loads(at_limit)
    with pytest.raises(ToolError):
        strict_loads("[" + at_limit + "]")


@pytest.mark.slow
def test_hostile_arguments_through_the_daemon_get_200_and_an_answer(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    import polling
    from test_daemon import DaemonProcess, make_vault

    home = tmp_path / "home"
    home.mkdir()
    daemon = DaemonProcess(
        home,
        make_vault(tmp_path / "vault"),
        {
            "OPENAI_BASE_URL": fake_openai.base_url,
            "OPENAI_API_KEY": "test",
            "ASSISTANT_MODEL": "fake-model",
        },
    )
    try:
        daemon.start()
        for raw, code in (HOSTILE["raw lone surrogate"], HOSTILE["3,000 deep"]):
            fake_openai.script(
                calls(("calc_evaluate", raw)),
                completion("It failed."),
                completion('{"conclusions": []}'),  # the one-shot session's extraction
            )
            result = daemon.cli("ask", "--json", "compute it")
            assert result.returncode == 0, result.stderr
            outcome = json.loads(result.stdout)
            assert outcome["served_by"] == "daemon"
            assert outcome["answer"] == "It failed."
            assert [c["status"] for c in outcome["tool_calls"]] == [code]
        polling.wait_for(lambda: fake_openai.remaining == 0, "the extraction", 60, 0.1)
        assert "Traceback" not in daemon.stderr()
    finally:
        daemon.close()


def _hostile_text() -> st.SearchStrategy[str]:
    """Argument strings built from the pieces that broke turns: surrogates, brackets,
    long digit runs, NaN, repeated keys, control characters."""
    pieces = st.sampled_from(
        [
            "{",
            "}",
            "[",
            "]",
            '"',
            ":",
            ",",
            "\\ud800",
            "\udfff",
            "NaN",
            "-Infinity",
            "1e999",
            "9" * 40,
            '"expression"',
            '"1+1"',
            "\x00",
            "\x1b[2J",
            " ",
            "null",
            "true",
        ]
    )
    return st.one_of(
        st.lists(pieces, max_size=40).map("".join),
        st.integers(1, 4000).map(lambda n: '{"expression": ' + "[" * n + "]" * n + "}"),
        st.text(alphabet=st.characters(codec=None), max_size=40).map(
            lambda t: json.dumps({"expression": t}, ensure_ascii=False)
        ),
    )


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_hostile_text(), min_size=1, max_size=3))
def test_fuzzed_hostile_calls_never_crash_a_turn(tmp_path_factory: Any, raws: list[str]) -> None:
    from assistant.app import Assistant
    from assistant.config import load_settings
    from assistant.testing import ScriptedModel
    from assistant.testing import calls as scripted_calls
    from assistant.testing import text as scripted_text

    model = ScriptedModel(
        [scripted_calls(*(("calc_evaluate", raw) for raw in raws)), scripted_text("done")]
    )
    settings_ = load_settings()
    settings_.home = tmp_path_factory.mktemp("fuzz")
    assistant = Assistant(settings_, model=model, tools=[calc_evaluate])
    try:
        outcome = assistant.ask("go")
        assert outcome.stop_reason is not StopReason.MODEL_ERROR  # a named, normal ending
        assert len(outcome.tool_calls) == len(raws)
        json.dumps(outcome.as_dict(), ensure_ascii=False).encode("utf-8")
        assert assistant.traces.turn(outcome.turn_id) is not None
    finally:
        assistant.close()


def test_a_surrogate_in_the_users_text_or_a_watch_prompt_is_stored_not_a_crash() -> None:
    """A file named with bytes that are not UTF-8 reaches a watch prompt as `\\udcff`."""
    from assistant.app import Assistant
    from assistant.config import load_settings

    assistant = Assistant(load_settings())
    try:
        outcome = assistant.ask("summarise Inbox/caf\udce9.md", unattended=True)
        assert outcome.stop_reason is not StopReason.MODEL_ERROR
        assert (
            assistant.working.load(outcome.session)[0]["content"] == "summarise Inbox/caf\ufffd.md"
        )
    finally:
        assistant.close()
