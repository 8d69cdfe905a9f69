"""What the last real-server run still found (issue 12, docs/COMPATIBILITY.md): a second
request of ours in flight at a single-slot server, a first-byte wait cut by the chunk-gap
timeout, and the template's tool-call syntax shown as the answer. Through the real
`openai` SDK over HTTP to the fake server, which counts the requests it answers at once."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fake_openai import FakeOpenAI, calls, completion, delay

from assistant.app import Assistant
from assistant.config import ModelSettings, load_settings
from assistant.errors import ModelTimeout
from assistant.openai_model import OpenAIChatModel
from assistant.outcome import StopReason
from tools.calc import calc_evaluate

WAIT_S = 10.0
ASK = [{"role": "user", "content": "what is 40 + 49?"}]


def wait_for(condition: Any, what: str) -> None:
    end = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture
def server(fake_endpoint, tmp_path):
    (tmp_path / "config.toml").write_text("[model]\nmax_retries = 0\n", encoding="utf-8")
    return fake_endpoint


def slow(text: str, seconds: float = 0.4) -> Any:
    return lambda body: delay(seconds, completion(text))


# -- 1. one request of ours in flight per endpoint ------------------------------------------


def test_memory_work_after_the_answer_and_the_next_turn_share_one_slot(server):
    assistant = Assistant(load_settings(), tools=[calc_evaluate])
    try:
        server.script(completion("I am a student in Lyon."))
        first = assistant.ask("I study in Lyon, remember that", session="s", settle=False)
        assert first.ok
        before = len(server.requests)

        def route(body: dict[str, Any]) -> Any:
            if body["messages"][-1].get("content") == "hello":
                return completion("Hello!")
            return delay(0.4, completion('{"conclusions": [], "summary": "a student"}'))

        server.script(*[route] * 8)
        memory = threading.Thread(
            target=assistant.after_turn, args=(first,), kwargs={"end_session": True}
        )
        memory.start()  # what `chat` runs after printing the answer
        wait_for(lambda: server.in_flight == 1, "the memory work's request")
        second = assistant.ask("hello", session="t")
        memory.join(WAIT_S)
    finally:
        assistant.close()
    assert len(server.requests) > before + 1  # the memory work did ask the model
    assert second.answer == "Hello!"
    assert server.most_in_flight == 1


def test_the_daemon_sends_one_request_at_a_time_by_default(server):
    from assistant.daemon.process import Daemon

    daemon = Daemon(load_settings(), log_file=False)
    daemon.start()
    try:
        server.script(*[slow("ok", 0.3)] * 3)
        model = daemon.assistant.model
        workers = [
            threading.Thread(
                target=model.complete,
                args=(ASK, None),
                kwargs={"temperature": 0, "timeout_s": WAIT_S},
            )
            for _ in range(3)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(WAIT_S)
    finally:
        daemon.stop()
    assert len(server.requests) == 3
    assert server.most_in_flight == 1


def test_a_cloud_endpoint_can_have_more_in_flight(server, tmp_path):
    (tmp_path / "config.toml").write_text("[model]\nmax_in_flight = 3\n", encoding="utf-8")
    assistant = Assistant(load_settings(), tools=[calc_evaluate])
    try:
        barrier = threading.Barrier(3, timeout=WAIT_S)

        def answer(body: dict[str, Any]) -> Any:
            barrier.wait()  # breaks unless three are in flight together
            return completion("ok")

        server.script(answer, answer, answer)
        workers = [
            threading.Thread(
                target=assistant.model.complete,
                args=(ASK, None),
                kwargs={"temperature": 0, "timeout_s": WAIT_S},
            )
            for _ in range(3)
        ]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(WAIT_S)
    finally:
        assistant.close()
    assert server.most_in_flight == 3


def test_the_wait_for_the_slot_counts_against_the_callers_budget(server):
    from assistant.gate import GatedModel

    server.script(slow("the memory work's reply", 1.5), completion("never sent"))
    model = GatedModel(model_for(server), 1)
    holder = threading.Thread(
        target=model.complete, args=(ASK, None), kwargs={"temperature": 0, "timeout_s": WAIT_S}
    )
    holder.start()
    wait_for(lambda: server.in_flight == 1, "the first request")
    with pytest.raises(ModelTimeout, match="max_in_flight"):
        model.complete(ASK, None, temperature=0, timeout_s=0.3)
    holder.join(WAIT_S)
    assert len(server.requests) == 1  # the turn out of time sent nothing


# -- 2. the first byte has its own bound ----------------------------------------------------


def model_for(fake: FakeOpenAI, **settings: Any) -> OpenAIChatModel:
    return OpenAIChatModel(
        ModelSettings(base_url=fake.base_url, api_key="test", name="fake-model", **settings)
    )


def test_a_slow_first_byte_is_waited_for_within_the_turns_budget(server):
    # llama-cpp-python computes an unstreamed tool reply whole before sending a byte
    server.script(delay(1.2, calls(("calc_evaluate", {"expression": "40 + 49"}))))
    model = model_for(server, timeout_s=0.4, stream=False)
    reply = model.complete(ASK, None, temperature=0, timeout_s=30)
    assert reply.tool_calls and reply.tool_calls[0].name == "calc_evaluate"
    assert len(server.requests) == 1


def test_a_streams_first_byte_too_and_then_the_gap_between_chunks_is_the_liveness(server):
    server.script(delay(1.2, completion("slow to start, then fine")))
    model = model_for(server, timeout_s=0.4)
    assert model.complete(ASK, None, temperature=0, timeout_s=30).content.startswith("slow")
    server.profile.chunk_gap_s = 1.5  # silent for longer than timeout_s mid-answer
    server.script(completion("one two three four"), completion("never asked"))
    with pytest.raises(ModelTimeout, match="middle of its answer"):
        model.complete(ASK, None, temperature=0, timeout_s=30)
    assert len(server.requests) == 2  # the timed-out generation is not re-sent


def test_first_byte_timeout_s_bounds_the_first_byte_and_is_not_re_sent(server):
    server.script(delay(2.0, completion("too late")), completion("never asked"))
    model = model_for(server, timeout_s=5, first_byte_timeout_s=0.3, max_retries=3)
    with pytest.raises(ModelTimeout, match="first byte"):
        model.complete(ASK, None, temperature=0, timeout_s=30)
    assert len(server.requests) == 1


# -- 3. the template's tool-call syntax is never the answer ---------------------------------

ADD = ("calc_evaluate", {"expression": "40 + 49"})
LEAKED = [
    'functions.calc_evaluate:\n{ "expression": "40 + 49" }',  # chatml-function-calling
    '<tool_call>\n{"name": "calc_evaluate", "arguments": {"expression": "40 + 49"}}\n</tool_call>',
    '{"name": "calc_evaluate", "arguments": {"expression": "40 + 49"}}',
    'calc_evaluate\n{"expression": "40 + 49"}',
]


def streamed_ask(assistant: Assistant, text: str, **options: Any) -> tuple[Any, str]:
    from assistant.events import TextDelta

    seen: list[Any] = []
    outcome = assistant.ask(text, observer=seen.append, **options)
    return outcome, "".join(e.text for e in seen if isinstance(e, TextDelta))


@pytest.mark.parametrize("leak", LEAKED, ids=["functions", "tool_call_tag", "bare_json", "named"])
def test_a_wrap_up_written_as_a_tool_call_is_composed_from_the_tool_results(server, leak):
    (settings := load_settings()).loop.max_requests = 2
    assistant = Assistant(settings, tools=[calc_evaluate])
    try:
        server.script(calls(ADD), completion(leak))
        outcome, shown = streamed_ask(assistant, "what is 40 + 49?")
    finally:
        assistant.close()
    assert outcome.stop_reason is StopReason.MAX_REQUESTS
    assert "89" in outcome.answer
    for text in (outcome.answer, shown):
        assert "functions." not in text and '"expression"' not in text and "tool_call" not in text


def test_text_around_a_leaked_call_is_kept_and_streamed_without_it(server):
    assistant = Assistant(load_settings(), tools=[calc_evaluate])
    try:
        reply = 'functions.calc_evaluate:\n{ "expression": "40 + 49" }\n40 + 49 is 89.'
        server.script(calls(ADD), completion(reply))
        outcome, shown = streamed_ask(assistant, "what is 40 + 49?")
        stored = assistant.working.load(outcome.session)[-1]
    finally:
        assistant.close()
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.answer == "40 + 49 is 89."
    assert shown.strip() == "40 + 49 is 89."
    assert stored["content"] == "40 + 49 is 89."


def test_json_that_is_not_a_call_stays_in_the_answer(server):
    assistant = Assistant(load_settings(), tools=[calc_evaluate])
    try:
        reply = 'Here it is:\n{"city": "Lyon", "name": "Ada"}'
        server.script(completion(reply))
        outcome, shown = streamed_ask(assistant, "give me JSON for Ada in Lyon")
    finally:
        assistant.close()
    assert outcome.answer == reply and shown == reply
