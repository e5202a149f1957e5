"""A steering message that arrives while a batch runs, in the case pi-mono's
agent-loop.test.ts checks ("should inject queued messages and skip remaining tool calls").

By choice (docs/agent.md, "Queues"): the seeds' loop (pi-agent-core 0.84) polls steering at
the turn boundary, so every call of the batch runs and is answered, and the steering
message opens the next turn. Later pi polls after each call and skips the rest, each
answered "Skipped due to queued user message."; here a steering message never costs the
model the results it asked for."""

from __future__ import annotations

from typing import Any

from yiemagent import (
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    ToolExecutionEndEvent,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "string"}},
    "required": ["value"],
}


async def test_steering_after_the_first_call_lets_the_batch_finish_then_opens_a_turn() -> None:
    executed: list[str] = []

    async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        executed.append(args["value"])
        return AgentToolResult(content=f"ok:{args['value']}")

    delivered = False

    def steering() -> list[AgentMessage]:
        nonlocal delivered
        if executed and not delivered:
            delivered = True
            return [UserMessage("interrupt")]
        return []

    calls = [
        faux_tool_call("echo", {"value": "first"}, id="tool-1"),
        faux_tool_call("echo", {"value": "second"}, id="tool-2"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    context = AgentContext("", [], [AgentTool("echo", "Echo", "Echo tool", SCHEMA, echo)])
    config = AgentLoopConfig(
        model=fm.model, tool_execution="sequential", get_steering_messages=steering
    )
    stream = agent_loop([UserMessage("start")], context, config, stream_fn=fm.stream_fn)
    events = [event async for event in stream]
    messages = await stream.result()

    assert executed == ["first", "second"]
    ends = [e for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert [(e.tool_call_id, e.is_error) for e in ends] == [("tool-1", False), ("tool-2", False)]
    second_call = fm.contexts[1].messages
    assert [m.role for m in second_call] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
    ]
    assert text_of(second_call[-1].content) == "interrupt"
    results = [m for m in messages if isinstance(m, ToolResultMessage)]
    assert [text_of(r.content) for r in results] == ["ok:first", "ok:second"]
    assert text_of(messages[-1].content) == "done"
