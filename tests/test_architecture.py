"""The dependency rules of SPEC §0, held by parsing every import in the source tree."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _imports(path: Path) -> set[str]:
    """Absolute module names imported anywhere in the file (function bodies included)."""
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


# -- no import circles inside a package (lazy and TYPE_CHECKING imports included) -----------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(package: str) -> dict[str, set[str]]:
    """Module -> the modules of the same package it imports, wherever the import stands.

    `from a.b import c` counts as importing `a.b.c` when that is a module, else `a.b`;
    relative imports are resolved. A package's `__init__` run implicitly by importing one
    of its modules is not an edge (Python orders that itself).
    """
    paths = {_module_name(path): path for path in (ROOT / package).rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names if alias.name in paths)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here[: len(here) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:
                    if f"{module}.{alias.name}" in paths:
                        targets.add(f"{module}.{alias.name}")
                    elif module in paths:
                        targets.add(module)
        targets.discard(name)
        graph[name] = targets
    return graph


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle as a path `[a, b, ..., a]`, or None (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: finished
    for start in sorted(graph):
        if start in state:
            continue
        path = [start]
        state[start] = 1
        stack = [iter(sorted(graph[start]))]
        while stack:
            step = next(stack[-1], None)
            if step is None:
                stack.pop()
                state[path.pop()] = 2
            elif state.get(step) == 1:
                return [*path[path.index(step) :], step]
            elif step not in state:
                state[step] = 1
                path.append(step)
                stack.append(iter(sorted(graph[step])))
    return None


def test_the_cycle_finder_finds_a_cycle() -> None:
    """Guard against a checker that passes because it cannot see a circle."""
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None
    graph = _import_graph("assistant")
    assert "assistant.daemon.process" in graph["assistant.cli"]  # a function-level import
    assert "assistant.app" in graph["assistant.commands"]  # a TYPE_CHECKING import


@pytest.mark.parametrize("package", ["assistant", "memory", "tools"])
def test_no_import_circle_inside_a_package(package: str) -> None:
    cycle = _a_cycle(_import_graph(package))
    assert cycle is None, f"import circle in {package}/: {' -> '.join(cycle or [])}"
