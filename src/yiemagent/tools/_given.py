"""A tool as a caller gives one: an `AgentTool`, or a typed function that becomes one as
`@tool` makes it (DESIGN R-4.3). Every place that takes tools (`Agent(tools=...)`,
`agent.state.tools`, a run's `tools=`, `ToolStore.register`) converts through
`to_agent_tool`, so a function given bare is the same tool as the function decorated."""

from __future__ import annotations

from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.tools.decorator import tool
from yiemagent.types.tools import AgentTool

__all__ = ["to_agent_tool"]


def to_agent_tool(item: Any) -> AgentTool:
    """`item` as an `AgentTool`.

    Args:
        item: an `AgentTool` (returned as it is), or a function, plain or async (also a
            `functools.partial` or an object with `__call__`): its tool is the one `@tool`
            builds with no options (name, description and schema from the function).

    Returns:
        The tool.

    Raises:
        ConfigError: `item` is neither a tool nor a function (a class counts as neither:
            it is more likely a mistake than a tool), or is a function `@tool` refuses
            (`@tool`'s own message: e.g. a `*args` parameter, a hint with no JSON Schema).
    """
    if isinstance(item, AgentTool):
        return item
    if not callable(item) or isinstance(item, type):
        raise ConfigError(
            f"tools holds {type(item).__name__} {item!r:.80}, not a tool: give an AgentTool "
            "or a typed function (decorated with @tool, or bare); an Agent is offered as a "
            "tool with agent.as_tool()"
        )
    built: AgentTool = tool(item)
    return built
