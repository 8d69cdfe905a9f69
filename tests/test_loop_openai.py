"""The loop driven through the real `openai` SDK against a local fake endpoint (SPEC L1-L16, O3).

Each test scripts the endpoint's replies, runs one or more turns, and checks both what the
endpoint received (the wire protocol) and the `TurnOutcome` the user gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

import pytest
from fake_openai import (
    EMPTY_SCRIPT_MESSAGE,
    assert_paired,
    calls,
    completion,
    delay,
    http_error,
    tool_call,
)

from assistant.outcome import StopReason
from assistant.testing import ScriptedModel
from assistant.testing import calls as scripted_calls
from assistant.testing import text as scripted_text
from tools.base import tool
from tools.calc import calc_evaluate


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def tool_results(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The parsed JSON content of every tool message in a request (L3: content is a string)."""
    results = []
    for message in tool_messages(request):
        assert isinstance(message["content"], str), message
        results.append(json.loads(message["content"]))
    return results


def all_text(requests: list[dict[str, Any]]) -> str:
    return json.dumps([r["messages"] for r in requests], ensure_ascii=False)


def find_key(value: Any, key: str) -> list[Any]:
    found = []
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key:
                found.append(item)
            found.extend(find_key(item, key))
    elif isinstance(value, list):
        for item in value:
            found.extend(find_key(item, key))
    return found


# -- protocol: pairing, whitelist, arguments (L1-L6) ------------------------------------


def test_tool_calls_are_sent_before_their_results_paired_by_id_in_call_order(
    fake_openai, make_assistant
):
    fake_openai.script(
        calls(
            ("calc_evaluate", {"expression": "15+27"}),
            ("calc_evaluate", {"expression": "2**10"}),
            ids=["call_sum", "call_pow"],
        ),
        completion("15+27 is 42 and 2**10 is 1024."),
    )
    outcome = make_assistant(tools=[calc_evaluate]).ask("What are 15+27 and 2**10?")

    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "15+27 is 42 and 2**10 is 1024."
    first, second = fake_openai.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["calc_evaluate"]
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool"]
    assistant_message = second["messages"][2]
    assert [c["id"] for c in assistant_message["tool_calls"]] == ["call_sum", "call_pow"]
    assert [m["tool_call_id"] for m in tool_messages(second)] == ["call_sum", "call_pow"]
    assert [r["value"] for r in tool_results(second)] == [42, 1024]
    assert_paired(second["messages"])


def test_unknown_tool_gets_error_listing_available_tools_and_model_corrects_itself(
    fake_openai, make_assistant
):
    fake_openai.script(
        calls(("calculator", {"expression": "6*7"})),
        calls(("calc_evaluate", {"expression": "6*7"})),
        completion("6*7 = 42"),
    )
    outcome = make_assistant(tools=[calc_evaluate]).ask("6*7?")

    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "6*7 = 42"
    [refused] = tool_results(fake_openai.requests[1])
    assert refused["error"] == "UNKNOWN_TOOL"
    assert refused["available_tools"] == ["calc_evaluate"]
    assert tool_results(fake_openai.requests[2])[-1]["value"] == 42
    assert [c.status for c in outcome.tool_calls] == ["UNKNOWN_TOOL", "ok"]


@pytest.mark.parametrize(
    "raw",
    ['{"expression": "15+27"', "{'expression': '15+27'}"],
    ids=["missing-closing-brace", "single-quotes"],
)
def test_malformed_json_arguments_are_repaired_and_the_tool_runs(fake_openai, make_assistant, raw):
    fake_openai.script(completion(None, [tool_call("calc_evaluate", raw)]), completion("It is 42."))
    outcome = make_assistant(tools=[calc_evaluate]).ask("15+27?")

    assert outcome.stop_reason is StopReason.FINAL
    assert tool_results(fake_openai.requests[1]) == [{"expression": "15+27", "value": 42}]
    assert outcome.tool_calls[0].repaired


def test_unrepairable_arguments_return_the_error_and_the_tool_schema(fake_openai, make_assistant):
    fake_openai.script(
        completion(None, [tool_call("calc_evaluate", "<<<>>>")]),
        completion("I could not run the calculation."),
    )
    outcome = make_assistant(tools=[calc_evaluate]).ask("15+27?")

    assert outcome.stop_reason is StopReason.FINAL
    [result] = tool_results(fake_openai.requests[1])
    assert result["error"] == "INVALID_JSON"
    assert "not valid JSON" in result["detail"]
    assert "expression" in result["schema"]["properties"]
    assert not outcome.tool_calls[0].executed


def test_arguments_are_coerced_to_the_declared_types(fake_openai, make_assistant):
    seen: list[tuple[Any, Any]] = []

    @tool
    def text_repeat(word: str, times: int) -> dict[str, Any]:
        """Repeat a word. Call when the user asks to repeat a word N times."""
        seen.append((word, times))
        return {"text": word * times}

    fake_openai.script(
        calls(("text_repeat", '{"word": ["abc"], "times": "3"}')),
        completion("abcabcabc"),
    )
    outcome = make_assistant(tools=[text_repeat]).ask("repeat abc three times")

    assert seen == [("abc", 3)]
    assert tool_results(fake_openai.requests[1]) == [{"text": "abcabcabc"}]
    assert outcome.stop_reason is StopReason.FINAL


def test_invalid_arguments_go_back_to_the_model_with_the_schema(fake_openai, make_assistant):
    fake_openai.script(
        calls(("calc_evaluate", {"expr": "1+1"})),
        calls(("calc_evaluate", {"expression": "1+1"})),
        completion("1+1 = 2"),
    )
    outcome = make_assistant(tools=[calc_evaluate]).ask("1+1?")

    [invalid] = tool_results(fake_openai.requests[1])
    assert invalid["error"] == "INVALID_ARGUMENTS"
    assert "expression" in invalid["detail"]
    assert "expression" in invalid["schema"]["properties"]
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "1+1 = 2"


def _explode() -> None:
    raise RuntimeError("disk on fire")


def test_tool_exception_becomes_a_structured_error_without_a_traceback(fake_openai, make_assistant):
    @tool
    def disk_check(path: str) -> dict[str, Any]:
        """Check a disk. Call when the user asks about disk health."""
        _explode()
        return {"ok": True}

    fake_openai.script(calls(("disk_check", {"path": "/"})), completion("The check failed."))
    outcome = make_assistant(tools=[disk_check]).ask("is my disk fine?")

    [result] = tool_results(fake_openai.requests[1])
    assert result == {"error": "TOOL_EXCEPTION", "detail": "RuntimeError: disk on fire"}
    sent = all_text(fake_openai.requests)
    assert "Traceback" not in sent
    assert "_explode" not in sent
    assert os.path.basename(__file__) not in sent
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.tool_calls[0].status == "TOOL_EXCEPTION"


@pytest.fixture
def never_set() -> Any:
    """An event that tools wait on; set at teardown so no worker thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_a_tool_past_its_timeout_gets_a_timeout_result(fake_openai, make_assistant, never_set):
    @tool(timeout_s=0.2)
    def web_fetch(url: str) -> dict[str, Any]:
        """Fetch a page. Call when the user gives a URL."""
        never_set.wait()
        return {"body": "late"}

    fake_openai.script(
        calls(("web_fetch", {"url": "http://example.invalid"})), completion("The fetch timed out.")
    )
    outcome = make_assistant(tools=[web_fetch]).ask("fetch it")

    [result] = tool_results(fake_openai.requests[1])
    assert result["error"] == "TIMEOUT"
    assert "web_fetch" in result["detail"]
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "The fetch timed out."


def test_a_call_queued_behind_a_hung_tool_still_runs_and_gets_its_own_result(
    fake_openai, make_assistant, never_set
):
    @tool(timeout_s=0.2)
    def web_fetch(url: str) -> dict[str, Any]:
        """Fetch a page. Call when the user gives a URL."""
        never_set.wait()
        return {"body": "late"}

    fake_openai.script(
        calls(
            ("web_fetch", {"url": "http://a.invalid"}), ("web_fetch", {"url": "http://b.invalid"})
        ),
        completion("Both fetches timed out."),
    )
    assistant = make_assistant(
        tools=[web_fetch], parallel_tools=1, turn_timeout_s=2.0, max_tool_failures=3
    )
    outcome = assistant.ask("fetch both")

    assert [c.status for c in outcome.tool_calls] == ["TIMEOUT", "TIMEOUT"]
    assert outcome.stop_reason is StopReason.FINAL


# -- parallel and sequential calls (L9) --------------------------------------------------


def _rendezvous_weather_tool() -> Any:
    barrier = threading.Barrier(2, timeout=1)
    oslo_done = threading.Event()

    @tool
    def city_weather(city: str) -> dict[str, Any]:
        """Weather for a city. Call when the user asks about the weather."""
        barrier.wait()  # breaks (BrokenBarrierError) unless both calls run at once
        if city == "Paris":
            oslo_done.wait(5)  # Paris finishes last, yet its result must come first
        else:
            oslo_done.set()
        return {"city": city, "sky": "clear"}

    return city_weather


def test_parallel_calls_overlap_and_results_keep_call_order(fake_openai, make_assistant, tmp_path):
    # The first calls of a fresh assistant are where its pool has to grow: the first try
    # goes through the SDK and the fake endpoint, the others (cheaper) through ScriptedModel.
    city_weather = _rendezvous_weather_tool()
    fake_openai.script(
        calls(("city_weather", {"city": "Paris"}), ("city_weather", {"city": "Oslo"})),
        completion("Clear in Paris and Oslo."),
    )
    outcome = make_assistant(tools=[city_weather]).ask("weather in Paris and Oslo?")

    sent = fake_openai.requests[-1]
    assert [r.get("city") for r in tool_results(sent)] == ["Paris", "Oslo"], tool_results(sent)
    ids = [c["id"] for c in sent["messages"][2]["tool_calls"]]
    assert [m["tool_call_id"] for m in tool_messages(sent)] == ids
    assert [c.status for c in outcome.tool_calls] == ["ok", "ok"]

    for trial in range(1, 8):
        both = scripted_calls(*[("city_weather", {"city": city}) for city in ("Paris", "Oslo")])
        model = ScriptedModel([both, scripted_text("Clear in Paris and Oslo.")])
        assistant = make_assistant(
            tools=[_rendezvous_weather_tool()], model=model, home=tmp_path / f"home-{trial}"
        )
        outcome = assistant.ask("weather in Paris and Oslo?")
        results = [c.result for c in outcome.tool_calls]
        assert [r.get("city") for r in results] == ["Paris", "Oslo"], (trial, results)


def test_sequential_tool_calls_never_overlap(fake_openai, make_assistant):
    lock = threading.Lock()
    active = 0
    peak = 0
    runs = 0

    @tool(read_only=False, sequential=True)
    def note_append(line: int) -> dict[str, Any]:
        """Append a line to the note. Call when the user asks to add a line."""
        nonlocal active, peak, runs
        with lock:
            active += 1
            runs += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return {"appended": line}

    fake_openai.script(
        calls(*[("note_append", {"line": n}) for n in range(1, 5)]),
        completion("Added four lines."),
    )
    outcome = make_assistant(tools=[note_append]).ask("add four lines")

    assert runs == 4
    assert peak == 1
    assert [r["appended"] for r in tool_results(fake_openai.requests[1])] == [1, 2, 3, 4]
    assert outcome.stop_reason is StopReason.FINAL


# -- result size (L10) -------------------------------------------------------------------


def test_a_large_result_is_cut_to_the_budget_and_the_full_result_is_traced(
    fake_openai, make_assistant
):
    @tool
    def vault_list(folder: str) -> list[dict[str, Any]]:
        """List notes in a folder. Call when the user asks what a folder holds."""
        return [{"path": f"{folder}/note-{n}.md", "title": f"Note number {n}"} for n in range(500)]

    fake_openai.script(
        calls(("vault_list", {"folder": "Inbox"})), completion("The Inbox holds many notes.")
    )
    assistant = make_assistant(tools=[vault_list])
    outcome = assistant.ask("what is in my Inbox?")

    [message] = tool_messages(fake_openai.requests[1])
    assert len(message["content"]) <= 4000
    sent = json.loads(message["content"])
    assert "truncated" in json.dumps(sent)
    assert 500 in find_key(sent, "total")
    assert outcome.tool_calls[0].truncated
    traced = assistant.traces.turn(outcome.turn_id)["tool_calls"][0]["result"]
    full = traced["result"] if isinstance(traced, dict) else traced
    assert len(full) == 500
    assert full[499]["path"] == "Inbox/note-499.md"


# -- cache and idempotency (L11) ---------------------------------------------------------


def test_a_read_only_tool_called_again_with_the_same_arguments_is_served_from_cache(
    fake_openai, make_assistant
):
    executions = 0

    @tool
    def city_weather(city: str) -> dict[str, Any]:
        """Weather for a city. Call when the user asks about the weather."""
        nonlocal executions
        executions += 1
        return {"city": city, "sky": "clear"}

    fake_openai.script(
        calls(("city_weather", {"city": "Paris"})),
        completion("Clear in Paris."),
        calls(("city_weather", {"city": "Paris"})),
        completion("Still clear in Paris."),
    )
    assistant = make_assistant(tools=[city_weather])
    first = assistant.ask("weather in Paris?")
    second = assistant.ask("and now?", session=first.session)

    assert executions == 1
    assert not first.tool_calls[0].cached
    assert second.tool_calls[0].cached
    assert tool_results(fake_openai.requests[3])[-1] == {"city": "Paris", "sky": "clear"}
    assert second.stop_reason is StopReason.FINAL


def _note_writer() -> tuple[Any, list[str]]:
    written: list[str] = []

    @tool(read_only=False)
    def note_write(text: str) -> dict[str, Any]:
        """Write a line into the note. Call when the user asks to note something down."""
        written.append(text)
        return {"written": text, "line": len(written)}

    return note_write, written


def test_a_write_retried_with_identical_arguments_in_one_turn_writes_once(
    fake_openai, make_assistant
):
    note_write, written = _note_writer()
    fake_openai.script(
        calls(("note_write", {"text": "buy milk"})),
        calls(("note_write", {"text": "buy milk"})),
        completion("Noted: buy milk."),
    )
    outcome = make_assistant(tools=[note_write]).ask("note: buy milk")

    assert written == ["buy milk"]
    first, replay = outcome.tool_calls
    assert first.executed and not first.cached
    assert replay.cached and not replay.executed
    assert replay.extra.get("idempotent_replay") is True
    assert tool_results(fake_openai.requests[2])[-1] == {"written": "buy milk", "line": 1}
    assert outcome.stop_reason is StopReason.FINAL


def test_identical_parallel_write_calls_in_one_reply_write_once(fake_openai, make_assistant):
    note_write, written = _note_writer()
    fake_openai.script(
        calls(("note_write", {"text": "buy milk"}), ("note_write", {"text": "buy milk"})),
        completion("Noted: buy milk."),
    )
    outcome = make_assistant(tools=[note_write]).ask("note: buy milk")

    assert len(outcome.tool_calls) == 2
    assert written == ["buy milk"]


# -- grounding (L13, L16) ----------------------------------------------------------------


def test_an_answer_contradicting_a_tool_result_gets_one_corrective_request(
    fake_openai, make_assistant
):
    fake_openai.script(
        calls(("calc_evaluate", {"expression": "15+27"})),
        completion("15+27=41"),
        completion("15+27=42"),
    )
    assistant = make_assistant(tools=[calc_evaluate])
    outcome = assistant.ask("15+27?")

    assert len(fake_openai.requests) == 3
    corrective = fake_openai.requests[2]
    last = corrective["messages"][-1]
    assert last["role"] == "user"
    assert "41" in last["content"] and "42" in last["content"]
    assert "calc_evaluate" in last["content"]
    assert "tools" not in corrective
    assert outcome.answer == "15+27=42"
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.grounding is not None and outcome.grounding.corrected
    assert outcome.grounding.original_answer == "15+27=41"
    traced = assistant.traces.turn(outcome.turn_id)["grounding"]
    assert traced["corrected"] and traced["mismatches"]
    stored = assistant.working.load(outcome.session)
    assert stored[-1] == {"role": "assistant", "content": "15+27=42"}
    assert all("[grounding check]" not in (m.get("content") or "") for m in stored)


def test_a_reformatted_number_is_not_treated_as_a_contradiction(fake_openai, make_assistant):
    fake_openai.script(
        calls(("calc_evaluate", {"expression": "15+27"})), completion("The result is 42.0")
    )
    outcome = make_assistant(tools=[calc_evaluate]).ask("15+27?")

    assert len(fake_openai.requests) == 2
    assert outcome.answer == "The result is 42.0"
    assert outcome.grounding is not None and outcome.grounding.passed
    assert not outcome.grounding.corrected


def test_stating_the_count_the_truncated_result_reported_is_not_a_contradiction(
    fake_openai, make_assistant
):
    @tool
    def vault_grep(pattern: str) -> list[dict[str, Any]]:
        """Find lines matching a pattern. Call when the user asks where something occurs."""
        return [{"line": 3 * n + 1, "text": f"{pattern}: tidy up"} for n in range(437)]

    fake_openai.script(
        calls(("vault_grep", {"pattern": "TODO"})),
        completion("I found 437 TODO lines."),
        completion("I found 436 TODO lines."),
    )
    outcome = make_assistant(tools=[vault_grep]).ask("how many TODO lines do I have?")

    assert '"total":437' in tool_messages(fake_openai.requests[1])[0]["content"]
    assert len(fake_openai.requests) == 2, fake_openai.requests[-1]["messages"][-1]
    assert outcome.answer == "I found 437 TODO lines."


def test_the_system_prompt_tells_the_model_to_answer_strictly_from_tool_results(
    fake_openai, make_assistant
):
    fake_openai.script(completion("Hello."))
    make_assistant().ask("hi")

    system = fake_openai.requests[0]["messages"][0]
    assert system["role"] == "system"
    assert "strictly from the tool results" in system["content"]


def test_requests_use_a_low_temperature_by_default(fake_openai, make_assistant):
    fake_openai.script(calls(("calc_evaluate", {"expression": "1+1"})), completion("It is 2."))
    make_assistant().ask("1+1?")

    assert [r["temperature"] for r in fake_openai.requests] == [0.2, 0.2]
    assert all(r["model"] == "fake-model" for r in fake_openai.requests)


def test_token_usage_reported_by_the_endpoint_is_summed_over_the_turn(fake_openai, make_assistant):
    fake_openai.script(
        completion(
            None,
            [tool_call("calc_evaluate", {"expression": "1+1"})],
            usage={"prompt_tokens": 100, "completion_tokens": 7},
        ),
        completion("It is 2.", usage={"prompt_tokens": 130, "completion_tokens": 4}),
    )
    outcome = make_assistant().ask("1+1?")

    assert outcome.usage.prompt_tokens == 230
    assert outcome.usage.completion_tokens == 11
    assert not outcome.usage.estimated


# -- endpoint failures (D4, O1) ----------------------------------------------------------


def test_a_rate_limited_request_is_retried_and_the_turn_succeeds(fake_openai, make_assistant):
    fake_openai.script(http_error(429, "slow down", retry_after=0), completion("Hello!"))
    outcome = make_assistant(max_retries=2).ask("hi")

    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "Hello!"
    assert len(fake_openai.requests) == 2


def test_a_persistent_server_error_ends_the_turn_with_a_model_error(fake_openai, make_assistant):
    fake_openai.script(*[http_error(502, "upstream exploded") for _ in range(3)])
    assistant = make_assistant(max_retries=2)
    outcome = assistant.ask("hi")

    assert len(fake_openai.requests) == 3  # the first try and two retries (502 is retried)
    assert outcome.stop_reason is StopReason.MODEL_ERROR
    assert not outcome.ok
    assert outcome.error_code == "MODEL_SERVER_ERROR"
    assert fake_openai.base_url in outcome.stop_detail
    assert "HTTP 502" in outcome.stop_detail
    assert "upstream exploded" in outcome.stop_detail
    traced = assistant.traces.turn(outcome.turn_id)
    assert traced["stop_reason"] == "model_error"
    assert traced["error_code"] == "MODEL_SERVER_ERROR"


def test_cli_ask_exits_non_zero_and_names_the_endpoint_on_a_server_error(fake_openai, tmp_path):
    (tmp_path / "config.toml").write_text("[model]\nmax_retries = 0\n", encoding="utf-8")
    fake_openai.script(http_error(500, "upstream exploded"), http_error(500, "upstream exploded"))
    env = {
        **os.environ,
        "ASSISTANT_HOME": str(tmp_path),
        "OPENAI_BASE_URL": fake_openai.base_url,
        "OPENAI_API_KEY": "test",
        "ASSISTANT_MODEL": "fake-model",
    }
    done = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", "hi", "there"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode != 0
    assert done.stdout == ""
    assert "HTTP 500" in done.stderr
    assert fake_openai.base_url in done.stderr
    assert fake_openai.requests[0]["messages"][-1]["content"] == "hi there"


def test_a_slow_endpoint_ends_the_turn_with_a_model_timeout(fake_openai, make_assistant):
    fake_openai.script(delay(3, completion("too late")))
    outcome = make_assistant(timeout_s=0.5, max_retries=0).ask("hi")

    assert outcome.stop_reason is StopReason.MODEL_ERROR
    assert outcome.error_code == "MODEL_TIMEOUT"
    assert fake_openai.base_url in outcome.stop_detail


# -- the fake endpoint and the tripwire themselves ---------------------------------------


def test_the_fake_endpoint_answers_an_unscripted_request_with_a_clear_500(
    fake_openai, make_assistant
):
    outcome = make_assistant(max_retries=2).ask("hi")

    assert outcome.stop_reason is StopReason.MODEL_ERROR
    assert EMPTY_SCRIPT_MESSAGE in outcome.stop_detail
    assert len(fake_openai.requests) == 1  # x-should-retry: false, no retry storm


def test_a_scripted_callable_sees_the_request_it_answers(fake_openai, make_assistant):
    def echo(request: dict[str, Any]) -> Any:
        return completion(f"you said: {request['messages'][-1]['content']}")

    fake_openai.script(echo)
    outcome = make_assistant().ask("ping")

    assert outcome.answer == "you said: ping"


def test_the_network_tripwire_refuses_non_loopback_addresses():
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        with pytest.raises(RuntimeError, match="network tripwire"):
            sock.connect(("192.0.2.1", 443))
