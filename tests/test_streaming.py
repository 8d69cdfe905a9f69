"""Issue 12, items 4-5: a turn shows itself as it happens, and memory work waits for the
answer. The loop's events (assistant/events.py) to an observer; the daemon's NDJSON
stream (`POST /ask/stream`); `assistant ask`/`chat` on a pseudo-terminal (tokens, tool
activity, elapsed time) versus piped and `--json`; Ctrl-C; and the ordering of the
answer before end-of-session extraction, in-process and in the daemon. Real processes,
the real `openai` SDK against tests/fake_openai.py, a real daemon; no timing assertions
(waits poll with generous deadlines)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polling
import pytest
from clirun import run_cli
from fake_openai import FakeOpenAI, Profile, calls, completion, delay
from ptyrun import TerminalRun, cli_env
from test_daemon import DaemonProcess, make_vault

from assistant.events import (
    RequestStarted,
    TextDelta,
    ToolFinished,
    ToolStarted,
    TurnStopped,
    as_dict,
    from_dict,
)
from assistant.live import TurnView
from assistant.remembering import EXTRACTION_PROMPT
from assistant.testing import ScriptedModel, streamed, text
from assistant.testing import calls as scripted_calls

WAIT_S = 120.0
ORDER_WAIT_S = 30.0  # how long an extraction request waits to see the answer out first


def _is_extraction(body: dict[str, Any]) -> bool:
    return body["messages"][0]["content"] == EXTRACTION_PROMPT


class AnswerFirst:
    """A scripted reply for the extraction request that first waits (up to a cap) for
    `answered`: the answer must be out before extraction runs. Old behaviour (extraction
    before the answer) leaves it waiting to the cap, and `waited_in_vain` says so."""

    def __init__(self) -> None:
        self.answered = threading.Event()
        self.arrived = threading.Event()
        self.waited_in_vain: bool | None = None
        self.was_extraction: bool | None = None

    def __call__(self, body: dict[str, Any]) -> Any:
        self.was_extraction = _is_extraction(body)
        self.arrived.set()
        self.waited_in_vain = not self.answered.wait(ORDER_WAIT_S)
        return completion('{"conclusions": []}')


# -- the loop's events -------------------------------------------------------------------------


def test_the_loop_reports_each_step_as_it_happens(make_assistant) -> None:
    model = ScriptedModel(
        [scripted_calls(("calc_evaluate", {"expression": "15+27"})), streamed("15+27", " = 42")]
    )
    seen: list[Any] = []
    outcome = make_assistant(model=model).ask("what is 15+27?", observer=seen.append)

    assert [as_dict(event)["event"] for event in seen] == [
        "request",
        "tool_started",
        "tool_finished",
        "request",
        "delta",
        "delta",
        "stop",
    ]
    assert seen[0] == RequestStarted(0, seen[0].tools) and seen[0].tools >= 1
    assert seen[1] == ToolStarted("calc_evaluate", "call_1")
    assert isinstance(seen[2], ToolFinished) and seen[2].status == "ok" and seen[2].ms >= 0
    assert seen[4:6] == [TextDelta("15+27", 1), TextDelta(" = 42", 1)]
    assert seen[6] == TurnStopped("final", "15+27 = 42", None)
    assert outcome.answer == "15+27 = 42"


def test_a_corrected_answer_is_shown_as_a_correction(make_assistant) -> None:
    model = ScriptedModel(
        [
            scripted_calls(("calc_evaluate", {"expression": "15+27"})),
            streamed("15+27 = ", "43"),  # contradicts the tool's 42 (L16)
            streamed("15+27 = ", "42"),
        ]
    )
    seen: list[Any] = []
    outcome = make_assistant(model=model).ask("what is 15+27?", observer=seen.append)
    assert outcome.answer == "15+27 = 42"
    purposes = [e.purpose for e in seen if isinstance(e, RequestStarted)]
    assert purposes == ["turn", "turn", "check"]

    out, err = io.StringIO(), io.StringIO()
    view = TurnView(tokens=True, spinner=False, verbose=False, out=out, err=err)
    for event in seen:
        view(event)
    view.close()
    assert out.getvalue() == "15+27 = 43\n15+27 = 42\n"
    assert "contradicts a tool result" in err.getvalue() and view.shown


def test_an_echoed_runtime_note_is_never_streamed(make_assistant) -> None:
    model = ScriptedModel(
        [
            scripted_calls(("calc_evaluate", {"expression": "40+49"})),
            streamed(
                "[runtime note] Tools are no longer ",
                "available in this turn.\n",
                "The sum is ",
                "89.",
            ),
        ]
    )
    seen: list[Any] = []
    outcome = make_assistant(model=model, max_requests=2).ask("40+49?", observer=seen.append)
    assert outcome.stop_reason.value == "max_requests" and outcome.answer == "The sum is 89."
    shown = "".join(e.text for e in seen if isinstance(e, TextDelta))
    assert shown == "The sum is 89." and "runtime note" not in shown
    assert [e.purpose for e in seen if isinstance(e, RequestStarted)] == ["turn", "wrap_up"]


def test_an_answer_that_differs_from_the_streamed_text_is_printed_whole() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = TurnView(tokens=True, spinner=False, verbose=False, out=out, err=err)
    for event in (
        RequestStarted(0, 3),
        TextDelta("partial", 0),
        TurnStopped("final", "something else entirely"),
    ):
        view(event)
    assert not view.shown  # the CLI prints the stored answer after this
    assert out.getvalue() == "partial\n" and "revised" in err.getvalue()


def test_what_the_loop_adds_to_a_streamed_answer_is_printed_after_it() -> None:
    out, err = io.StringIO(), io.StringIO()
    view = TurnView(tokens=True, spinner=False, verbose=False, out=out, err=err)
    note = "[The answer was cut off: the model reached its token limit.]"
    for event in (TextDelta("A long answ", 0), TurnStopped("final", f"A long answ\n\n{note}")):
        view(event)
    assert view.shown and out.getvalue() == f"A long answ\n\n{note}\n"
    assert "revised" not in err.getvalue()


def test_a_model_without_on_delta_still_works_when_nobody_observes(make_assistant) -> None:
    class Plain:  # the protocol as it was before streaming: no on_delta parameter
        name = "plain"

        def complete(self, messages: Any, tools: Any, *, temperature: float, timeout_s: float):
            return text("fine")

    assert make_assistant(model=Plain()).ask("hi").answer == "fine"


def test_events_cross_the_wire_and_unknown_kinds_are_skipped() -> None:
    for event in (
        RequestStarted(2, 15),
        TextDelta("héllo", 0),
        ToolStarted("vault_search", "c1"),
        ToolFinished("vault_search", "c1", "ok", 12.5),
        TurnStopped("max_requests", "partial", "the turn reached its limit"),
    ):
        assert from_dict(json.loads(json.dumps(as_dict(event)))) == event
    assert from_dict({"event": "something_new", "x": 1}) is None
    assert from_dict({"event": "delta"}) is None  # a line missing its fields


# -- the CLI on a terminal and piped (offline planner) -----------------------------------------


def test_ask_on_a_terminal_streams_the_answer_and_shows_tool_activity(tmp_path: Path) -> None:
    run = TerminalRun(cli_env(tmp_path), "ask", "15加27等于多少")
    try:
        assert run.finish() == 0, run.stderr
    finally:
        run.kill()
    assert run.stdout.count("15+27 = 42") == 1, run.stdout  # streamed, not printed again
    assert "running calc_evaluate…" in run.stderr
    assert " s)" in run.stderr  # the elapsed time


def test_piped_and_json_output_stay_as_they_were(tmp_path: Path) -> None:
    piped = run_cli(tmp_path, "ask", "15加27等于多少")
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, "15+27 = 42。\n", "")

    run = TerminalRun(cli_env(tmp_path), "ask", "--json", "15加27等于多少")
    try:
        assert run.finish() == 0, run.stderr
    finally:
        run.kill()
    data = json.loads(run.stdout)  # exactly one JSON object, no streamed text around it
    assert data["answer"] == "15+27 = 42。" and data["stop_reason"] == "final"
    assert "running" not in run.stderr


def test_verbose_shows_requests_and_tools_even_when_piped(tmp_path: Path) -> None:
    done = run_cli(tmp_path, "-v", "ask", "15加27等于多少")
    assert done.returncode == 0 and done.stdout == "15+27 = 42。\n"
    lines = done.stderr.splitlines()
    assert "request 1 to the model" in lines[0]
    assert "running calc_evaluate…" in lines and "calc_evaluate: ok" in done.stderr
    assert any(line.startswith("request 2 to the model") for line in lines)


def test_chat_on_a_terminal_streams_each_answer_once(tmp_path: Path) -> None:
    run = TerminalRun(cli_env(tmp_path), "chat", stdin=subprocess.PIPE)
    try:
        assert run.proc.stdin is not None
        run.proc.stdin.write("15加27等于多少\n再加 8 呢\n".encode())
        run.proc.stdin.close()
        assert run.finish() == 0, run.stderr
    finally:
        run.kill()
    assert run.stdout.count("15+27 = 42") == 1 and run.stdout.count("42+8 = 50") == 1


def test_ctrl_c_leaves_chat_with_130(tmp_path: Path) -> None:
    run = TerminalRun(cli_env(tmp_path), "chat", stdin=subprocess.PIPE)
    try:
        run.wait_for("empty line or Ctrl-D to leave", on="stderr")
        run.interrupt()
        assert run.finish() == 130
    finally:
        run.kill()
    assert "Traceback" not in run.stderr


# -- against the fake endpoint, in this process ------------------------------------------------


def _endpoint_env(fake: FakeOpenAI) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "test",
        "ASSISTANT_MODEL": "fake-model",
    }


def test_a_one_shot_ask_prints_its_answer_before_extraction_runs(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    extraction = AnswerFirst()
    fake_openai.script(completion("First the answer."), extraction)
    child = subprocess.Popen(
        [sys.executable, "-m", "assistant", "ask", "my cat is called Miso"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(tmp_path, _endpoint_env(fake_openai)),
    )
    try:
        assert child.stdout is not None
        first_line = child.stdout.readline()  # what a pipe reader sees, when it sees it
        extraction.answered.set()
        assert first_line == "First the answer.\n"
        assert child.wait(timeout=WAIT_S) == 0, child.stderr.read() if child.stderr else ""
    finally:
        child.kill()
        child.wait()
    assert extraction.was_extraction, fake_openai.requests[-1]["messages"][0]
    assert extraction.waited_in_vain is False  # the answer was out before extraction asked


def test_tokens_reach_the_terminal_while_the_endpoint_is_still_sending(tmp_path: Path) -> None:
    server = FakeOpenAI(Profile(piece_chars=16, chunk_gap_s=2.0))  # 2 s between chunks
    try:
        server.script(completion("The first piece, and then the rest."))
        env = cli_env(tmp_path, _endpoint_env(server))
        run = TerminalRun(env, "ask", "--session", "s1", "go on")
        try:
            run.wait_for("The first piece,")
            partial = run.stdout
            assert run.finish() == 0, run.stderr
        finally:
            run.kill()
    finally:
        server.close()
    assert "the rest." not in partial  # shown while the endpoint still had more to send
    assert "thinking…" in run.stderr  # the spinner, until the first token
    assert run.stdout.count("The first piece, and then the rest.") == 1
    assert server.requests[0]["stream"] is True


def test_verbose_shows_the_request_while_the_model_is_still_working(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    shown = threading.Event()
    waited_in_vain: list[bool] = []

    def reply_once_shown(body: dict[str, Any]) -> Any:
        waited_in_vain.append(not shown.wait(ORDER_WAIT_S))
        return completion("done")

    fake_openai.script(reply_once_shown)
    env = cli_env(tmp_path, _endpoint_env(fake_openai))
    run = TerminalRun(env, "-v", "ask", "--session", "v1", "work", stderr_tty=False)
    try:
        run.wait_for("request 1 to the model", on="stderr")
        shown.set()
        assert run.finish() == 0, run.stderr
    finally:
        run.kill()
    assert waited_in_vain == [False]  # the line was there while the request was open
    assert "done" in run.stdout


def test_ctrl_c_exits_130_with_one_line(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(delay(60, completion("never shown")))
    run = TerminalRun(cli_env(tmp_path, _endpoint_env(fake_openai)), "ask", "take your time")
    try:
        polling.wait_for(lambda: fake_openai.requests, "the model request", WAIT_S)
        run.interrupt()
        assert run.finish() == 130
    finally:
        run.kill()
    assert "interrupted" in run.stderr and "Traceback" not in run.stderr
    assert "never shown" not in run.stdout


def test_a_failing_endpoint_is_one_line_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[model]\nmax_retries = 0\n", encoding="utf-8")
    env = {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "ASSISTANT_MODEL": "m"}
    run = TerminalRun(cli_env(tmp_path, env), "ask", "hello")
    try:
        assert run.finish() == 1
    finally:
        run.kill()
    errors = [line for line in run.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "127.0.0.1:9" in errors[0], run.stderr
    assert "Traceback" not in run.stderr and "validation error" not in run.stderr


# -- through the daemon -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def endpoint() -> Iterator[FakeOpenAI]:
    server = FakeOpenAI()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory, endpoint: FakeOpenAI) -> Iterator[Any]:
    root = tmp_path_factory.mktemp("streaming")
    home = root / "home"
    home.mkdir()
    process = DaemonProcess(home, make_vault(root / "vault"), _endpoint_env(endpoint))
    try:
        yield process.start()
    finally:
        process.close()


def _stream(daemon: DaemonProcess, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
    request = urllib.request.Request(
        daemon.api["url"] + "/ask/stream",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=WAIT_S) as response:
        assert response.headers["Content-Type"].startswith("application/x-ndjson")
        for line in response:
            yield json.loads(line)


def test_the_daemon_streams_a_turn_as_ndjson_then_its_outcome(
    daemon: DaemonProcess, endpoint: FakeOpenAI
) -> None:
    endpoint.script(calls(("calc_evaluate", {"expression": "6*7"})), completion("6*7 = 42"))
    lines = list(_stream(daemon, {"text": "what is 6*7?", "session": "nd1"}))

    kinds = [line["event"] for line in lines]
    assert [k for n, k in enumerate(kinds) if k != "delta" or kinds[n - 1] != "delta"] == [
        "request",
        "tool_started",
        "tool_finished",
        "request",
        "delta",
        "stop",
        "outcome",
    ]
    assert kinds.count("delta") > 1  # the endpoint streamed it in pieces; so did we
    assert lines[1]["name"] == "calc_evaluate" and lines[2]["status"] == "ok"
    assert "".join(line["text"] for line in lines if line["event"] == "delta") == "6*7 = 42"
    outcome = lines[-1]["outcome"]
    assert outcome["served_by"] == "daemon" and outcome["answer"] == "6*7 = 42"
    assert outcome["tool_calls"][0]["result"]["value"] == 42 or "42" in json.dumps(
        outcome["tool_calls"][0]["result"]
    )

    [refused] = list(_stream(daemon, {"text": "   "}))  # a bad request is one error line
    assert refused["event"] == "error" and refused["error"] == "EMPTY"
    assert refused["status"] == 400 and "empty" in refused["detail"]

    endpoint.script(completion("still here"))
    old = daemon.cli_json("ask", "--session", "nd1", "and the old endpoint?")  # POST /ask
    assert old["answer"] == "still here" and old["served_by"] == "daemon"


def test_the_daemon_answers_before_it_extracts(daemon: DaemonProcess, endpoint: FakeOpenAI) -> None:
    extraction = AnswerFirst()
    endpoint.script(completion("Answer first, memory later."), extraction)
    status, answer = _post(daemon, "/ask", {"text": "I moved to Lyon"})  # a one-shot session
    extraction.answered.set()
    assert status == 200 and answer["answer"] == "Answer first, memory later."
    polling.wait_for(lambda: extraction.waited_in_vain is not None, "the extraction", WAIT_S)
    assert extraction.was_extraction and extraction.waited_in_vain is False


def test_ask_through_the_daemon_streams_to_the_terminal_and_ctrl_c_cancels(
    daemon: DaemonProcess, endpoint: FakeOpenAI
) -> None:
    extraction = AnswerFirst()
    endpoint.script(completion("Streamed through the daemon."), extraction)
    run = TerminalRun(daemon.env, "ask", "stream it")
    try:
        run.wait_for("Streamed through the daemon.")
        extraction.answered.set()
        assert run.finish() == 0, run.stderr
    finally:
        run.kill()
    assert run.stdout.count("Streamed through the daemon.") == 1
    polling.wait_for(lambda: extraction.waited_in_vain is not None, "the extraction", WAIT_S)
    assert extraction.waited_in_vain is False

    before = len(endpoint.requests)
    endpoint.script(delay(3, calls(("calc_evaluate", {"expression": "1+1"}))))
    run = TerminalRun(daemon.env, "ask", "--session", "cc1", "slow one")
    try:
        polling.wait_for(lambda: len(endpoint.requests) > before, "the model request", WAIT_S)
        run.interrupt()
        assert run.finish() == 130
    finally:
        run.kill()
    assert "Traceback" not in run.stderr

    def stopped() -> Any:
        found = daemon.cli("trace", "last", "--session", "cc1", "--json")
        return json.loads(found.stdout) if found.returncode == 0 else None

    trace = polling.wait_for(
        lambda: (t := stopped()) and t.get("stop_reason") and t, "the turn to end", WAIT_S
    )
    assert trace["stop_reason"] == "cancelled"
    assert len(endpoint.requests) == before + 1  # nothing more was asked after the cancel


def test_a_turn_the_daemon_cancels_exits_non_zero(
    daemon: DaemonProcess, endpoint: FakeOpenAI
) -> None:
    """Last of the daemon tests: it stops the daemon under a running turn."""
    before = len(endpoint.requests)
    endpoint.script(delay(3, calls(("calc_evaluate", {"expression": "2+2"}))))
    run = TerminalRun(daemon.env, "ask", "--session", "sd1", "slow again")
    try:
        polling.wait_for(lambda: len(endpoint.requests) > before, "the model request", WAIT_S)
        daemon.terminate()  # SIGTERM: running turns end `cancelled`
        assert run.finish() == 1, (run.stdout, run.stderr)
    finally:
        run.kill()
    assert "stopped early (cancelled)" in run.stderr
    assert "Traceback" not in run.stderr


def _post(daemon: DaemonProcess, path: str, body: dict[str, Any]) -> tuple[int, Any]:
    request = urllib.request.Request(
        daemon.api["url"] + path,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {daemon.token}", "Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(request, timeout=WAIT_S) as response:
        return response.status, json.loads(response.read())


def test_eval_shows_progress_per_case(tmp_path: Path) -> None:
    cases = tmp_path / "cases.json"
    cases.write_text(
        json.dumps(
            {
                "cases": [
                    {
                        "id": "add",
                        "category": "calc",
                        "input": "15加27等于多少",
                        "expect_number": 42,
                    },
                    {"id": "pow", "category": "calc", "input": "2的10次方", "expect_number": 1024},
                ]
            },
            ensure_ascii=False,
        ),
        encoding="utf-8",
    )
    done = run_cli(tmp_path / "home", "-v", "eval", str(cases))
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("[")]
    assert progress[0].startswith("[1/2] passed") and progress[0].split()[2] == "add"
    assert progress[1].startswith("[2/2] passed") and " s)" in progress[1]
