from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from assistant.config import load_settings
from assistant.errors import ConfigError


def test_defaults_are_the_spec_bounds(tmp_path: Path) -> None:
    settings = load_settings({"ASSISTANT_HOME": str(tmp_path)})
    limits = settings.loop
    assert (limits.max_requests, limits.max_tool_calls, limits.max_identical_calls) == (8, 16, 2)
    assert (limits.max_tool_failures, limits.tool_timeout_s, limits.parallel_tools) == (2, 20, 4)
    assert (limits.result_budget_chars, limits.cache_ttl_s) == (4000, 600)
    assert settings.model.temperature == 0.2
    assert settings.model.offline
    assert settings.home == tmp_path


def test_environment_configures_the_endpoint(tmp_path: Path) -> None:
    settings = load_settings(
        {
            "ASSISTANT_HOME": str(tmp_path),
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "ASSISTANT_MODEL": "qwen2.5",
        }
    )
    assert not settings.model.offline
    assert settings.model.name == "qwen2.5"


def test_config_file_in_the_data_directory(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[model]\nbase_url = "http://localhost:11434/v1"\nname = "llama3"\n'
        "[loop]\nmax_requests = 5\n",
        encoding="utf-8",
    )
    settings = load_settings({"ASSISTANT_HOME": str(tmp_path), "ASSISTANT_MODEL": "override"})
    assert settings.model.base_url == "http://localhost:11434/v1"
    assert settings.model.name == "override", "the environment wins over the file"
    assert settings.loop.max_requests == 5


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("[loop]\nmax_requests = 'many'\n", "key 'loop.max_requests'"),
        ("[loop]\nmax_request = 3\n", "key 'loop.max_request': unknown key"),
        ("[model]\ntemperature = 5\n", "key 'model.temperature'"),
        ("[model\nname = 1\n", "not valid TOML"),
    ],
)
def test_a_bad_config_file_names_file_key_and_problem(
    tmp_path: Path, content: str, expected: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_settings({"ASSISTANT_HOME": str(tmp_path)})
    assert str(path) in str(raised.value)
    assert expected in str(raised.value)


def test_cli_reports_a_bad_config_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[loop]\nmax_requests = 0\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "assistant", "ask", "hello"],
        capture_output=True,
        text=True,
        env={"ASSISTANT_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert "loop.max_requests" in result.stderr and "Traceback" not in result.stderr
    assert result.stdout == ""


def test_compression_knobs_in_config_reach_the_compressor(tmp_path: Path) -> None:
    from assistant.remembering import compression_policy

    (tmp_path / "config.toml").write_text(
        "[memory]\nmask_after_turns = 2\nsummary_max_tokens = 120\nolder_turns_tokens = 0\n"
    )
    policy = compression_policy(load_settings({"ASSISTANT_HOME": str(tmp_path)}).memory)
    assert (policy.mask_after_turns, policy.summary_max_tokens) == (2, 120)
    assert policy.older_turns_tokens == 0 and policy.keep_turns == 4
