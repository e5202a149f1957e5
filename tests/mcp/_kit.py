"""Running MCP tools through the public tool pipeline (`execute_tool_calls`, DESIGN R-4.1)."""

from __future__ import annotations

from typing import Any

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.loop import execute_tool_calls
from yiemagent.tools import ToolStore
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    TextContent,
    ToolResultMessage,
)
from yiemagent.types.config import DEFAULT_MAX_TOOL_RESULT_CHARS

MODEL = FauxModel([]).model


async def run_calls(
    store: ToolStore,
    *calls: tuple[str, dict[str, Any]],
    signal: AbortSignal | None = None,
    tool_timeout_s: float | None = None,
    events: list[AgentEvent] | None = None,
    max_tool_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS,
) -> list[ToolResultMessage]:
    """Run `calls` as one batch of one assistant message; returns its result messages."""
    message = faux_message(*[faux_tool_call(name, args) for name, args in calls])
    context = AgentContext(tools=list(store.tools.values()))
    config = AgentLoopConfig(
        model=MODEL, tool_timeout_s=tool_timeout_s, max_tool_result_chars=max_tool_result_chars
    )
    seen = events if events is not None else []

    async def emit(event: AgentEvent) -> None:
        seen.append(event)

    batch = await execute_tool_calls(context, message, config, signal or AbortSignal(), emit)
    assert [m.tool_call_id for m in batch.messages] == [c.id for c in message.tool_calls]
    return batch.messages


def text(message: ToolResultMessage) -> str:
    return "\n".join(b.text for b in message.content if isinstance(b, TextContent))
