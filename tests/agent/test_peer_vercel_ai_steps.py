"""The AI SDK's generateText/streamText tool-loop cases (vercel/ai
packages/ai/src/generate-text/generate-text.test.ts: stopWhen, onStepStart/onStepFinish,
abortSignal, toolOrder, tool execution errors, invalid tool calls, preliminary results,
needsApproval) on the Agent (R-4.4, R-4.5, R-5.1, R-5.5, R-5.7).

A step is a turn: `turn_start` is onStepStart, `turn_end` onStepFinish, `max_turns`
stopWhen(stepCountIs(n)). Where yiemagent differs by choice: an abort ends the run with its
"aborted" message (the AI SDK rejects the promise); a preliminary result is an `on_update`
that listeners see as `tool_execution_update`; `repairToolCall` has no twin, the error
result tells the model how to repair its call (docs/tools.md)."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import AgentTool, AgentToolResult, TextContent, ToolResultMessage, Usage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.ai.transform import transform_messages
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "string"}},
    "required": ["value"],
}


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def tool_one(ran: list[Any]) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(args["value"])
        return "result1"

    return AgentTool("tool1", "tool1", "the first tool", SCHEMA, execute)


def step(usage: int, *content: Any) -> Any:
    message = faux_message(*content)
    message.usage = Usage(input=usage, output=usage, total_tokens=2 * usage)
    return message


async def test_two_steps_text_from_the_last_and_usage_from_both() -> None:
    ran: list[Any] = []
    fm = FauxModel(
        [step(10, faux_tool_call("tool1", {"value": "value"})), step(5, faux_text("Hello"))]
    )
    agent = faux_agent(fm, tools=[tool_one(ran)])
    waiter = EventWaiter(agent)

    reply = await agent.prompt("test-input")

    assert reply.text == "Hello" and ran == ["value"]
    assert reply.usage.input == 5  # the final step's own usage ...
    total = Usage()
    for event in waiter.events:
        if event.type == "message_end" and event.message.role == "assistant":
            total.add(event.message.usage)
    assert (total.input, total.output) == (15, 15)  # ... and the steps' sum
    assert [e.type for e in waiter.events].count("turn_end") == 2


async def test_each_step_starts_before_its_model_call_and_ends_after_its_tools() -> None:
    ran: list[Any] = []
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("tool1", {"value": "a"}), faux_tool_call("tool1", {"value": "b"})
            ),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[tool_one(ran)])
    waiter = EventWaiter(agent)

    await agent.prompt("go")

    kinds = [
        e.type
        for e in waiter.events
        if e.type in ("turn_start", "turn_end", "tool_execution_end")
        or (e.type == "message_start" and e.message.role == "assistant")
    ]
    assert kinds == [
        "turn_start",
        "message_start",
        "tool_execution_end",
        "tool_execution_end",
        "turn_end",
        "turn_start",
        "message_start",
        "turn_end",
    ]
    first_end = next(e for e in waiter.events if e.type == "turn_end")
    assert [r.tool_call_id for r in first_end.tool_results] == [
        c.id for c in first_end.message.content if c.type == "toolCall"
    ]


async def test_a_step_limit_runs_the_last_steps_tools_and_stops() -> None:
    ran: list[Any] = []
    calling = [faux_message(faux_tool_call("tool1", {"value": str(n)})) for n in range(3)]
    fm = FauxModel([*calling, "never asked"])
    agent = faux_agent(fm, tools=[tool_one(ran)], max_turns=2)
    waiter = EventWaiter(agent)

    await agent.prompt("go")

    assert fm.call_count == 2 and ran == ["0", "1"]
    assert waiter.events[-1].reason == "max_turns"


async def test_the_abort_reaches_a_running_tool_and_every_call_is_answered() -> None:
    saw_abort = asyncio.Event()
    started = asyncio.Event()

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        started.set()
        await signal.wait()
        saw_abort.set()
        return "stopped early"

    tool = AgentTool("slow", "slow", "waits", SCHEMA, execute)
    fm = FauxModel([faux_message(faux_tool_call("slow", {"value": "x"})), "never asked"])
    agent = faux_agent(fm, tools=[tool])

    run = asyncio.ensure_future(agent.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort("user pressed stop")
    reply = await asyncio.wait_for(run, 5)

    assert saw_abort.is_set() and fm.call_count == 1
    assert reply.stop_reason == "aborted"
    assert len(results_of(agent)) == 1


async def test_a_tool_time_limit_aborts_that_tools_signal() -> None:
    seen: list[bool] = []

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        try:
            await asyncio.sleep(5)
        finally:
            seen.append(signal.aborted)
        return "late"

    tool = AgentTool("slow", "slow", "waits", SCHEMA, execute, timeout_s=0.05)
    fm = FauxModel([faux_message(faux_tool_call("slow", {"value": "x"})), "went on"])
    agent = faux_agent(fm, tools=[tool])

    reply = await agent.prompt("go")

    assert reply.text == "went on" and seen == [True]
    (result,) = results_of(agent)
    assert result.is_error and "timed out" in text_of(result.content)


async def test_tools_go_to_the_model_in_the_order_they_were_given() -> None:
    names = ["zeta", "alpha", "mid", "beta"]
    tools = [AgentTool(n, n, n, SCHEMA, lambda *a: "ok") for n in names]
    fm = FauxModel(["ok"])

    await faux_agent(fm, tools=tools).prompt("go")

    assert [t.name for t in fm.contexts[0].tools] == names


async def test_a_tool_error_is_a_result_the_next_step_sends() -> None:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError("test error")

    tool = AgentTool("tool1", "tool1", "breaks", SCHEMA, execute)
    fm = FauxModel([faux_message(faux_tool_call("tool1", {"value": "value"}, id="c1")), "ok"])
    agent = faux_agent(fm, tools=[tool])

    await agent.prompt("go")

    sent = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_call_id, m.is_error, text_of(m.content)) for m in sent] == [
        ("c1", True, "test error")
    ]


async def test_an_invalid_call_never_runs_and_the_model_reads_why() -> None:
    ran: list[Any] = []
    fm = FauxModel(
        [
            faux_message(faux_tool_call("tool1", {"value": 1234})),
            faux_message(faux_tool_call("tool1", {"value": "1234"})),
            "ok",
        ]
    )
    agent = faux_agent(fm, tools=[tool_one(ran)])

    await agent.prompt("go")

    assert ran == ["1234"]  # only the repaired call ran
    invalid, repaired = results_of(agent)
    assert invalid.is_error and not repaired.is_error
    text = text_of(invalid.content)
    assert "$.value" in text and "1234 is not of type 'string'" in text
    assert 'Received: {"value": 1234}' in text


async def test_preliminary_results_reach_listeners_and_only_the_final_one_is_stored() -> None:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        for status in ("loading", "half"):
            on_update(AgentToolResult([TextContent(status)]))
            await asyncio.sleep(0)
        return AgentToolResult([TextContent("final")])

    tool = AgentTool("cli", "cli", "reports progress", SCHEMA, execute)
    fm = FauxModel([faux_message(faux_tool_call("cli", {"value": "x"})), "ok"])
    agent = faux_agent(fm, tools=[tool])
    waiter = EventWaiter(agent)

    await agent.prompt("go")

    updates = [
        text_of(e.partial_result.content)
        for e in waiter.events
        if e.type == "tool_execution_update"
    ]
    assert updates == ["loading", "half"]
    (result,) = results_of(agent)
    assert text_of(result.content) == "final"
    kinds = [e.type for e in waiter.events if e.type.startswith("tool_execution")]
    assert kinds[-1] == "tool_execution_end"


async def test_a_call_that_needs_approval_stops_after_one_step() -> None:
    ran: list[Any] = []

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(args["value"])
        return "paid"

    tool = AgentTool(
        "pay",
        "pay",
        "pays",
        SCHEMA,
        execute,
        requires_approval=lambda args: args["value"] != "small",
    )
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("pay", {"value": "small"}), faux_tool_call("pay", {"value": "big"})
            ),
            "never asked",
        ]
    )
    agent = faux_agent(fm, tools=[tool])
    waiter = EventWaiter(agent)

    await agent.prompt("pay both")

    assert fm.call_count == 1 and ran == ["small"]
    assert waiter.events[-1].reason == "awaiting_approval"
    assert [p.arguments for p in agent.pending_approvals] == [{"value": "big"}]


async def test_an_answer_aborted_mid_stream_is_kept_but_never_sent_again() -> None:
    fm = FauxModel(["a long answer written slowly in many chunks", "fresh"], delay_s=0.02)
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)

    run = asyncio.ensure_future(agent.prompt("first"))
    await waiter.wait_for("message_update")
    agent.abort()
    cut = await run
    reply = await agent.prompt("second")

    assert cut.stop_reason == "aborted" and 0 < len(cut.text) < 40
    assert agent.state.messages[1] is cut  # the transcript keeps what was said
    assert reply.text == "fresh"
    sent = transform_messages(fm.contexts[1].messages, fm.model)
    assert [(m.role, text_of(m.content)) for m in sent] == [("user", "first"), ("user", "second")]
