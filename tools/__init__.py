"""The tool contract, the registry (the whitelist) and the concrete tools."""

from __future__ import annotations

from tools.base import Tool, ToolArgs, ToolContext, ToolError, tool
from tools.registry import ToolRegistry

__all__ = ["Tool", "ToolArgs", "ToolContext", "ToolError", "ToolRegistry", "tool"]
