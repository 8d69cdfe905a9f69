"""The registry is the whitelist: only tools registered here can run.

Besides tools registered up front, a registry holds tool *sources*: a group of tools that
only exists once something is started (an MCP server's tools, `mcp_<server>_<tool>`). A
source is asked for its tools the first time one of its names or its group is needed, so
a configured server that no turn uses is never started.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from tools.base import Tool


class ToolSource(Protocol):
    """A group of tools provided by something outside this process (an MCP server)."""

    @property
    def group(self) -> str:
        """The group name; every tool of the source is named `<group>_...`."""
        ...

    def tools(self) -> list[Tool]:
        """The tools now available (starting the provider if needed); [] when it failed."""
        ...


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = (), sources: Iterable[ToolSource] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._sources: dict[str, ToolSource] = {}
        for item in tools:
            self.register(item)
        for source in sources:
            self.add_source(source)

    def register(self, item: Tool) -> Tool:
        if item.name in self._tools:
            raise ValueError(f"tool {item.name!r} is registered twice")
        self._tools[item.name] = item
        return item

    def add_source(self, source: ToolSource) -> ToolSource:
        if source.group in self._sources:
            raise ValueError(f"tool source {source.group!r} is registered twice")
        self._sources[source.group] = source
        return source

    def registered(self) -> list[Tool]:
        """The tools registered up front (no source is started)."""
        return [self._tools[name] for name in sorted(self._tools)]

    @property
    def sources(self) -> list[ToolSource]:
        return list(self._sources.values())

    def _source_for(self, name: str) -> ToolSource | None:
        for group, source in self._sources.items():
            if name.startswith(group + "_"):
                return source
        return None

    def get(self, name: str) -> Tool | None:
        found = self._tools.get(name)
        if found is not None:
            return found
        source = self._source_for(name)
        if source is None:
            return None
        return next((t for t in source.tools() if t.name == name), None)

    def _all(self, groups: set[str] | None = None) -> dict[str, Tool]:
        every = {
            name: item
            for name, item in self._tools.items()
            if groups is None or item.group in groups
        }
        for group, source in self._sources.items():
            if groups is not None and group not in groups:
                continue
            for item in source.tools():
                every.setdefault(item.name, item)
        return every

    def names(self) -> list[str]:
        return sorted(self._all())

    def tools(self) -> list[Tool]:
        every = self._all()
        return [every[name] for name in sorted(every)]

    def groups(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for item in self.tools():
            grouped.setdefault(item.group, []).append(item.name)
        return grouped

    def definitions(self, groups: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The `tools` payload, optionally only for the relevant groups (SPEC L15)."""
        wanted = set(groups) if groups is not None else None
        every = self._all(wanted)
        return [every[name].definition for name in sorted(every)]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __len__(self) -> int:
        return len(self._all())
