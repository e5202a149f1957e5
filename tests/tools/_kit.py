"""Shared helpers for the tools-layer tests."""

from __future__ import annotations

import inspect
from typing import Any

from yiemagent import AbortSignal, AgentTool, AgentToolResult


async def run_tool(
    tool: AgentTool,
    args: dict[str, Any],
    *,
    tool_call_id: str = "call-1",
    signal: AbortSignal | None = None,
    updates: list[AgentToolResult] | None = None,
) -> AgentToolResult | str:
    """Call `tool.execute` as the pipeline does (plain or async), returning what it returns."""
    sink = updates if updates is not None else []
    value = tool.execute(tool_call_id, args, signal or AbortSignal(), sink.append)
    if inspect.isawaitable(value):
        value = await value
    assert isinstance(value, AgentToolResult | str)
    return value


def text_of(value: AgentToolResult | str) -> str:
    """The text of a tool's return value (one text content, or a plain string)."""
    if isinstance(value, str):
        return value
    return "".join(getattr(block, "text", "") for block in value.content)
