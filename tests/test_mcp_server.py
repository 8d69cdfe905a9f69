"""Our tools served over MCP (SPEC X1), driven by the official SDK's `ClientSession`: over
stdio against `assistant mcp` (in-process, no daemon), and over streamable HTTP against a
running daemon's `/mcp`. A client lists the tools with their hints, searches and creates a
note in a temporary vault, and a move it asks for stays a pending action that changes
nothing until a person runs `assistant confirm`."""

from __future__ import annotations

import json
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from clirun import run_cli
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from test_daemon import DaemonProcess, make_vault

Session = Callable[[ClientSession], Awaitable[Any]]


def stdio_params(home: Path, vault: Path, **extra: str) -> StdioServerParameters:
    env = {"ASSISTANT_HOME": str(home), "ASSISTANT_VAULT": str(vault), **extra}
    for name in ("PATH", "HOME", "PYTHONPATH", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    return StdioServerParameters(command=sys.executable, args=["-m", "assistant", "mcp"], env=env)


def over_stdio(params: StdioServerParameters, body: Session) -> Any:
    async def main() -> Any:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def over_http(url: str, token: str | None, body: Session) -> Any:
    async def main() -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            # as the SDK's docs advise: a long read timeout (httpx's default is 5 s)
            httpx2.AsyncClient(
                headers=headers, trust_env=False, timeout=httpx2.Timeout(30, read=300)
            ) as http,
            streamable_http_client(url, http_client=http) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await body(session)

    return anyio.run(main)


def text_of(result: Any) -> dict[str, Any]:
    return json.loads(result.content[0].text)


async def exercise(session: ClientSession) -> dict[str, Any]:
    """What a client would do: list, search, create, then ask for a move."""
    listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    found = await session.call_tool("vault_search", {"query": "release checklist"})
    created = await session.call_tool(
        "vault_create", {"path": "Inbox/From MCP.md", "content": "written by an MCP client"}
    )
    move = await session.call_tool(
        "vault_move", {"path": "Inbox/From MCP.md", "new_path": "Archive/From MCP.md"}
    )
    resources = (await session.list_resources()).resources
    read = await session.read_resource("vault://Inbox/From%20MCP.md")
    return {
        "tools": listed,
        "found": found,
        "created": created,
        "move": move,
        "resources": [str(r.uri) for r in resources],
        "read": read.contents[0].text,
    }


def check_exercise(done: dict[str, Any], vault: Path) -> str:
    tools = done["tools"]
    assert {"vault_search", "vault_create", "vault_move", "memory_recall"} <= set(tools)
    assert not any(name.startswith(("calc_", "mcp_")) for name in tools)
    read, move, create = tools["vault_read"], tools["vault_move"], tools["vault_create"]
    assert read.annotations.read_only_hint is True and read.annotations.destructive_hint is False
    assert move.annotations.read_only_hint is False and move.annotations.destructive_hint is True
    assert create.annotations.read_only_hint is False
    assert create.annotations.destructive_hint is False
    assert all(t.annotations.open_world_hint is False for t in tools.values())
    assert "path" in read.input_schema["properties"]
    assert "confirm" in move.description  # says it only prepares the action

    found = text_of(done["found"])
    assert not done["found"].is_error
    assert found["count"] > 0
    assert any(hit["path"] == "Projects/Release Checklist.md" for hit in found["results"])
    assert not done["created"].is_error, done["created"].content[0].text
    written = (vault / "Inbox" / "From MCP.md").read_text(encoding="utf-8")
    assert "written by an MCP client" in written
    assert "vault://Inbox/From%20MCP.md" in done["resources"]  # a valid URI
    assert "vault://Projects/%E6%95%B0%E6%8D%AE%E5%BA%93%E9%80%89%E5%9E%8B.md" in done["resources"]
    assert "written by an MCP client" in done["read"]

    pending = text_of(done["move"])
    assert not done["move"].is_error
    assert pending["status"] == "pending_confirmation"
    assert (vault / "Inbox" / "From MCP.md").exists()  # nothing moved yet
    assert not (vault / "Archive" / "From MCP.md").exists()
    return pending["action_id"]


def test_assistant_mcp_over_stdio_in_process(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", make_vault(tmp_path / "vault")
    done = over_stdio(stdio_params(home, vault), exercise)
    action = check_exercise(done, vault)

    # the MCP client cannot confirm: no such tool is offered, and calling it fails
    async def try_confirm(session: ClientSession) -> Any:
        return await session.call_tool("pending_confirm", {"action_id": action})

    refused = over_stdio(stdio_params(home, vault), try_confirm)
    assert refused.is_error and "UNKNOWN_TOOL" in refused.content[0].text
    assert (vault / "Inbox" / "From MCP.md").exists()

    # the person confirms on the command line (the stdio server is gone: in-process)
    confirmed = run_cli(home, "confirm", action, vault=vault)
    assert confirmed.returncode == 0, confirmed.stderr
    assert (vault / "Archive" / "From MCP.md").exists()
    assert not (vault / "Inbox" / "From MCP.md").exists()


def test_a_stdio_server_releases_the_data_directory_between_calls(tmp_path: Path) -> None:
    """While a client holds `assistant mcp` open, `assistant confirm` still works."""
    home, vault = tmp_path / "home", make_vault(tmp_path / "vault")

    async def body(session: ClientSession) -> tuple[Any, Any]:
        move = await session.call_tool(
            "vault_move", {"path": "Inbox/Ideas to sort.md", "new_path": "Archive/Ideas.md"}
        )
        action = text_of(move)["action_id"]
        confirmed = await anyio.to_thread.run_sync(
            lambda: run_cli(home, "confirm", action, vault=vault)
        )
        listed = await session.call_tool("vault_list", {"folder": "Archive"})
        return confirmed, listed

    confirmed, listed = over_stdio(stdio_params(home, vault), body)
    assert confirmed.returncode == 0, confirmed.stderr
    assert (vault / "Archive" / "Ideas.md").exists()
    assert "Archive/Ideas.md" in listed.content[0].text


def test_client_may_confirm_only_when_the_user_turns_it_on(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", make_vault(tmp_path / "vault")
    home.mkdir()
    (home / "config.toml").write_text("[mcp]\nclient_may_confirm = true\n", encoding="utf-8")

    async def body(session: ClientSession) -> Any:
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert "pending_confirm" in names
        move = await session.call_tool(
            "vault_move", {"path": "Inbox/Ideas to sort.md", "new_path": "Archive/Ideas.md"}
        )
        assert (vault / "Inbox" / "Ideas to sort.md").exists()
        return await session.call_tool("pending_confirm", {"action_id": text_of(move)["action_id"]})

    done = over_stdio(stdio_params(home, vault), body)
    assert not done.is_error and text_of(done)["status"] == "confirmed"
    assert (vault / "Archive" / "Ideas.md").exists()


def test_bad_calls_get_clear_errors(tmp_path: Path) -> None:
    home, vault = tmp_path / "home", make_vault(tmp_path / "vault")

    async def body(session: ClientSession) -> dict[str, Any]:
        unknown = await session.call_tool("calc_evaluate", {"expression": "1+1"})
        invalid = await session.call_tool("vault_read", {"heading": 3})
        escape = await session.call_tool("vault_read", {"path": "../../etc/passwd"})
        try:
            await session.read_resource("file:///etc/passwd")
            resource = None
        except MCPError as exc:
            resource = exc.message
        return {"unknown": unknown, "invalid": invalid, "escape": escape, "resource": resource}

    done = over_stdio(stdio_params(home, vault), body)
    assert done["unknown"].is_error and "UNKNOWN_TOOL" in done["unknown"].content[0].text
    assert done["invalid"].is_error and "INVALID_ARGUMENTS" in done["invalid"].content[0].text
    assert done["escape"].is_error and "passwd" not in text_of(done["escape"]).get("content", "")
    assert done["resource"] and "vault://" in done["resource"]


@pytest.fixture
def daemon(tmp_path: Path) -> Any:
    process = DaemonProcess(tmp_path / "home", make_vault(tmp_path / "vault"))
    try:
        yield process.start()
    finally:
        process.close()


def test_daemon_serves_mcp_over_http_behind_its_token(daemon: DaemonProcess) -> None:
    url = daemon.api["url"] + "/mcp"

    hello = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ).encode()
    for token in (None, "wrong"):
        request = urllib.request.Request(
            url,
            data=hello,
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **({"Authorization": f"Bearer {token}"} if token else {}),
            },
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as refused:
            opener.open(request, timeout=30)
        assert refused.value.code == 401

    try:
        done = over_http(url, daemon.token, exercise)
    except BaseException:
        print(daemon.stderr())  # what the daemon said, for the failure report
        raise
    action = check_exercise(done, daemon.vault)
    pending = daemon.cli_json("pending")
    assert [a["id"] for a in pending] == [action]
    confirmed = daemon.cli("confirm", action)
    assert confirmed.returncode == 0, confirmed.stderr
    assert (daemon.vault / "Archive" / "From MCP.md").exists()


def test_assistant_mcp_forwards_to_the_running_daemon(daemon: DaemonProcess) -> None:
    async def body(session: ClientSession) -> Any:
        return await session.call_tool(
            "memory_remember", {"text": "my dentist is Dr. Li", "subject": "dentist"}
        )

    done = over_stdio(stdio_params(daemon.home, daemon.vault), body)
    assert not done.is_error, done.content[0].text
    stored = daemon.cli_json("memory", "search", "dentist")
    assert any("Dr. Li" in row["text"] for row in stored)  # the daemon holds it
    listed = daemon.cli_json("tools")  # through the control API
    rows = {row["name"]: row for row in listed["tools"]}
    assert rows["vault_move"]["needs_confirmation"] and rows["vault_move"]["source"] == "built-in"


def test_a_streamable_http_server_as_a_tool_source(
    daemon: DaemonProcess, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our client over HTTP (`url` + `headers`), against a real server: another data
    directory's daemon. Its reads run; its move is destructive, so it waits for a yes here."""
    from assistant.app import Assistant
    from assistant.config import load_settings
    from assistant.extensions import mcp_status
    from assistant.testing import ScriptedModel, calls, text

    url = daemon.api["url"] + "/mcp"
    home = tmp_path / "client-home"
    home.mkdir()
    monkeypatch.setenv("ASSISTANT_HOME", str(home))
    good = f'[[mcp.servers]]\nname = "notes"\nurl = "{url}"\n'
    good += f'headers = {{ Authorization = "Bearer {daemon.token}" }}\n'
    bad = f'[[mcp.servers]]\nname = "nokey"\nurl = "{url}"\nstart_timeout_s = 10\n'
    (home / "config.toml").write_text(good + bad, encoding="utf-8")
    settings = load_settings()
    settings.memory.enabled = False
    model = ScriptedModel(
        [
            calls(
                ("mcp_notes_vault_search", {"query": "release checklist"}),
                ("mcp_notes_vault_move", {"path": "Inbox/Ideas to sort.md", "new_path": "X.md"}),
            ),
            text("found it; the move waits for you"),
        ]
    )
    assistant = Assistant(settings, model=model)
    try:
        search, move = assistant.ask("find the release checklist").tool_calls
        assert search.status == "ok", search.result
        assert "Release Checklist" in search.result["content"]
        assert move.status == "pending_confirmation"
        assert (daemon.vault / "Inbox" / "Ideas to sort.md").exists()
        states = {s["name"]: s for s in mcp_status(assistant.registry)}
        assert states["notes"]["state"] == "running" and states["notes"]["transport"] == "http"
        assert states["nokey"]["state"] == "failed", states["nokey"]
        assert "HTTP 401" in states["nokey"]["error"]
    finally:
        assistant.close()
