"""`assistant vault …` and the vault flow through `assistant ask`, in separate processes."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from clirun import run_cli

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    copy = tmp_path / "vault"
    shutil.copytree(ROOT / "vault_example", copy)
    return copy


def _cli(home: Path, vault: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(home / "data", *args, vault=vault)


def test_list_read_and_search_with_json(tmp_path: Path, vault: Path) -> None:
    listed = json.loads(_cli(tmp_path, vault, "vault", "list", "Projects", "--json").stdout)
    paths = {note["path"] for note in listed["notes"]}
    assert "Projects/Project Phoenix.md" in paths
    note = json.loads(_cli(tmp_path, vault, "vault", "read", "Project Phoenix", "--json").stdout)
    assert note["path"] == "Projects/Project Phoenix.md"
    hits = json.loads(_cli(tmp_path, vault, "vault", "search", "迁移", "--json").stdout)
    assert any(hit["path"] == "Projects/知识库迁移.md" for hit in hits)


@pytest.mark.parametrize("path", ["../outside.md", "/etc/passwd", ".obsidian/app.json"])
def test_a_refused_path_exits_non_zero_with_the_reason(
    tmp_path: Path, vault: Path, path: str
) -> None:
    result = _cli(tmp_path, vault, "vault", "read", path)
    assert result.returncode != 0
    assert result.stdout == "" and result.stderr.startswith("error: ")
    assert "Traceback" not in result.stderr


def test_weekly_report_from_the_template_then_undo(tmp_path: Path, vault: Path) -> None:
    made = _cli(tmp_path, vault, "ask", "--json", "用周报模板创建本周周报")
    data = json.loads(made.stdout)
    created = [c for c in data["tool_calls"] if c["tool"] == "vault_create_from_template"]
    path = created[0]["result"]["path"]
    assert path in data["answer"] and (vault / path).exists()
    text = (vault / path).read_text(encoding="utf-8")
    assert "{{date}}" not in text and "{{title}}" not in text
    undone = _cli(tmp_path, vault, "vault", "undo")
    assert undone.returncode == 0
    assert not (vault / path).exists()
