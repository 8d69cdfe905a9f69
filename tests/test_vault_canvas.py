"""Moves and the files around notes (issue 14, defect 12): JSON Canvas `file` nodes follow
a move, `.base` files that name the note are listed, CLI errors carry the tool's hints.
The canvas fixture is written as Obsidian writes one (tab-indented JSON Canvas 1.0)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from clirun import run_cli

from memory.db import Database
from tools.vault.store import Vault

ROOT = Path(__file__).resolve().parent.parent

CANVAS = {
    "nodes": [
        {
            "id": "a1",
            "type": "file",
            "file": "Places/Kyoto.md",
            "subpath": "#Temples",
            "x": 0,
            "y": 0,
            "width": 400,
            "height": 400,
        },
        {
            "id": "b2",
            "type": "file",
            "file": "Places/Osaka.md",
            "x": 500,
            "y": 0,
            "width": 400,
            "height": 400,
        },
        {
            "id": "c3",
            "type": "text",
            "text": "Places/Kyoto.md is a string here",
            "x": 0,
            "y": 500,
            "width": 250,
            "height": 60,
        },
        {
            "id": "d4",
            "type": "file",
            "file": "Places/Kyoto.md",
            "x": 0,
            "y": 900,
            "width": 400,
            "height": 400,
        },
    ],
    "edges": [
        {"id": "e1", "fromNode": "a1", "fromSide": "right", "toNode": "b2", "toSide": "left"}
    ],
}
BASE = """filters:
  and:
    - file.inFolder("Places")
    - 'file.name != "Kyoto"'
views:
  - type: table
    name: Places
"""


@pytest.fixture
def vault(tmp_path: Path) -> Vault:
    root = tmp_path / "vault"
    (root / "Places").mkdir(parents=True)
    (root / "Places/Kyoto.md").write_text("# Kyoto\n\n## Temples\n", encoding="utf-8")
    (root / "Places/Osaka.md").write_text("# Osaka\n", encoding="utf-8")
    (root / "Trip.canvas").write_text(json.dumps(CANVAS, indent="\t"), encoding="utf-8")
    (root / "Places.base").write_text(BASE, encoding="utf-8")
    (root / "Other.base").write_text("views:\n  - type: cards\n", encoding="utf-8")
    return Vault(root, Database(tmp_path / "a.db"))


def test_a_move_updates_canvas_file_nodes_and_nothing_else_in_the_canvas(vault: Vault) -> None:
    canvas = vault.root / "Trip.canvas"
    before = canvas.read_bytes()
    result = vault.move("Places/Kyoto.md", "Japan/Kyōto.md")
    assert {"op": "link_update", "path": "Trip.canvas"} in result.changes
    after = canvas.read_text(encoding="utf-8")
    expected = before.decode().replace('"file": "Places/Kyoto.md"', '"file": "Japan/Kyōto.md"')
    assert after == expected  # tabs, key order, the text node's words: all as they were
    nodes = json.loads(after)["nodes"]
    assert [n.get("file") for n in nodes] == [
        "Japan/Kyōto.md",
        "Places/Osaka.md",
        None,
        "Japan/Kyōto.md",
    ]
    vault.undo()
    assert canvas.read_bytes() == before


def test_a_base_that_names_the_note_is_listed_in_the_preview(vault: Vault) -> None:
    plan = vault.plan_move("Places/Kyoto.md", "Japan/Kyoto.md")
    summary = vault.describe(plan).summary
    assert "the base Places.base names 'Kyoto' and may filter on it" in summary
    assert "Other.base" not in summary
    base = (vault.root / "Places.base").read_bytes()
    result = vault.apply(plan)
    assert any(
        row["path"] == "Places.base" and row["op"] == "not_updated" for row in result.changes
    )
    assert (vault.root / "Places.base").read_bytes() == base


def test_cli_errors_carry_the_tools_hints(tmp_path: Path) -> None:
    copy = tmp_path / "vault"
    shutil.copytree(ROOT / "vault_example", copy)
    home = tmp_path / "data"
    typo = run_cli(home, "vault", "read", "Projct Phoenix", vault=copy)
    assert typo.returncode == 1 and typo.stdout == ""
    assert "did you mean: Projects/Project Phoenix.md" in typo.stderr
    heading = run_cli(home, "vault", "read", "Project Phoenix", "--heading", "Nope", vault=copy)
    assert heading.returncode == 1
    assert "headings: " in heading.stderr and "Risks" in heading.stderr
