"""Tool plugins (SPEC X3): other packages add tools through the entry-point group
`assistant.tools`, without editing us.

An entry point names a callable that returns `Tool`s made with `tools.base.tool` (one, or
an iterable of them). Plugins load at start; a broken one (it does not import, raises,
returns something else, or names a tool that is taken or reserved) is reported with the
reason and skipped, and the rest loads.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points

from tools.base import Tool

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "assistant.tools"
NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
RESERVED_PREFIXES = ("mcp_",)  # the namespace of MCP servers' tools


@dataclass
class PluginReport:
    """One entry point: what it added, or why it was skipped."""

    name: str
    value: str
    distribution: str | None
    tools: list[str] = field(default_factory=list)
    error: str | None = None
    skipped_tools: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def _made(entry: EntryPoint) -> list[object]:
    factory = entry.load()
    made = factory() if callable(factory) and not isinstance(factory, Tool) else factory
    if isinstance(made, Tool):
        return [made]
    if isinstance(made, Iterable) and not isinstance(made, str | bytes | dict):
        return list(made)
    raise TypeError(f"it returned {type(made).__name__}, not Tools")


def load_plugins(
    taken: Collection[str] = (), entries: Iterable[EntryPoint] | None = None
) -> tuple[list[Tool], list[PluginReport]]:
    """Every plugin's tools (marked with their origin) and a report per entry point."""
    names = set(taken)
    tools: list[Tool] = []
    reports: list[PluginReport] = []
    found = entry_points(group=ENTRY_POINT_GROUP) if entries is None else entries
    for entry in sorted(found, key=lambda e: e.name):
        dist = entry.dist.name if getattr(entry, "dist", None) is not None else None
        report = PluginReport(name=entry.name, value=entry.value, distribution=dist)
        reports.append(report)
        try:
            made = _made(entry)
        except Exception as exc:  # noqa: BLE001 - a broken plugin is reported and skipped
            report.error = f"{type(exc).__name__}: {exc}"
            log.warning("plugin %s (%s) skipped: %s", entry.name, entry.value, report.error)
            continue
        wrong = [item for item in made if not isinstance(item, Tool)]
        if wrong:
            report.error = (
                f"it returned {type(wrong[0]).__name__}; a plugin returns Tools made with "
                "tools.base.tool"
            )
            log.warning("plugin %s skipped: %s", entry.name, report.error)
            continue
        for item in made:
            assert isinstance(item, Tool)
            problem = _name_problem(item.name, names)
            if problem:
                report.skipped_tools.append(f"{item.name}: {problem}")
                log.warning("plugin %s: tool %s skipped: %s", entry.name, item.name, problem)
                continue
            names.add(item.name)
            tools.append(dataclasses.replace(item, origin=f"plugin {dist or entry.name}"))
            report.tools.append(item.name)
    return tools, reports


def _name_problem(name: str, taken: Collection[str]) -> str | None:
    if not NAME.match(name):
        return "a tool name is 1-64 letters, digits, '_' or '-', starting with a letter"
    if name.startswith(RESERVED_PREFIXES):
        return "names starting with 'mcp_' belong to MCP servers' tools"
    if name in taken:
        return "another tool already has this name"
    return None
