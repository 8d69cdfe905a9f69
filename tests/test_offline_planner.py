"""The offline planner (SPEC O2) through the real loop, stores and CLI, with no network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from clirun import run_cli

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.outcome import StopReason


@pytest.fixture
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Assistant:
    monkeypatch.setenv("ASSISTANT_HOME", str(tmp_path))
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ASSISTANT_MODEL", "ASSISTANT_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    assistant = Assistant(load_settings())
    yield assistant
    assistant.close()


@pytest.mark.parametrize(
    ("question", "value"),
    [
        ("15加27等于多少", "42"),
        ("what is (12*5)+3?", "63"),
        ("2的10次方", "1024"),
        ("calculate 7 times 6", "42"),
        ("１２＋３０等于几？", "42"),
        ("你会编程吗？顺便算一下 12*8", "96"),
    ],
)
def test_arithmetic_is_answered_through_the_calculator(
    offline: Assistant, question: str, value: str
) -> None:
    outcome = offline.ask(question)
    assert outcome.stop_reason is StopReason.FINAL
    assert [call.name for call in outcome.tool_calls] == ["calc_evaluate"]
    assert value in outcome.answer


def test_division_by_zero_is_explained_not_invented(offline: Assistant) -> None:
    outcome = offline.ask("10除以0呢")
    assert outcome.tool_calls[0].status == "DIVISION_BY_ZERO"
    assert "除数不能为零" in outcome.answer


@pytest.mark.parametrize("greeting", ["你好", "hello", "Hi!", "你是谁", "who are you?"])
def test_small_talk_makes_no_tool_call(offline: Assistant, greeting: str) -> None:
    outcome = offline.ask(greeting)
    assert outcome.stop_reason is StopReason.FINAL
    assert outcome.tool_calls == []
    assert outcome.requests == 1


def test_follow_up_in_the_same_session(offline: Assistant) -> None:
    offline.ask("15加27等于多少", session="s1")
    outcome = offline.ask("如果换成 20 加 30 呢", session="s1")
    assert "50" in outcome.answer
    again = offline.ask("再乘以2呢", session="s1")
    assert again.tool_calls[0].arguments == {"expression": "50*2"}
    assert "100" in again.answer


def test_refers_back_only_within_its_own_session(offline: Assistant) -> None:
    offline.ask("15加27等于多少", session="s1")
    outcome = offline.ask("再乘以2呢", session="other")
    assert outcome.tool_calls == []
    assert "offline" in outcome.answer or "离线" in outcome.answer


@pytest.mark.parametrize("question", ["明天会下雨吗", "帮我算算运气好不好", "Write me a poem"])
def test_outside_its_grammar_it_says_what_it_can_do(offline: Assistant, question: str) -> None:
    outcome = offline.ask(question)
    assert outcome.tool_calls == []
    assert "OPENAI_BASE_URL" in outcome.answer
    assert "15加27等于多少" in outcome.answer


def test_dates_and_phone_numbers_are_not_arithmetic(offline: Assistant) -> None:
    assert offline.ask("what happened on 2026-11-29?").tool_calls == []
    called = [call.name for call in offline.ask("my number is 138-1234-5678").tool_calls]
    assert "calc_evaluate" not in called


def _cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(home, *args)


def test_cli_ask_prints_only_the_answer(tmp_path: Path) -> None:
    result = _cli(tmp_path, "ask", "15加27等于多少")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "15+27 = 42。"


def test_cli_ask_json_and_session_resume_across_processes(tmp_path: Path) -> None:
    first = _cli(tmp_path, "ask", "--json", "--session", "work", "15加27等于多少")
    data = json.loads(first.stdout)
    assert {"answer", "stop_reason", "session", "turn_id", "tool_calls"} <= data.keys()
    assert data["session"] == "work" and data["stop_reason"] == "final"
    assert data["tool_calls"][0]["tool"] == "calc_evaluate"
    second = _cli(tmp_path, "ask", "--session", "work", "再加 8 呢")
    assert second.stdout.strip() == "42+8 = 50。"


def test_cli_trace_last_shows_the_turn(tmp_path: Path) -> None:
    _cli(tmp_path, "ask", "what is (12*5)+3?")
    text = _cli(tmp_path, "trace", "last")
    assert text.returncode == 0
    assert "calc_evaluate" in text.stdout and "63" in text.stdout and "stop: final" in text.stdout
    data = json.loads(_cli(tmp_path, "trace", "last", "--json").stdout)
    assert data["tool_calls"][0]["result"] == {"expression": "(12*5)+3", "value": 63}
    assert len(data["requests"]) == 2


def test_cli_trace_with_nothing_recorded_is_a_clear_error(tmp_path: Path) -> None:
    result = _cli(tmp_path, "trace", "last")
    assert result.returncode != 0
    assert "no turn has been recorded" in result.stderr
    assert result.stdout == ""


def test_cli_chat_keeps_the_conversation(tmp_path: Path) -> None:
    env = {**os.environ, "ASSISTANT_HOME": str(tmp_path)}
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "ASSISTANT_MODEL"):
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "chat"],
        input="15加27等于多少\n如果换成 20 加 30 呢\n\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stdout.splitlines() if "=" in line]
    assert lines[0].endswith("42。") and lines[1].endswith("50。")


def test_cli_version() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "--version"], capture_output=True, text=True
    )
    assert result.returncode == 0 and result.stdout.startswith("assistant ")


def test_debug_switch_prints_each_request_with_its_pairing(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ASSISTANT_"))}
    env.update(ASSISTANT_HOME=str(tmp_path), ASSISTANT_DEBUG="1")
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", "15加27等于多少"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.stdout.strip() == "15+27 = 42。", "debug output stays off stdout"
    assert "--- request 1:" in result.stderr and "--- request 2:" in result.stderr
    assert "-> call_offline_1 calc_evaluate" in result.stderr
    assert "tool (answers call_offline_1)" in result.stderr


def test_where_do_i_live_is_answered_with_the_current_value(offline: Assistant) -> None:
    offline.ask("remember that I live in Munich", session="a")
    offline.ask("remember that I moved to Hamburg last spring", session="a")
    outcome = offline.ask("where do I live?", session="b")
    assert [call.name for call in outcome.tool_calls] == ["memory_recall"]
    lines = outcome.answer.splitlines()
    assert lines[0] == "Here is what I have:" and "Hamburg" in lines[1]
    assert "Munich" not in outcome.answer.split("\n", 2)[1]
    offline.ask("记住我住在成都", session="c")
    chinese = offline.ask("我现在住哪里？", session="d").answer.splitlines()
    assert chinese[0] == "我记得：" and "成都" in chinese[1]
