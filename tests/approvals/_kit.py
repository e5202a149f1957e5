"""Helpers for the approval tests: tools that record their runs, and a check that a
provider transcript pairs every tool call with exactly one result (R-4.1)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from yiemagent import Agent, AgentTool, AssistantMessage, Message, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import SessionStore

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


def recording_tool(
    name: str,
    ran: list[str],
    *,
    requires_approval: Any = False,
    delay_s: float = 0.0,
    timeout_s: float | None = None,
) -> AgentTool:
    async def execute(call_id: str, args: dict[str, Any], *_: Any) -> str:
        ran.append(call_id)
        if delay_s:
            await asyncio.sleep(delay_s)
        return f"{name} ran with {args}"

    return AgentTool(
        name,
        name,
        f"the {name} tool",
        SCHEMA,
        execute,
        parallel=True,
        timeout_s=timeout_s,
        requires_approval=requires_approval,
    )


def stored_agent(fm: FauxModel, store: SessionStore, ran: list[str]) -> Agent[Any]:
    """An Agent on session "s" of `store`, answered by `fm`, whose one tool `rm` needs
    approval and records its runs in `ran`: two of them stand for two processes."""
    return Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[recording_tool("rm", ran, requires_approval=True)],
        session_store=store,
        session_id="s",
    )


def transcript_problems(messages: Sequence[Message]) -> list[str]:
    """What a provider would reject: each assistant message's tool calls must be followed,
    before the next assistant or user message, by exactly one result per call and no other
    result."""
    problems: list[str] = []
    open_calls: dict[str, int] | None = None
    for index, message in enumerate(messages):
        if isinstance(message, ToolResultMessage):
            if open_calls is None or message.tool_call_id not in open_calls:
                problems.append(f"{index}: orphan result {message.tool_call_id}")
            else:
                open_calls[message.tool_call_id] += 1
            continue
        if open_calls is not None:
            problems.extend(
                f"{index}: call {c} answered {n} times" for c, n in open_calls.items() if n != 1
            )
            open_calls = None
        if isinstance(message, AssistantMessage) and message.tool_calls:
            open_calls = {call.id: 0 for call in message.tool_calls}
    if open_calls is not None:
        problems.extend(
            f"end: call {c} answered {n} times" for c, n in open_calls.items() if n != 1
        )
    return problems
