"""The dependency rules of SPEC §0, held by parsing every import in the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


def _top_level(package: str) -> dict[Path, set[str]]:
    return {path: _imports(path) for path in (ROOT / package).rglob("*.py")}


def test_memory_imports_neither_tools_nor_assistant() -> None:
    for path, imports in _top_level("memory").items():
        bad = {name for name in imports if name.split(".")[0] in {"tools", "assistant"}}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_tools_do_not_import_assistant() -> None:
    for path, imports in _top_level("tools").items():
        bad = {name for name in imports if name.split(".")[0] == "assistant"}
        assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}"


def test_the_loop_imports_no_concrete_tool() -> None:
    contract = {"tools", "tools.base", "tools.registry", "tools.runner", "tools.truncate"}
    for name in ("loop.py", "grounding.py", "outcome.py"):
        imports = _imports(ROOT / "assistant" / name)
        concrete = {i for i in imports if i.split(".")[0] == "tools" and i not in contract}
        assert not concrete, f"assistant/{name} imports concrete tools {sorted(concrete)}"


def test_the_rule_checker_sees_imports() -> None:
    """Guard against a checker that passes because it parses nothing."""
    assert "tools.runner" in _imports(ROOT / "assistant" / "loop.py")
    assert any("memory.db" in imports for imports in _top_level("memory").values())


def test_no_module_level_mutable_singletons() -> None:
    """No global scheduler, client or store: composition happens in assistant/app.py."""
    suspicious = ("OpenAI(", "PersistentClient(", "BackgroundScheduler(", "Observer(")
    for package in ("assistant", "memory", "tools"):
        for path in (ROOT / package).rglob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in tree.body:
                if isinstance(node, ast.Assign | ast.AnnAssign):
                    source = ast.unparse(node)
                    assert not any(s in source for s in suspicious), f"{path}: {source}"
