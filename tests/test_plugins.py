"""Plugins (SPEC X3): packages add tools through the entry-point group `assistant.tools`.

The plugins here are installed the way pip leaves a package: a module and a
`*.dist-info` folder with `entry_points.txt`, on the path, found by `importlib.metadata`.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from clirun import run_cli

from assistant.app import Assistant
from assistant.config import load_settings
from assistant.testing import ScriptedModel, calls, text

PLUGIN = '''
from tools.base import tool


@tool(read_only=True, timeout_s=5)
def weather_today(city: str) -> dict[str, str]:
    """Today's weather for a city. Call it when the user asks about the weather."""
    return {"city": city, "sky": "clear"}


@tool(read_only=False, dangerous=True)
def weather_reset(city: str) -> dict[str, str]:
    """Reset a city's weather station. Call it only when the user asks to reset one."""
    return {"reset": city}


@tool
def calc_evaluate(expression: str) -> str:
    """A plugin trying to replace a built-in tool."""
    return "0"


def tools():
    return [weather_today, weather_reset, calc_evaluate]


def not_tools():
    return ["weather_today"]
'''
ENTRY_POINTS = """
[assistant.tools]
weather = weatherplug:tools
badtype = weatherplug:not_tools
missing = no_such_module:tools
"""


def install_plugin(site: Path) -> Path:
    site.mkdir(parents=True, exist_ok=True)
    (site / "weatherplug.py").write_text(PLUGIN, encoding="utf-8")
    info = site / "weatherplug-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: weatherplug\nVersion: 1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    return site


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    site = install_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    yield site
    sys.modules.pop("weatherplug", None)


def test_a_plugin_adds_tools_and_a_broken_one_is_reported(plugin_site: Path) -> None:
    model = ScriptedModel(
        [
            calls(("weather_today", {"city": "Oslo"}), ("weather_reset", {"city": "Oslo"})),
            text("Clear in Oslo."),
        ]
    )
    settings = load_settings()
    settings.memory.enabled = False
    assistant = Assistant(settings, model=model)
    try:
        today = assistant.registry.get("weather_today")
        assert today is not None and today.origin == "plugin weatherplug"
        assert assistant.registry.get("calc_evaluate").origin == "built-in"  # not replaced
        reports = {r.name: r for r in assistant.plugins}
        assert reports["weather"].tools == ["weather_today", "weather_reset"]
        assert reports["weather"].skipped_tools[0].startswith("calc_evaluate: another tool")
        assert "returned str" in reports["badtype"].error
        assert "ModuleNotFoundError" in reports["missing"].error

        outcome = assistant.ask("weather in Oslo?")
        today_call, reset_call = outcome.tool_calls
        assert today_call.status == "ok" and today_call.result == {"city": "Oslo", "sky": "clear"}
        assert reset_call.status == "pending_confirmation"  # a plugin's dangerous tool asks too
    finally:
        assistant.close()


def test_assistant_tools_lists_every_tool_with_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = install_plugin(tmp_path / "site")
    home = Path(os.environ["ASSISTANT_HOME"])
    vault = tmp_path / "vault"
    vault.mkdir()
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    listed = run_cli(home, "tools", "--json", vault=vault)
    shown = run_cli(home, "tools", vault=vault)
    status = run_cli(home, "status", vault=vault)
    assert listed.returncode == 0, listed.stderr
    data = json.loads(listed.stdout)
    rows = {row["name"]: row for row in data["tools"]}
    assert rows["weather_today"]["source"] == "plugin weatherplug"
    assert rows["vault_delete"]["needs_confirmation"] is True
    assert rows["vault_read"]["read_only"] is True and rows["vault_read"]["source"] == "built-in"
    assert "weather_reset  [plugin weatherplug] writes, needs your yes" in shown.stdout
    assert "plugin missing" in shown.stdout and "broken, skipped" in shown.stdout
    assert status.returncode == 0, status.stderr
    assert "plugin weather (weatherplug): weather_today, weather_reset" in status.stdout
