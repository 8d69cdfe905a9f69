"""The registry is the whitelist: only tools registered here can run."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tools.base import Tool


class ToolRegistry:
    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for item in tools:
            self.register(item)

    def register(self, item: Tool) -> Tool:
        if item.name in self._tools:
            raise ValueError(f"tool {item.name!r} is registered twice")
        self._tools[item.name] = item
        return item

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def groups(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        for name in self.names():
            grouped.setdefault(self._tools[name].group, []).append(name)
        return grouped

    def definitions(self, groups: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """The `tools` payload, optionally only for the relevant groups (SPEC L15)."""
        wanted = set(groups) if groups is not None else None
        return [
            self._tools[name].definition
            for name in self.names()
            if wanted is None or self._tools[name].group in wanted
        ]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)
