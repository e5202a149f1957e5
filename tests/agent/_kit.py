"""Small helpers shared by the Agent tests (public API only)."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import Agent, AgentEvent, AgentTool, UserMessage
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def make_tool(name: str, execute: Any, *, parallel: bool = False) -> AgentTool:
    return AgentTool(name, name, f"the {name} tool", SCHEMA, execute, parallel=parallel)


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def user_texts(messages: list[Any]) -> list[str]:
    """The text of each user message, in order."""
    return [text_of(m.content) for m in messages if isinstance(m, UserMessage)]


class EventWaiter:
    """Subscribe it to an agent; `await waiter.wait_for("tool_execution_start")`."""

    def __init__(self, agent: Agent) -> None:
        self.events: list[AgentEvent] = []
        self._waiting: dict[str, asyncio.Event] = {}
        agent.subscribe(self)

    def __call__(self, event: AgentEvent, signal: Any) -> None:
        self.events.append(event)
        flag = self._waiting.get(event.type)
        if flag is not None:
            flag.set()

    async def wait_for(self, kind: str) -> None:
        if any(e.type == kind for e in self.events):
            return
        flag = self._waiting.setdefault(kind, asyncio.Event())
        await asyncio.wait_for(flag.wait(), timeout=5)

    def types(self) -> list[str]:
        return [e.type for e in self.events]
