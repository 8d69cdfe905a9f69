"""`OpenAIChatModel` streaming through the real `openai` SDK over HTTP (issue 12, item 4).

The fake server streams in the chunk shapes OpenAI, Ollama and vLLM document; each test
checks what a user of the model gets: the text as it arrives, the assembled tool calls,
the usage, and liveness measured as the gap between chunks.
"""

from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI, Profile, completion, tool_call

from assistant.config import ModelSettings
from assistant.errors import ModelTimeout
from assistant.openai_model import OpenAIChatModel

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calc_evaluate",
            "description": "Evaluate arithmetic.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]
ASK = [{"role": "user", "content": "what is 40 + 49?"}]


@pytest.fixture
def server(request):
    fake = FakeOpenAI(getattr(request, "param", None))
    yield fake
    fake.close()


def model_for(fake: FakeOpenAI, **settings) -> OpenAIChatModel:
    return OpenAIChatModel(
        ModelSettings(base_url=fake.base_url, api_key="test", name="fake-model", **settings)
    )


SHAPES = [Profile(shape="openai"), Profile(shape="ollama"), Profile(shape="vllm")]


@pytest.mark.parametrize("server", SHAPES, indirect=True, ids=["openai", "ollama", "vllm"])
def test_text_streams_piece_by_piece_in_every_documented_shape(server):
    server.script(
        completion("The answer is 89.", usage={"prompt_tokens": 31, "completion_tokens": 7})
    )
    pieces: list[str] = []
    reply = model_for(server).complete(ASK, None, temperature=0, on_delta=pieces.append)

    assert reply.content == "The answer is 89."
    assert len(pieces) > 1 and "".join(pieces) == "The answer is 89."
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (31, 7)
    assert not reply.usage.estimated  # from the final usage chunk
    sent = server.requests[0]
    assert sent["stream"] is True and sent["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("server", SHAPES, indirect=True, ids=["openai", "ollama", "vllm"])
def test_parallel_tool_calls_are_assembled_by_index_in_every_shape(server):
    server.script(
        completion(
            None,
            [
                tool_call("calc_evaluate", {"expression": "40 + 49"}, id="call_a"),
                tool_call("calc_evaluate", {"expression": "2 * 21"}, id="call_b"),
            ],
        )
    )
    pieces: list[str] = []
    reply = model_for(server).complete(ASK, TOOLS, temperature=0, on_delta=pieces.append)

    assert [(c.id, c.name) for c in reply.tool_calls] == [
        ("call_a", "calc_evaluate"),
        ("call_b", "calc_evaluate"),
    ]
    assert [json.loads(c.arguments) for c in reply.tool_calls] == [
        {"expression": "40 + 49"},
        {"expression": "2 * 21"},
    ]
    assert pieces == []  # tool-call arguments are never shown as answer text
    sent = server.requests[0]
    assert sent["tool_choice"] == "auto" and "parallel_tool_calls" not in sent


def test_a_think_block_split_across_chunks_never_reaches_the_answer(server):
    server.profile.piece_chars = 3  # "<think>" arrives as "<th", "ink", ">..."
    server.script(completion("<think>the user wants 89, fine</think>It is 89."))
    pieces: list[str] = []
    reply = model_for(server).complete(ASK, None, temperature=0, on_delta=pieces.append)

    assert reply.content == "It is 89."
    assert "".join(pieces) == "It is 89."
    assert reply.reasoning == "the user wants 89, fine"
    assert "think" not in json.dumps(reply.message.get("content"))


def test_reasoning_content_is_kept_apart_and_never_sent_back(server):
    server.script(completion("It is 89.", reasoning="40 plus 49 is 89"), completion("ok"))
    model = model_for(server)
    pieces: list[str] = []
    reply = model.complete(ASK, None, temperature=0, on_delta=pieces.append)
    assert reply.content == "It is 89." and "".join(pieces) == "It is 89."
    assert reply.reasoning == "40 plus 49 is 89"

    model.complete(
        [*ASK, reply.message, {"role": "user", "content": "thanks"}], None, temperature=0
    )
    resent = server.requests[1]["messages"][1]
    assert resent == {"role": "assistant", "content": "It is 89."}  # DeepSeek: no reasoning back


def test_the_legacy_function_call_field_becomes_a_tool_call(server):
    server.profile.legacy_function_call = True
    server.script(completion(None, [tool_call("calc_evaluate", {"expression": "40+49"})]))
    reply = model_for(server).complete(ASK, TOOLS, temperature=0)
    assert [(c.name, json.loads(c.arguments)) for c in reply.tool_calls] == [
        ("calc_evaluate", {"expression": "40+49"})
    ]


def test_the_legacy_function_call_field_also_works_unstreamed(server):
    server.profile.legacy_function_call = True
    server.script(completion(None, [tool_call("calc_evaluate", {"expression": "40+49"})]))
    reply = model_for(server, stream=False).complete(ASK, TOOLS, temperature=0)
    assert [c.name for c in reply.tool_calls] == ["calc_evaluate"]
    assert "stream" not in server.requests[0]


def test_html_escaped_quotes_in_arguments_are_unescaped(server):
    server.profile.html_escaped_arguments = True
    server.script(completion(None, [tool_call("calc_evaluate", {"expression": "40+49"})]))
    reply = model_for(server).complete(ASK, TOOLS, temperature=0)
    assert json.loads(reply.tool_calls[0].arguments) == {"expression": "40+49"}


def test_a_server_refusing_stream_options_is_asked_again_without_them_once(server):
    server.profile.reject_stream_options = True
    server.script(completion("first"), completion("second"))
    model = model_for(server)
    assert model.complete(ASK, None, temperature=0).content == "first"
    assert model.complete(ASK, None, temperature=0).content == "second"
    kinds = ["stream_options" in body for body in server.requests]
    assert kinds == [True, False, False]  # refused once, remembered for this endpoint


def test_liveness_is_the_gap_between_chunks_not_the_whole_answer(server):
    # 12 chunks 0.15 s apart: 1.8 s in all, far over a 0.6 s limit, but never silent that long
    server.profile.chunk_gap_s = 0.15
    server.script(completion("slow but alive, still going"))
    reply = model_for(server, timeout_s=0.6).complete(ASK, None, temperature=0, timeout_s=30)
    assert reply.content == "slow but alive, still going"


def test_a_silent_server_times_out_and_the_generation_is_not_resent(server):
    server.profile.first_chunk_delay_s = 2.0
    server.script(completion("too late"), completion("never asked"))
    model = model_for(server, timeout_s=0.3, max_retries=3)
    with pytest.raises(ModelTimeout):
        model.complete(ASK, None, temperature=0, timeout_s=30)
    assert len(server.requests) == 1


def test_a_streamed_answer_cut_by_the_token_limit_says_so(server):
    server.script(completion("The first half of", finish_reason="length"))
    reply = model_for(server, max_tokens=64).complete(ASK, None, temperature=0)
    assert reply.truncated and reply.content == "The first half of"
    assert server.requests[0]["max_tokens"] == 64


def test_the_daemon_throttle_passes_streamed_text_and_structured_requests_through(server):
    from assistant.daemon.workqueue import ThrottledModel

    server.script(completion("Streamed through the throttle."), completion('{"summary": "s"}'))
    throttled = ThrottledModel(model_for(server), limit=1)
    pieces: list[str] = []
    reply = throttled.complete(ASK, None, temperature=0, timeout_s=10, on_delta=pieces.append)
    assert "".join(pieces) == reply.content == "Streamed through the throttle."
    schema = {"type": "object", "properties": {"summary": {"type": "string"}}}
    assert throttled.complete_json(ASK, schema, name="summary").content == '{"summary": "s"}'


def test_a_refused_connection_is_retried_with_backoff(monkeypatch):
    import socket

    from assistant.errors import ModelUnavailable

    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pauses: list[float] = []
    monkeypatch.setattr("assistant.openai_model.time.sleep", pauses.append)
    model = OpenAIChatModel(
        ModelSettings(base_url=f"http://127.0.0.1:{port}/v1", api_key="t", name="m", max_retries=2)
    )
    with pytest.raises(ModelUnavailable):
        model.complete(ASK, None, temperature=0, timeout_s=30)
    assert len(pauses) == 2 and pauses[1] > pauses[0] * 1.2
