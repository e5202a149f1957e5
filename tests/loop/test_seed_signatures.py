"""DESIGN §10: the seeds' lower-layer functions take the seeds' argument shapes — `signal=None`
means "no abort" and `emit` may be a plain function — and each tool call's signal is a
`child()` of the run's."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.loop._kit import MODEL, call, make_tool, message, result_text, texts
from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentToolResult,
    AssistantMessage,
    ConfigError,
    ExecutedOutcome,
    PreparedToolCall,
    UserMessage,
    execute_prepared_tool_call,
    execute_tool_calls,
    execute_tool_calls_parallel,
    execute_tool_calls_sequential,
    finalize_executed_tool_call,
    prepare_tool_call,
    run_agent_loop,
    stream_assistant_response,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.loop import fail_tool_calls


def updating_tool() -> Any:
    async def execute(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
        on_update(AgentToolResult.text("halfway"))
        return "done"

    return make_tool("u", execute)


async def test_execute_prepared_tool_call_with_no_signal_and_a_plain_emit() -> None:
    """Failed before with AttributeError: 'NoneType' object has no attribute 'add_listener'."""
    seen: list[AgentEvent] = []
    prepared = PreparedToolCall(updating_tool(), call("u"), {})
    outcome = await execute_prepared_tool_call(prepared, None, seen.append)
    assert not outcome.is_error and result_text(outcome.result) == "done"
    assert [e.type for e in seen] == ["tool_execution_update"]
    assert (await execute_prepared_tool_call(prepared)).is_error is False  # emit left out


async def test_execute_tool_calls_with_no_signal_and_a_plain_lambda() -> None:
    """Failed before with TypeError: object NoneType can't be used in 'await' expression."""
    context = AgentContext(tools=[updating_tool(), make_tool("b")])
    msg = message(call("u"), call("b"))
    config = AgentLoopConfig(model=MODEL)
    batch = await execute_tool_calls(context, msg, config, None, lambda e: None)
    assert texts(batch) == ["done", "ok b"]
    kinds: list[str] = []
    batch = await execute_tool_calls(context, msg, config, None, lambda e: kinds.append(e.type))
    assert texts(batch) == ["done", "ok b"]
    assert kinds.count("tool_execution_start") == 2 and kinds.count("message_end") == 2
    assert texts(await execute_tool_calls(context, msg, config)) == ["done", "ok b"]


async def test_the_schedules_and_fail_tool_calls_take_a_plain_emit_and_no_signal() -> None:
    context = AgentContext(tools=[make_tool("a"), make_tool("b")])
    msg = message(call("a"), call("b"))
    config = AgentLoopConfig(model=MODEL)
    for schedule in (execute_tool_calls_sequential, execute_tool_calls_parallel):
        seen: list[AgentEvent] = []
        batch = await schedule(context, msg, msg.tool_calls, config, None, seen.append)
        assert texts(batch) == ["ok a", "ok b"]
        assert [e.type for e in seen].count("tool_execution_end") == 2
    seen = []
    failed = await fail_tool_calls(msg.tool_calls, "not run", seen.append)
    assert texts(failed) == ["not run", "not run"] and len(seen) == 8


async def test_prepare_and_finalize_with_no_signal_give_the_hooks_a_live_one() -> None:
    signals: list[AbortSignal] = []

    def before(ctx: Any, signal: AbortSignal) -> None:
        signals.append(signal)

    def after(ctx: Any, signal: AbortSignal) -> None:
        signals.append(signal)

    config = AgentLoopConfig(model=MODEL, before_tool_call=before, after_tool_call=after)
    context = AgentContext(tools=[make_tool("a")])
    msg = message(call("a"))
    prepared = await prepare_tool_call(context, msg, call("a"), config)
    assert isinstance(prepared, PreparedToolCall)
    executed = ExecutedOutcome(AgentToolResult.text("x"), False)
    finalized = await finalize_executed_tool_call(context, msg, prepared, executed, config)
    assert result_text(finalized.result) == "x"
    assert len(signals) == 2 and all(isinstance(s, AbortSignal) and not s.aborted for s in signals)


async def test_stream_assistant_response_and_run_agent_loop_take_plain_sinks() -> None:
    fm = FauxModel(["hello", "again"])
    seen: list[AgentEvent] = []
    config = AgentLoopConfig(model=fm.model)
    answer = await stream_assistant_response(
        AgentContext(messages=[]), config, None, seen.append, fm.stream_fn
    )
    assert answer.text == "hello"
    assert seen[0].type == "message_start" and seen[-1].type == "message_end"
    seen.clear()
    new = await run_agent_loop(
        [UserMessage("hi")], AgentContext(), config, seen.append, None, fm.stream_fn
    )
    last = new[-1]
    assert isinstance(last, AssistantMessage) and last.text == "again"
    assert seen[-1].type == "agent_end"


async def test_each_tool_call_signal_is_a_child_of_the_runs() -> None:
    seen: list[AbortSignal] = []

    async def aborts_itself(tool_call_id: str, args: Any, signal: AbortSignal, on: Any) -> str:
        seen.append(signal)
        signal.abort("the tool's own")  # touches nothing else
        return "self-aborted"

    async def looks(tool_call_id: str, args: Any, signal: AbortSignal, on: Any) -> str:
        seen.append(signal)
        return "aborted" if signal.aborted else "live"

    run = AbortSignal()
    context = AgentContext(tools=[make_tool("a", aborts_itself), make_tool("b", looks)])
    config = AgentLoopConfig(model=MODEL, tool_execution="sequential")
    batch = await execute_tool_calls(context, message(call("a"), call("b")), config, run)
    assert texts(batch) == ["self-aborted", "live"]
    assert not run.aborted and seen[0] is not run and seen[1] is not run
    assert run._listeners == [] and run._children == {}  # finished calls leave none

    async def waits(tool_call_id: str, args: Any, signal: AbortSignal, on: Any) -> str:
        await signal.wait()
        return f"stopped: {signal.reason}"

    context = AgentContext(tools=[make_tool("w", waits), make_tool("w2", waits)])
    asyncio.get_running_loop().call_later(0.05, run.abort, "user")
    batch = await execute_tool_calls(context, message(call("w"), call("w2")), config, run)
    assert texts(batch) == ["stopped: user", "Tool call skipped: the run was aborted"]


async def test_many_tool_calls_leave_no_listeners_on_the_run_signal() -> None:
    fm = FauxModel(
        [faux_message(*(faux_tool_call("a", {}) for _ in range(5))) for _ in range(4)] + ["end"]
    )
    run = AbortSignal()
    context = AgentContext(tools=[make_tool("a")])
    await run_agent_loop(
        [], context, AgentLoopConfig(model=fm.model), lambda e: None, run, fm.stream_fn
    )
    assert run._listeners == [] and run._children == {}


async def test_hooks_that_leave_out_the_signal_are_called_without_it() -> None:
    # pi's hooks are JavaScript callbacks that ignore the signal they are not asked for
    # (`transformContext: async (messages) => ...`), and pydantic-ai's history processors
    # may take the messages alone; a Python hook of one argument failed every call.
    seen: list[str] = []

    async def transform(messages: list[Any]) -> list[Any]:
        seen.append("transform")
        return messages

    def before(ctx: Any) -> None:
        seen.append(f"before {ctx.tool_call.name}")

    def after(ctx: Any) -> Any:
        seen.append(f"after {ctx.tool_call.name}")
        return {"content": "shaped"}

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "done"])
    context = AgentContext("s", [], [make_tool("t")])
    config = AgentLoopConfig(
        model=MODEL, transform_context=transform, before_tool_call=before, after_tool_call=after
    )
    new = await run_agent_loop(
        [UserMessage("go")], context, config, lambda e: None, None, fm.stream_fn
    )

    assert seen == ["transform", "before t", "after t", "transform"]
    assert texts_of_results(new) == ["shaped"] and new[-1].text == "done"  # type: ignore[union-attr]


def test_a_hook_that_takes_neither_shape_is_refused_at_construction() -> None:
    with pytest.raises(ConfigError, match=r"before_tool_call must take \(context\) or"):
        AgentLoopConfig(model=MODEL, before_tool_call=lambda: None)
    with pytest.raises(ConfigError, match=r"transform_context must take \(messages\) or"):
        AgentLoopConfig(model=MODEL, transform_context=lambda a, b, c: a)


def texts_of_results(messages: list[Any]) -> list[str]:
    return [
        "".join(getattr(c, "text", "") for c in m.content)
        for m in messages
        if getattr(m, "role", None) == "toolResult"
    ]
