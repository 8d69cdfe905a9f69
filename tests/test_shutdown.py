"""Clean shutdown (issue 13, items 4 and 12): SIGTERM cancels a model request in flight
and records the turn as cancelled; a confirmed action runs through the work queue, so a
stop waits for it and its client gets the real result."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from fake_openai import FakeOpenAI, completion, delay
from test_daemon import WAIT_S, DaemonProcess, make_vault, wait_for

from assistant.client import published
from assistant.config import load_settings
from assistant.daemon.process import Daemon
from assistant.errors import CommandError
from assistant.testing import ScriptedModel, calls, text
from tools.base import ActionPreview, ToolArgs, ToolContext, tool


def _endpoint(fake: FakeOpenAI) -> dict[str, str]:
    return {
        "OPENAI_BASE_URL": fake.base_url,
        "OPENAI_API_KEY": "test",
        "ASSISTANT_MODEL": "fake-model",
    }


def test_sigterm_cancels_a_model_request_in_flight(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    fake_openai.script(delay(600, completion("this reply never arrives")))
    (tmp_path / "home").mkdir()
    daemon = DaemonProcess(
        tmp_path / "home", make_vault(tmp_path / "vault"), _endpoint(fake_openai)
    )
    daemon.start()
    asking = subprocess.Popen(
        [sys.executable, "-m", "assistant", "ask", "--session", "slow", "tell me a long story"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=daemon.env,
    )
    try:
        wait_for(lambda: fake_openai.requests, "the ask's model request")
        # old code: waited for the request (then the 30 s shutdown timeout) and the client
        # got "Internal Server Error"; the endpoint here would answer in 600 s
        assert daemon.terminate(timeout_s=WAIT_S) == 0, daemon.stderr()
        out, err = asking.communicate(timeout=WAIT_S)
    finally:
        daemon.close()
        if asking.poll() is None:
            asking.kill()
            asking.wait()
    assert "Internal Server Error" not in out + err
    assert "cancelled" in err, err  # note: stopped early (cancelled): ...
    assert "Traceback" not in daemon.stderr()
    assert "Traceback" not in (daemon.home / "daemon.log").read_text(encoding="utf-8")
    turn = daemon.cli_json("trace", "last", "--session", "slow")  # in-process now
    assert turn["stop_reason"] == "cancelled"


# -- a confirmation at shutdown (in-process daemon, real control API) -----------------------


class MoveArgs(ToolArgs):
    name: str


def test_a_stop_waits_for_a_confirmed_action_and_its_client_gets_the_result(
    tmp_path: Path,
) -> None:
    entered, moved = threading.Event(), []

    def preview(args: MoveArgs, context: ToolContext) -> ActionPreview:
        return ActionPreview(summary=f"move {args.name} and rewrite its links")

    @tool(read_only=False, dangerous=True, preview=preview)
    def notes_move(args: MoveArgs) -> dict[str, Any]:
        """Move a note, rewriting every link to it (slow: many files)."""
        entered.set()
        time.sleep(7)  # longer than the control API's 5 s graceful stop
        moved.append(args.name)
        return {"moved": args.name}

    model = ScriptedModel([calls(("notes_move", {"name": "Plan.md"})), text("Confirm?")])
    daemon = Daemon(load_settings(), model=model, tools=[notes_move], log_file=False)
    daemon.start()
    try:
        outcome = daemon.run_turn("move Plan.md", session="m", end_session=False)
        action_id = outcome.tool_calls[0].result["action_id"]
        client = published(daemon.settings.home)
        assert client is not None
        answer: dict[str, Any] = {}

        def confirm() -> None:
            try:
                answer["ok"] = client.call("confirm", {"id": action_id})
            except CommandError as exc:
                answer["error"] = f"{exc.code}: {exc}"

        confirming = threading.Thread(target=confirm)
        confirming.start()
        assert entered.wait(WAIT_S)
        daemon.stop()  # what SIGTERM does
        confirming.join(WAIT_S)
    finally:
        daemon.stop()
    assert moved == ["Plan.md"]
    assert "error" not in answer, answer["error"]  # old code: cut off (or HTTP 500)
    assert answer["ok"]["status"] == "confirmed" and answer["ok"]["result"] == {"moved": "Plan.md"}


def test_a_confirmation_that_has_not_started_at_shutdown_stays_pending(tmp_path: Path) -> None:
    ran: list[str] = []

    @tool(read_only=False, dangerous=True)
    def notes_move(args: MoveArgs) -> dict[str, Any]:
        """Move a note."""
        ran.append(args.name)
        return {"moved": args.name}

    model = ScriptedModel([calls(("notes_move", {"name": "Plan.md"})), text("Confirm?")])
    daemon = Daemon(load_settings(), model=model, tools=[notes_move], log_file=False)
    daemon.start()
    try:
        outcome = daemon.run_turn("move Plan.md", session="m", end_session=False)
        action_id = outcome.tool_calls[0].result["action_id"]
        assert daemon.queue is not None
        daemon.queue.close()  # shutdown has begun
        with pytest.raises(Exception, match="shutting down") as refused:
            daemon.confirm_action(action_id)
        assert "still pending" in str(refused.value) or "no new work" in str(refused.value)
        assert [a.id for a in daemon.assistant.pending.list()] == [action_id]
    finally:
        daemon.stop()
    assert ran == []
