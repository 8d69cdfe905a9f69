"""The assistant against servers that behave like real ones (issue 12, items 1-3 and 9).

Each test gives the fake endpoint a compatibility profile reproducing what a real
OpenAI-compatible server did (llama-cpp-python 0.3.x first of all) and checks what the
user gets, through the real `openai` SDK over HTTP and the real loop and stores.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import calls, completion, http_error

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.outcome import StopReason
from tools.calc import calc_evaluate


@pytest.fixture
def server(fake_endpoint):
    return fake_endpoint


@pytest.fixture
def assistant_for(server, tmp_path):
    built: list[Assistant] = []

    def make(model_toml: str = "", *, tools: Any = (calc_evaluate,), **loop: Any) -> Assistant:
        (tmp_path / "config.toml").write_text(
            "[model]\nmax_retries = 2\n" + model_toml, encoding="utf-8"
        )
        settings = load_settings()
        for key, value in loop.items():
            setattr(settings.loop, key, value)
        made = Assistant(settings, tools=None if tools is None else list(tools))
        built.append(made)
        return made

    yield make
    for made in built:
        made.close()


def stored(assistant: Assistant, session: str) -> list[dict[str, Any]]:
    return assistant.working.load(session)


ADD = ("calc_evaluate", {"expression": "40 + 49"})


def test_a_server_refusing_null_content_gets_the_tool_result_to_the_user_and_later_turns_work(
    server, assistant_for
):
    server.profile.reject_null_content = True
    server.script(calls(ADD), completion("40 + 49 = 89."), completion("Hello!"))
    assistant = assistant_for()

    first = assistant.ask("what is 40 + 49?", session="s")
    second = assistant.ask("hello", session="s")

    assert first.stop_reason is StopReason.FINAL and "89" in first.answer
    assert second.stop_reason is StopReason.FINAL and second.answer == "Hello!"
    assert len(server.requests) == 3  # nothing refused, nothing retried
    for body in server.requests:
        assert all(m.get("content") is not None for m in body["messages"])


def test_tools_are_offered_with_tool_choice_so_a_server_that_needs_it_calls_them(
    server, assistant_for
):
    server.profile.tools_need_tool_choice = True
    server.script(calls(ADD), completion("It is 89."))
    outcome = assistant_for().ask("what is 40 + 49?")
    assert [c.name for c in outcome.tool_calls] == ["calc_evaluate"]
    assert server.requests[0]["tool_choice"] == "auto"
    assert "parallel_tool_calls" not in server.requests[0]


def test_every_tool_we_offer_survives_a_server_that_dies_on_large_grammars(
    server, assistant_for, tmp_path, monkeypatch
):
    vault = tmp_path / "vault"
    vault.mkdir()
    monkeypatch.setenv("ASSISTANT_VAULT", str(vault))
    server.profile.max_schema_length = 100
    server.script(calls(ADD), completion("It is 89."))
    outcome = assistant_for(tools=None).ask("what is 40 + 49?")
    assert outcome.stop_reason is StopReason.FINAL and "89" in outcome.answer
    assert len(server.requests[0]["tools"]) > 10


def test_a_server_that_dies_mid_request_is_not_hammered(server):
    from assistant.config import ModelSettings
    from assistant.errors import ModelError
    from assistant.openai_model import OpenAIChatModel

    server.profile.max_schema_length = 100
    server.script(calls(ADD), calls(ADD), calls(ADD))
    huge = {
        "type": "function",
        "function": {
            "name": "foreign_tool",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string", "maxLength": 2000}},
            },
        },
    }
    model = OpenAIChatModel(
        ModelSettings(base_url=server.base_url, api_key="t", name="m", max_retries=3)
    )
    with pytest.raises(ModelError) as failed:
        model.complete([{"role": "user", "content": "hi"}], [huge], temperature=0)
    assert len(server.requests) == 1  # a connection dropped mid-request is not re-sent
    assert "\n" not in str(failed.value)


def test_a_validation_500_is_not_retried_and_is_named_in_one_line(server, assistant_for):
    dump = (
        "1 validation error for CreateChatCompletionRequest\nmessages.2.content\n"
        "  Input should be a valid string [type=string_type, input_value=None]"
    )
    server.script(http_error(500, dump), completion("never"))
    outcome = assistant_for().ask("hi")
    assert outcome.error_code == "MODEL_REQUEST_REJECTED"
    assert len(server.requests) == 1
    assert (
        "\n" not in outcome.stop_detail and "Input should be a valid string" in outcome.stop_detail
    )


def test_429_with_retry_after_is_retried_and_503_too(server, assistant_for):
    server.script(
        http_error(429, "slow down", retry_after=0), http_error(503, "busy"), completion("Hi!")
    )
    outcome = assistant_for().ask("hi")
    assert outcome.answer == "Hi!" and len(server.requests) == 3


def test_a_4xx_is_not_retried(server, assistant_for):
    server.script(http_error(400, "unknown parameter foo"), completion("never"))
    outcome = assistant_for().ask("hi")
    assert outcome.error_code == "MODEL_REQUEST_REJECTED" and len(server.requests) == 1
    assert "unknown parameter foo" in outcome.stop_detail


def test_a_history_the_server_rejects_is_repaired_not_poisoned(server, assistant_for):
    def no_tool_messages(body: dict[str, Any]) -> Any:
        if any(m["role"] == "tool" or m.get("tool_calls") for m in body["messages"]):
            return http_error(400, "Conversation roles must alternate user/assistant")
        return completion("From the tool: 89." if "result of" in json.dumps(body) else "Hello!")

    server.script(calls(ADD), no_tool_messages, no_tool_messages, no_tool_messages)
    assistant = assistant_for()
    first = assistant.ask("what is 40 + 49?", session="s")
    second = assistant.ask("hello", session="s")

    assert first.stop_reason is StopReason.FINAL and "89" in first.answer
    assert second.stop_reason is StopReason.FINAL and second.answer == "From the tool: 89."
    # turn 2 went straight to the repaired form: no refused request first
    assert len(server.requests) == 4


def test_a_cut_answer_is_flagged_to_the_user_and_in_the_trace(server, assistant_for):
    server.script(completion("The three reasons are: first,", finish_reason="length"))
    assistant = assistant_for("max_tokens = 32\n")
    outcome = assistant.ask("give me three reasons")
    assert outcome.truncated and outcome.as_dict()["truncated"] is True
    assert "cut off" in outcome.answer
    assert server.requests[0]["max_tokens"] == 32
    assert "finish_reason length" in assistant.traces.turn(outcome.turn_id)["stop_detail"]
    history = stored(assistant, outcome.session)
    assert history[-1]["content"] == "The three reasons are: first,"  # the note is not stored


def test_an_empty_reply_is_asked_for_again_without_tools(server, assistant_for):
    server.script(completion(""), completion("Hello there."))
    assistant = assistant_for()
    outcome = assistant.ask("hi")
    assert outcome.answer == "Hello there." and outcome.stop_reason is StopReason.FINAL
    assert "tools" in server.requests[0] and "tools" not in server.requests[1]


def test_an_empty_reply_after_tools_is_composed_from_the_tool_results(server, assistant_for):
    server.script(calls(ADD), completion(""), completion("   "))
    assistant = assistant_for()
    outcome = assistant.ask("what is 40 + 49?", session="s")
    assert outcome.stop_reason is StopReason.FINAL
    assert "89" in outcome.answer and "tools returned" in outcome.answer
    assert all("empty answer" not in (m.get("content") or "") for m in stored(assistant, "s"))


def test_an_empty_reply_without_tool_results_is_an_error_and_is_not_stored(server, assistant_for):
    server.script(completion(""), completion(""))
    assistant = assistant_for()
    outcome = assistant.ask("hi", session="s")
    assert outcome.stop_reason is StopReason.MODEL_ERROR
    assert outcome.error_code == "MODEL_EMPTY_REPLY"
    assert [m["role"] for m in stored(assistant, "s")] == ["user"]


def test_an_echoed_runtime_note_in_the_wrap_up_never_reaches_the_user(server, assistant_for):
    server.script(
        calls(ADD),
        completion(
            "[runtime note] Tools are no longer available in this turn: the turn reached "
            "its limit of 2 model requests."
        ),
    )
    outcome = assistant_for(max_requests=2).ask("what is 40 + 49?")
    assert outcome.stop_reason is StopReason.MAX_REQUESTS
    assert "runtime note" not in outcome.answer and "no longer available" not in outcome.answer
    assert "89" in outcome.answer


def test_an_empty_wrap_up_is_composed_from_the_tool_results(server, assistant_for):
    server.script(calls(ADD), completion(""))
    outcome = assistant_for(max_requests=2).ask("what is 40 + 49?")
    assert outcome.stop_reason is StopReason.MAX_REQUESTS
    assert "89" in outcome.answer and "limit of 2 model requests" in outcome.answer


def test_a_failed_wrap_up_is_composed_from_the_tool_results(server, assistant_for):
    server.script(calls(ADD), http_error(400, "nope"))
    outcome = assistant_for(max_requests=2).ask("what is 40 + 49?")
    assert "89" in outcome.answer


def test_system_role_user_puts_our_context_in_the_first_user_message(server, assistant_for):
    server.script(completion("Hi!"))
    assistant_for('system_role = "user"\n').ask("hi")
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert "personal assistant" in messages[0]["content"] and messages[0]["content"].endswith("hi")


def test_system_role_developer_and_extra_body_and_parallel_tool_calls_are_sent(
    server, assistant_for
):
    server.script(completion("Hi!"))
    assistant_for(
        'system_role = "developer"\nparallel_tool_calls = false\n'
        "[model.extra_body]\ntop_k = 20\ncache_prompt = true\n"
    ).ask("hi")
    body = server.requests[0]
    assert body["messages"][0]["role"] == "developer"
    assert body["top_k"] == 20 and body["cache_prompt"] is True
    assert body["parallel_tool_calls"] is False


def test_a_context_length_refusal_compacts_once_and_succeeds(server, assistant_for):
    assistant = assistant_for()
    for n in range(3):
        server.script(completion(f"noted {n}"))
        assistant.ask(f"remember this long text {n}: " + "lorem ipsum " * 300, session="s")
    server.profile.context_window = 2000
    server.script(completion("Sure."))
    outcome = assistant.ask("and now?", session="s")
    assert outcome.stop_reason is StopReason.FINAL and outcome.answer == "Sure."
    assert len(json.dumps(server.requests[-1]["messages"])) < len(
        json.dumps(server.requests[-2]["messages"])
    )


def test_context_window_keeps_oversized_requests_from_being_sent(server, assistant_for):
    assistant = assistant_for("context_window = 1200\nmax_tokens = 200\n")
    for n in range(3):
        server.script(completion(f"noted {n}"))
        assistant.ask(f"note {n}: " + "lorem ipsum " * 120, session="s")
    server.script(completion("Sure."))
    outcome = assistant.ask("and now?", session="s")
    assert outcome.answer == "Sure."
    for body in server.requests:
        assert len(json.dumps(body["messages"])) // 4 + body["max_tokens"] <= 1200 + 200


def test_reasoning_stays_out_of_answer_and_history_but_is_in_the_trace(server, assistant_for):
    server.profile.shape = "vllm"
    server.script(
        completion("It is 89.", reasoning="40 plus 49: carry the one, 89."),
        completion("<think>greeting</think>Hello!"),
    )
    assistant = assistant_for()
    outcome = assistant.ask("what is 40 + 49?", session="r")
    assistant.ask("hi", session="r")
    assert outcome.answer == "It is 89."
    assert all("carry the one" not in json.dumps(m) for m in stored(assistant, "r"))
    assert "carry the one" not in json.dumps(server.requests[1]["messages"])
    assert "greeting" not in json.dumps(stored(assistant, "r"))
    traced = assistant.traces.turn(outcome.turn_id)
    assert "carry the one" in json.dumps(traced["requests"])


def test_retry_after_is_what_the_wait_is_made_of(server):
    import httpx
    import openai

    from assistant.config import ModelSettings
    from assistant.openai_model import OpenAIChatModel

    model = OpenAIChatModel(ModelSettings(base_url=server.base_url, api_key="t", name="m"))

    def status(code: int, headers: dict[str, str]) -> openai.APIStatusError:
        request = httpx.Request("POST", server.base_url)
        response = httpx.Response(code, headers=headers, request=request)
        kind = openai.RateLimitError if code == 429 else openai.APIStatusError
        return kind("x", response=response, body=None)

    assert model._retry_pause(status(429, {"retry-after": "7"}), 0) == 7.0
    assert model._retry_pause(status(503, {"retry-after-ms": "250"}), 0) == 0.25
    assert model._retry_pause(status(500, {"retry-after": "1"}), 0) is None
    assert model._retry_pause(status(400, {}), 0) is None
    assert 0 < model._retry_pause(status(502, {}), 1) <= 1.25


def test_an_empty_200_stream_for_a_tool_call_is_asked_again_unstreamed_and_remembered(
    server, assistant_for
):
    server.profile.empty_stream_for_tool_calls = True
    server.script(calls(ADD), completion("It is 89."), calls(ADD), completion("Again 89."))
    assistant = assistant_for()
    first = assistant.ask("what is 40 + 49?", session="e")
    second = assistant.ask("and again?", session="e")
    assert "89" in first.answer and "89" in second.answer
    streamed = [bool(body.get("stream")) for body in server.requests if body.get("tools")]
    assert streamed == [True, False, False, False, False]  # refused once, then never


def test_tool_messages_text_sends_no_tool_role(server, assistant_for):
    server.script(calls(ADD), completion("It is 89."))
    outcome = assistant_for('tool_messages = "text"\n').ask("what is 40 + 49?")
    assert "89" in outcome.answer
    second = server.requests[1]["messages"]
    assert all(m["role"] != "tool" and "tool_calls" not in m for m in second)
    assert any("89" in m["content"] and m["role"] == "user" for m in second)


def test_html_entities_echoed_by_an_autoescaping_template_are_decoded(server, assistant_for):
    server.script(completion("It&#39;s &quot;done&quot; &amp; stored."))
    assert assistant_for().ask("hi").answer == 'It\'s "done" & stored.'


def test_what_an_endpoint_refused_is_remembered_across_processes(server, tmp_path):
    server.profile.reject_stream_options = True
    server.script(completion("one"), completion("two"))
    (tmp_path / "config.toml").write_text("[model]\nmax_retries = 0\n", encoding="utf-8")
    for expected in ("one", "two"):  # two one-shot asks, each its own Assistant
        made = Assistant(load_settings(), tools=[calc_evaluate])
        try:
            assert made.ask("hi").answer == expected
        finally:
            made.close()
    assert ["stream_options" in body for body in server.requests] == [True, False, False]
    assert (tmp_path / "endpoints.json").exists()


@pytest.mark.parametrize(
    "line, key",
    [('system_role = "assistant"', "model.system_role"), ("max_tokens = 0", "model.max_tokens")],
)
def test_a_bad_model_setting_is_named(tmp_path, line, key):
    from assistant.errors import ConfigError

    (tmp_path / "config.toml").write_text(f"[model]\n{line}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as failed:
        load_settings()
    assert key in str(failed.value) and "\n" not in str(failed.value)


def test_a_refused_developer_role_falls_back_to_system(server, assistant_for):
    def no_developer(body: dict[str, Any]) -> Any:
        if any(m["role"] == "developer" for m in body["messages"]):
            return http_error(500, "1 validation error: role Input should be 'system', 'user'")
        return completion("Hi!")

    server.script(no_developer, no_developer)
    outcome = assistant_for('system_role = "developer"\n').ask("hi")
    assert outcome.answer == "Hi!"
    assert [body["messages"][0]["role"] for body in server.requests] == ["developer", "system"]


def test_a_tool_calls_reasoning_goes_back_within_the_turn_as_deepseek_documents(
    server, assistant_for
):
    from fake_openai import tool_call

    server.script(
        completion(None, [tool_call(*ADD)], reasoning="plan: use the calculator"),
        completion("It is 89.", reasoning="the tool said 89"),
        completion("Hello!"),
    )
    assistant = assistant_for()
    assistant.ask("what is 40 + 49?", session="d")
    assistant.ask("hi", session="d")
    within = [m for m in server.requests[1]["messages"] if m.get("tool_calls")]
    assert within[0]["reasoning_content"] == "plan: use the calculator"
    assert "the tool said 89" not in json.dumps(server.requests[2])


def test_a_server_refusing_reasoning_content_gets_it_no_more(server, assistant_for):
    from fake_openai import tool_call

    def strict(body: dict[str, Any]) -> Any:
        if any("reasoning_content" in m for m in body["messages"]):
            return http_error(400, "messages.2.reasoning_content: Extra inputs are not permitted")
        return completion("It is 89.")

    server.script(completion(None, [tool_call(*ADD)], reasoning="plan"), strict, strict)
    outcome = assistant_for().ask("what is 40 + 49?")
    assert outcome.answer == "It is 89." and len(server.requests) == 3
