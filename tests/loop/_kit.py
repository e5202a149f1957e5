"""Shared helpers for the tool-call pipeline tests (DESIGN §4). No tests live here."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    Model,
    TextContent,
    ToolCall,
    ToolCallBatch,
    execute_tool_calls,
)

MODEL = Model(id="test", provider="test", api="faux")
SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def make_tool(
    name: str,
    execute: Callable[..., Any] | None = None,
    *,
    parallel: bool = True,
    schema: dict[str, Any] | None = None,
    **kwargs: Any,
) -> AgentTool:
    """A tool; by default an async one answering `ok <name>`."""

    async def default(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any
    ) -> str:
        return f"ok {name}"

    return AgentTool(
        name=name,
        label=name,
        description=f"test tool {name}",
        input_schema=schema if schema is not None else SCHEMA,
        execute=execute or default,
        parallel=parallel,
        **kwargs,
    )


def sleeper(
    name: str, seconds: float, *, plain: bool = False, parallel: bool = True, **kw: Any
) -> AgentTool:
    """A tool that waits `seconds` (asyncio.sleep, or time.sleep on its thread) and answers."""
    if plain:

        def execute_plain(
            tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any
        ) -> str:
            time.sleep(seconds)
            return f"{name} done"

        return make_tool(name, execute_plain, parallel=parallel, **kw)

    async def execute(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any
    ) -> str:
        await asyncio.sleep(seconds)
        return f"{name} done"

    return make_tool(name, execute, parallel=parallel, **kw)


def call(name: str, arguments: Any = None, id: str | None = None) -> ToolCall:
    return ToolCall(
        id=id if id is not None else f"id_{name}",
        name=name,
        arguments=arguments if arguments is not None else {},
    )


def message(*calls: ToolCall) -> AssistantMessage:
    return AssistantMessage(content=[TextContent("calling"), *calls], stop_reason="toolUse")


class Recorder:
    """An event sink that records every event with its arrival time and thread."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.times: list[float] = []
        self.threads: list[int] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        self.times.append(time.perf_counter())
        self.threads.append(threading.get_ident())

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]

    def kinds(self) -> list[str]:
        return [e.type for e in self.events]


async def run_batch(
    tools: Sequence[AgentTool],
    *calls: ToolCall,
    signal: AbortSignal | None = None,
    recorder: Recorder | None = None,
    **config: Any,
) -> tuple[ToolCallBatch, Recorder, AssistantMessage]:
    """Run one batch through `execute_tool_calls`; returns the batch, the events, the message."""
    rec = recorder or Recorder()
    msg = message(*calls)
    batch = await execute_tool_calls(
        AgentContext(tools=list(tools)),
        msg,
        AgentLoopConfig(model=MODEL, **config),
        signal or AbortSignal(),
        rec,
    )
    return batch, rec, msg


def texts(batch: ToolCallBatch) -> list[str]:
    """The text of each result message, in order."""
    return ["".join(getattr(c, "text", "") for c in m.content) for m in batch.messages]


def result_text(result: AgentToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)
