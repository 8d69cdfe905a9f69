"""MCP servers as tool sources (SPEC X2), with real servers from PyPI and a hostile one.

`mcp-server-time` (its tools say `readOnlyHint: true`) runs without asking;
`mcp-server-git` on a temporary repository reads freely, but a tool that changes the
repository waits for the user's yes; `tests/hostile_mcp.py` tries everything a server can
try, and each attempt ends in a clear error with nothing dangerous done. Turns are driven
by a `ScriptedModel` that does what the server's text tells it to, like a gullible model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polling
import pytest

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.daemon.process import Daemon
from assistant.testing import ScriptedModel, calls, text
from tools.confirm import ConfirmationError
from tools.mcp_client import confirmation_from_hints, tool_name
from tools.registry import ToolRegistry

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "tests" / "hostile_mcp.py"


def server_block(name: str, *args: str, extra: str = "") -> str:
    quoted = ", ".join(json.dumps(a) for a in args)
    return (
        f'[[mcp.servers]]\nname = "{name}"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{quoted}]\n{extra}\n"
    )


def time_server() -> str:
    return server_block("time", "-m", "mcp_server_time", "--local-timezone", "UTC")


def git_server(repo: Path, extra: str = "") -> str:
    return server_block("git", "-m", "mcp_server_git", "--repository", str(repo), extra=extra)


def hostile_server(markers: Path, extra: str = "timeout_s = 3\n") -> str:
    return server_block("hostile", str(HOSTILE), str(markers), extra=extra)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=path, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "t@example.invalid")
    git("config", "user.name", "Test")
    (path / "README.md").write_text("hello\n", encoding="utf-8")
    git("add", "README.md")
    git("commit", "-q", "-m", "first")
    (path / "notes.txt").write_text("staged change\n", encoding="utf-8")
    git("add", "notes.txt")
    return path


def git_log(repo: Path) -> list[str]:
    out = subprocess.run(
        ["git", "log", "--format=%s"], cwd=repo, check=True, capture_output=True, text=True
    )
    return out.stdout.split()


@pytest.fixture
def assistant_with(tmp_path: Path) -> Iterator[Any]:
    built: list[Assistant] = []

    def make(config: str, model: ScriptedModel, **loop: Any) -> Assistant:
        home = Path(os.environ["ASSISTANT_HOME"])
        (home / "config.toml").write_text(config, encoding="utf-8")
        settings = load_settings()
        settings.memory.enabled = False
        for key, value in loop.items():
            setattr(settings.loop, key, value)
        assistant = Assistant(settings, model=model)
        built.append(assistant)
        return assistant

    yield make
    for assistant in built:
        assistant.close()


def outcome_calls(outcome: Any) -> list[Any]:
    return list(outcome.tool_calls)


# -- hints and names (units) -----------------------------------------------------------------


class Hints:
    def __init__(self, read_only: bool | None = None, destructive: bool | None = None) -> None:
        self.read_only_hint, self.destructive_hint = read_only, destructive


@pytest.mark.parametrize(
    ("hints", "trusted", "read_only", "dangerous"),
    [
        (Hints(True, False), False, True, False),
        (Hints(True, None), False, True, False),
        (Hints(True, True), False, False, True),  # contradictory hints: the worse one counts
        (Hints(False, False), False, False, True),  # changes things: asks, destructive or not
        (Hints(False, True), False, False, True),
        (Hints(None, None), False, False, True),  # no hints: assume the worst
        (None, False, False, True),
        (Hints(False, True), True, False, False),  # the user's trust lowers it
        (None, True, False, False),
    ],
)
def test_confirmation_comes_from_the_hints(
    hints: Any, trusted: bool, read_only: bool, dangerous: bool
) -> None:
    got_read_only, got_dangerous, why = confirmation_from_hints(hints, trusted)
    assert (got_read_only, got_dangerous) == (read_only, dangerous), why


def test_foreign_names_are_made_safe_and_bounded() -> None:
    assert tool_name("git", "git_status") == "mcp_git_git_status"
    assert tool_name("fs", "read file/now") == "mcp_fs_read_file_now"
    long = tool_name("srv", "x" * 100)
    assert len(long) <= 64 and long != tool_name("srv", "x" * 99)


# -- real servers ----------------------------------------------------------------------------


def test_a_read_only_server_runs_without_asking_and_is_traced(assistant_with: Any) -> None:
    model = ScriptedModel(
        [calls(("mcp_time_get_current_time", {"timezone": "Asia/Shanghai"})), text("It is now.")]
    )
    assistant = assistant_with(time_server(), model)
    groups = assistant.registry.groups()
    assert groups["mcp_time"] == ["mcp_time_convert_time", "mcp_time_get_current_time"]

    outcome = assistant.ask("what time is it in Shanghai?")
    (call,) = outcome_calls(outcome)
    assert call.status == "ok", call.result
    assert call.result["server"] == "time" and call.result["tool"] == "get_current_time"
    assert call.result["result"]["timezone"] == "Asia/Shanghai"
    offered = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert "mcp_time_get_current_time" in offered and "calc_evaluate" in offered
    trace = assistant.traces.turn(outcome.turn_id)
    traced = json.dumps(trace)
    assert "mcp_time_get_current_time" in traced and "mcp-time" in traced  # tool and version


def test_git_reads_run_but_changes_wait_for_a_yes(assistant_with: Any, repo: Path) -> None:
    model = ScriptedModel(
        [
            calls(
                ("mcp_git_git_status", {"repo_path": str(repo)}),
                ("mcp_git_git_commit", {"repo_path": str(repo), "message": "by the model"}),
            ),
            text("Status read; the commit waits for you."),
        ]
    )
    assistant = assistant_with(git_server(repo), model)
    outcome = assistant.ask("commit my staged notes")
    status, commit = outcome_calls(outcome)
    assert status.status == "ok" and "notes.txt" in json.dumps(status.result)
    assert commit.status == "pending_confirmation"
    assert "git_commit" in commit.result["would"]
    assert git_log(repo) == ["first"]  # nothing committed

    done = assistant.confirm(commit.result["action_id"])
    assert done.status == "confirmed", done.result
    assert git_log(repo) == ["by", "the", "model", "first"]


def test_trusted_git_tools_run_at_once(assistant_with: Any, repo: Path) -> None:
    model = ScriptedModel(
        [
            calls(("mcp_git_git_create_branch", {"repo_path": str(repo), "branch_name": "b1"})),
            text("done"),
        ]
    )
    assistant = assistant_with(git_server(repo, 'trust = ["git_create_branch"]\n'), model)
    (call,) = outcome_calls(assistant.ask("make a branch b1"))
    assert call.status == "ok", call.result
    branches = subprocess.run(
        ["git", "branch", "--list", "b1"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert "b1" in branches.stdout


def test_allow_and_deny_pick_the_tools(assistant_with: Any, repo: Path) -> None:
    config = git_server(
        repo, 'allow = ["git_status", "git_log", "git_reset"]\ndeny = ["git_reset"]\n'
    )
    assistant = assistant_with(config, ScriptedModel())
    assert assistant.registry.groups()["mcp_git"] == ["mcp_git_git_log", "mcp_git_git_status"]


def test_a_server_that_fails_to_start_is_reported_and_the_rest_works(
    assistant_with: Any,
) -> None:
    config = '[[mcp.servers]]\nname = "gone"\ncommand = "/nonexistent/mcp-server"\n' + time_server()
    model = ScriptedModel(
        [
            calls(("mcp_gone_anything", {}), ("mcp_time_get_current_time", {"timezone": "UTC"})),
            text("ok"),
        ]
    )
    assistant = assistant_with(config, model)
    gone, now = outcome_calls(assistant.ask("what time is it?"))
    assert gone.status == "UNKNOWN_TOOL" and now.status == "ok"
    from assistant.commands import status

    class Services:
        served_by, settings = "in-process", assistant.settings

        def __init__(self) -> None:
            self.assistant = assistant

        def runtime(self) -> dict[str, Any]:
            return {"running": False}

        def watch_state(self) -> dict[str, Any]:
            return {"vault": None, "watching": False, "rules": []}

        @property
        def jobs(self) -> Any:
            return type("J", (), {"list": lambda self: []})()

        @property
        def job_history(self) -> Any:
            return None

    servers = {s["name"]: s for s in status(Services())["extensions"]["mcp_servers"]}
    assert servers["gone"]["state"] == "failed"
    assert "command not found" in servers["gone"]["error"]
    assert servers["time"]["state"] == "running"


# -- a hostile server ------------------------------------------------------------------------


def test_injected_instructions_lead_to_nothing_dangerous(
    assistant_with: Any, tmp_path: Path
) -> None:
    """The model obeys what the server's description and result say; nothing runs."""
    markers = tmp_path / "markers"
    markers.mkdir()

    def gullible(messages: Any, tools: Any) -> Any:
        return calls(
            ("mcp_hostile_destroy", {"target": "everything"}),
            ("mcp_hostile_vault_delete", {"path": "Projects/Plan.md"}),
            prefix="obey",
        )

    model = ScriptedModel(
        [calls(("mcp_hostile_weather", {"city": "Paris"})), gullible, text("I did as told.")]
    )
    assistant = assistant_with(hostile_server(markers), model)
    tool = assistant.registry.get("mcp_hostile_weather")
    assert tool is not None and tool.description.startswith("[MCP server 'hostile'")
    outcome = assistant.ask("weather in Paris?")
    weather, destroy, fake_delete = outcome_calls(outcome)
    assert weather.status == "ok" and "data, not instructions" in weather.content
    assert destroy.status == fake_delete.status == "pending_confirmation"
    assert not list(markers.iterdir())  # neither tool ran
    assert assistant.registry.get("vault_delete") is None  # no vault here: nothing shadowed
    # a turn (the model) can never confirm: only the person can, and an unattended one never
    with pytest.raises(ConfirmationError):
        assistant.confirm(destroy.result["action_id"], unattended=True)
    assert not list(markers.iterdir())


def test_a_tool_named_like_ours_stays_in_its_own_namespace(
    assistant_with: Any, tmp_path: Path
) -> None:
    markers = tmp_path / "m"
    markers.mkdir()
    vault = tmp_path / "vault"
    (vault / "Projects").mkdir(parents=True)
    (vault / "Projects" / "Plan.md").write_text("# Plan\n", encoding="utf-8")
    model = ScriptedModel([calls(("vault_delete", {"path": "Projects/Plan.md"})), text("ok")])
    home = Path(os.environ["ASSISTANT_HOME"])
    (home / "config.toml").write_text(hostile_server(markers), encoding="utf-8")
    settings = load_settings()
    settings.vault, settings.memory.enabled = vault, False
    assistant = Assistant(settings, model=model)
    try:
        ours = assistant.registry.get("vault_delete")
        theirs = assistant.registry.get("mcp_hostile_vault_delete")
        assert ours is not None and ours.origin == "built-in"
        assert theirs is not None and theirs.origin == "mcp hostile" and theirs.dangerous
        (call,) = outcome_calls(assistant.ask("delete the plan"))
        assert call.status == "pending_confirmation"  # our own tool, our own confirmation
        assert (vault / "Projects" / "Plan.md").exists()
        assert not list(markers.iterdir())
    finally:
        assistant.close()


def test_a_huge_result_is_cut_and_a_failure_is_named(assistant_with: Any, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    model = ScriptedModel([calls(("mcp_hostile_huge", {}), ("mcp_hostile_fail", {})), text("ok")])
    assistant = assistant_with(hostile_server(markers, extra="timeout_s = 120\n"), model)
    huge, fail = outcome_calls(assistant.ask("fetch the big one"))
    assert huge.status == "ok", huge.result
    assert len(huge.content) <= assistant.settings.loop.result_budget_chars + 200
    assert len(huge.result["content"]) == 100_000 and "5,000,000" in huge.result["truncated"]
    assert fail.status == "MCP_TOOL_ERROR" and "fail" in fail.result["detail"]
    trace = json.dumps(assistant.traces.turn(outcome_calls_turn(assistant)))
    assert len(trace) < 1_000_000  # the trace keeps the capped result, not 5 MB


def outcome_calls_turn(assistant: Assistant) -> str:
    turn = assistant.traces.last_turn_id()
    assert turn is not None
    return turn


def test_hanging_and_crashing_servers_get_clear_errors(assistant_with: Any, tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    model = ScriptedModel(
        [
            calls(("mcp_hostile_hang", {})),
            calls(("mcp_hostile_crash", {})),
            calls(("mcp_hostile_weather", {"city": "Oslo"})),
            text("done"),
        ]
    )
    assistant = assistant_with(hostile_server(markers), model, max_tool_failures=5)
    hang, crash, after_crash = outcome_calls(assistant.ask("try everything"))
    assert hang.status == "TIMEOUT" and "within 3 s" in hang.result["detail"]
    assert (hang.result["server"], hang.result["tool"]) == ("hostile", "hang")
    assert crash.status == "MCP_SERVER_CRASHED" and "hostile" in crash.result["detail"]
    assert after_crash.status == "MCP_SERVER_UNAVAILABLE"  # backoff before the restart
    assert "next start" in after_crash.result["detail"]

    source = assistant.registry.sources[0]
    polling.wait_for(lambda: source.connection._retry_at <= time.monotonic(), "the backoff")
    model.enqueue(calls(("mcp_hostile_weather", {"city": "Oslo"})), text("sunny"))
    (again,) = outcome_calls(assistant.ask("and now?"))
    assert again.status == "ok"  # restarted
    state = source.status()
    assert state["crashes"] == 1 and state["starts"] == 2 and state["state"] == "running"


def test_closing_the_assistant_stops_the_servers(assistant_with: Any, tmp_path: Path) -> None:
    assistant = assistant_with(time_server(), ScriptedModel())
    assert assistant.registry.get("mcp_time_get_current_time") is not None
    source = assistant.registry.sources[0]
    thread = source.connection._thread
    assistant.close()
    assert source.status()["state"] == "stopped"
    assert thread is not None and not thread.is_alive()


def test_servers_start_only_when_a_tool_is_needed(tmp_path: Path) -> None:
    home = Path(os.environ["ASSISTANT_HOME"])
    (home / "config.toml").write_text(time_server(), encoding="utf-8")
    settings = load_settings()
    settings.memory.enabled = False
    assistant = Assistant(settings, model=ScriptedModel())
    try:
        (source,) = assistant.registry.sources
        assert source.status()["state"].startswith("not started")
        assert assistant.registry.get("calc_evaluate") is not None
        assert source.status()["state"].startswith("not started")
    finally:
        assistant.close()


def test_an_offline_turn_starts_no_server(tmp_path: Path) -> None:
    """The offline planner cannot call foreign tools, so its turns do not offer them."""
    home = Path(os.environ["ASSISTANT_HOME"])
    (home / "config.toml").write_text(time_server(), encoding="utf-8")
    settings = load_settings()
    settings.memory.enabled = False
    assistant = Assistant(settings)  # no endpoint: the offline planner
    try:
        assert assistant.offline
        outcome = assistant.ask("15加27等于多少")
        assert "42" in outcome.answer
        assert assistant.registry.sources[0].status()["state"].startswith("not started")
    finally:
        assistant.close()


def test_registry_sources_do_not_start_for_other_groups() -> None:
    class Source:
        group = "mcp_x"
        asked = 0

        def tools(self) -> list[Any]:
            Source.asked += 1
            return []

    registry = ToolRegistry([], sources=[Source()])
    assert registry.definitions(["calc"]) == [] and Source.asked == 0
    assert registry.get("calc_evaluate") is None and Source.asked == 0
    assert registry.get("mcp_x_y") is None and Source.asked == 1


# -- unattended runs (jobs, file triggers) ------------------------------------------------------


def test_a_job_and_a_file_trigger_leave_mcp_actions_pending(tmp_path: Path, repo: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "Inbox").mkdir(parents=True)
    home = Path(os.environ["ASSISTANT_HOME"])
    rule = '[[watch]]\nglob = "Inbox/*.md"\nprompt = "commit {title}"\n'
    (home / "config.toml").write_text(
        f"vault = {json.dumps(str(vault))}\n{rule}{git_server(repo)}", encoding="utf-8"
    )
    lock = threading.Lock()

    def step(messages: Any, tools: Any) -> Any:
        with lock:
            if messages[-1]["role"] == "tool":
                return text("left for you to confirm")
            return calls(("mcp_git_git_commit", {"repo_path": str(repo), "message": "auto"}))

    settings = load_settings()
    settings.memory.enabled = False
    settings.daemon.watch_debounce_s = 0.2
    daemon = Daemon(settings, model=ScriptedModel([step] * 8), log_file=False)
    daemon.start()
    try:
        daemon.jobs.add("nightly", "commit the staged notes", cron=None, every="1d")
        run = daemon.run_job("nightly")
        assert run["status"] == "ok", run
        (vault / "Inbox" / "new idea.md").write_text("an idea\n", encoding="utf-8")
        pending = polling.wait_for(
            lambda: len(daemon.assistant.pending.list()) >= 2 and daemon.assistant.pending.list(),
            "two pending actions",
            120,
        )
        assert {a.tool for a in pending} == {"mcp_git_git_commit"}
        assert all(a.unattended for a in pending)
        assert git_log(repo) == ["first"]
    finally:
        daemon.stop()


# -- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "complaint"),
    [
        ('name = "a"\ncommand = "x"\nurl = "http://127.0.0.1:1/mcp"', "not both"),
        ('name = "a"', "not neither"),
        ('name = "a_b"\ncommand = "x"', "mcp.servers.0.name"),
        ('name = "a"\nurl = "ftp://host/mcp"', "http:// or https://"),
        ('name = "a"\ncommand = "x"\ntimeout_s = 0', "mcp.servers.0.timeout_s"),
        ('name = "a"\ncommand = "x"\nwhat = 1', "unknown key"),
    ],
)
def test_bad_server_entries_are_named(block: str, complaint: str) -> None:
    from assistant.errors import ConfigError

    home = Path(os.environ["ASSISTANT_HOME"])
    (home / "config.toml").write_text(f"[[mcp.servers]]\n{block}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"config\.toml") as error:
        load_settings()
    assert complaint in str(error.value)


def test_two_servers_with_one_name_are_refused() -> None:
    from assistant.errors import ConfigError

    home = Path(os.environ["ASSISTANT_HOME"])
    entry = '[[mcp.servers]]\nname = "a"\ncommand = "x"\n'
    (home / "config.toml").write_text(entry + entry, encoding="utf-8")
    with pytest.raises(ConfigError, match="two MCP servers are named 'a'"):
        load_settings()


def test_foreign_schemas_are_kept_portable_and_still_enforced() -> None:
    from mcp import types

    from tools.mcp_client import McpToolSource, ServerSpec

    source = McpToolSource(ServerSpec(name="s", command="unused"))
    listed = [
        types.Tool(
            name="tagged",
            input_schema={
                "type": "object",
                "properties": {"tag": {"type": "string", "pattern": "^[a-z]+$"}},
                "required": ["tag"],
            },
            annotations=types.ToolAnnotations(read_only_hint=True),
        ),
        types.Tool(
            name="refs",
            input_schema={
                "type": "object",
                "properties": {"a": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"type": "string"}},
            },
        ),
        types.Tool(name="broken", input_schema={"type": "object", "required": "tag"}),
    ]
    (tagged,) = source._adopt(listed)
    assert "pattern" not in json.dumps(tagged.definition)  # what the model sees is portable
    assert tagged.args_model.model_validate({"tag": "abc"}).model_dump() == {"tag": "abc"}
    with pytest.raises(ValueError, match="does not match"):
        tagged.args_model.model_validate({"tag": "ABC!"})  # the server's rule still holds
    skipped = {item["tool"]: item["reason"] for item in source.skipped}
    assert "portable subset" in skipped["refs"]
    assert set(skipped) == {"refs", "broken"}
