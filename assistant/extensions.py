"""Tools from outside our source: MCP servers' (X2) and plugins' (X3), wired from settings.

The composition root (`assistant.app`) asks here for the MCP tool sources and the plugin
tools; `status` and `assistant tools` ask here what each one is doing.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from assistant.config import McpServerSettings, Settings
from tools.base import Tool
from tools.mcp_client import McpToolSource, ServerSpec
from tools.plugins import PluginReport, load_plugins
from tools.registry import ToolRegistry


def server_spec(settings: Settings, server: McpServerSettings) -> ServerSpec:
    return ServerSpec(
        name=server.name,
        command=server.command,
        args=tuple(server.args),
        env=dict(server.env),
        cwd=server.cwd,
        url=server.url,
        headers=dict(server.headers),
        allow=frozenset(server.allow) if server.allow is not None else None,
        deny=frozenset(server.deny),
        trust=frozenset(server.trust),
        timeout_s=server.timeout_s,
        start_timeout_s=server.start_timeout_s,
        max_result_chars=server.max_result_chars,
        errlog=settings.home / "mcp" / f"{server.name}.log",
    )


def mcp_sources(settings: Settings) -> list[McpToolSource]:
    """One source per `[[mcp.servers]]`; nothing starts until a tool of it is needed."""
    return [McpToolSource(server_spec(settings, server)) for server in settings.mcp.servers]


def plugin_tools(taken: Collection[str]) -> tuple[list[Tool], list[PluginReport]]:
    return load_plugins(taken)


def mcp_status(registry: ToolRegistry) -> list[dict[str, Any]]:
    return [source.status() for source in registry.sources if isinstance(source, McpToolSource)]


def close_sources(registry: ToolRegistry) -> None:
    for source in registry.sources:
        if isinstance(source, McpToolSource):
            source.close()
