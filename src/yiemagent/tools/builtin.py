"""The built-in `listTools` tool (DESIGN R-4.14)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from yiemagent.types.model import Model
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import AgentTool, AgentToolResult, OnUpdate

__all__ = ["LIST_TOOLS_NAME", "format_tool_list", "list_tools_tool", "offers_list_tools"]

LIST_TOOLS_NAME = "listTools"


def offers_list_tools(model: Model | None) -> bool:
    """Whether an agent on `model` is offered `listTools` beside its tools: not on the
    embedded model (`model` None, or of api "local"), which calls the meta-tool instead of
    the tool it needs (`docs/local-model.md`); every front end that loads a tool folder
    for an agent asks this."""
    return model is not None and model.api != "local"


class _Listable(Protocol):
    """What `listTools` reads of a `ToolStore` (so this module need not import the store)."""

    @property
    def tools(self) -> Mapping[str, AgentTool]: ...


def list_tools_tool(store: _Listable) -> AgentTool:
    """A `listTools` tool bound to `store`: lists its tools at call time.

    The text is `Available tools (N):` then `- name: label — description`, one a line (the
    description on one line). `details` holds `{"count": N, "names": [...]}`. It also lets the
    model check for a name collision before calling `writeTool`.
    """

    async def execute(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        tools = list(store.tools.values())
        return AgentToolResult.text(
            format_tool_list(tools),
            details={"count": len(tools), "names": [t.name for t in tools]},
        )

    return AgentTool(
        name=LIST_TOOLS_NAME,
        label="List tools",
        description=(
            "List the tools available to you, with a short description of each. "
            "Check it before creating a new tool, to avoid a name that is taken."
        ),
        input_schema={"type": "object", "properties": {}},
        execute=execute,
        parallel=True,
    )


def format_tool_list(tools: list[AgentTool]) -> str:
    """`Available tools (N):` and one `- name: label — description` line per tool."""
    lines = [f"Available tools ({len(tools)}):"]
    for tool in tools:
        description = " ".join(tool.description.split())
        lines.append(f"- {tool.name}: {tool.label} — {description}")
    return "\n".join(lines)
