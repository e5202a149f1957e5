"""Helpers for the team tests (DESIGN §17): scripted agents on the faux model, tools that
record what they saw, and the provider-transcript check of the approval tests."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import Agent, AgentTool, AssistantMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import Usage

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


def scripted(name: str, responses: list[Any], **kwargs: Any) -> tuple[Agent[Any], FauxModel]:
    """An agent named `name` answering with `responses` (a FauxModel's script)."""
    fm = FauxModel(responses)
    return Agent(f"You are {name}.", fm.model, stream_fn=fm.stream_fn, name=name, **kwargs), fm


def calls(*pairs: tuple[str, dict[str, Any]], usage: Usage | None = None) -> AssistantMessage:
    """One assistant message calling each (tool, arguments)."""
    message = faux_message(*(faux_tool_call(name, args) for name, args in pairs))
    if usage is not None:
        message.usage = usage
    return message


def answer(text: str, usage: Usage | None = None) -> AssistantMessage:
    message = faux_message(text)
    message.usage = usage or Usage()
    return message


def slow_tool(name: str, log: list[tuple[str, str, float]], delay_s: float = 0.3) -> AgentTool:
    """An async tool that logs (name, "start"/"end", time) around a sleep of `delay_s`."""

    async def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        loop = asyncio.get_running_loop()
        log.append((name, "start", loop.time()))
        await asyncio.sleep(delay_s)
        log.append((name, "end", loop.time()))
        return f"{name} done"

    return AgentTool(name, name, f"the {name} tool", SCHEMA, execute, parallel=True)
