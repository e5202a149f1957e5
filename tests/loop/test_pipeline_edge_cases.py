"""Cases from other agent frameworks' bug reports and test suites, through the public API:
a cancelled run task, tools raising `BaseException`s, hooks replacing arguments, partial
terminate (DESIGN R-4.1)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallContext,
    MessageEndEvent,
    MessageInputError,
    TextContent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnEndEvent,
    UserMessage,
    agent_loop,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def make_tool(name: str, execute: Any, *, parallel: bool = False, schema: Any = None) -> AgentTool:
    return AgentTool(name, name, f"the {name} tool", schema or SCHEMA, execute, parallel=parallel)


async def slow(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
    await asyncio.sleep(5)
    return "slow done"


async def quick(tool_call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> str:
    return "quick done"


def calls_and_results(messages: list[Any]) -> tuple[list[str], list[str]]:
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    return calls, results


def ignore(event: AgentEvent) -> None:
    pass


def end_reason(events: list[AgentEvent]) -> str:
    end = events[-1]
    assert isinstance(end, AgentEndEvent)
    return end.reason


def check_event_pairs(events: list[AgentEvent]) -> None:
    """Each tool call: one start, one end; each message_start has its message_end; the
    stream closes with turn_end then agent_end."""
    starts = [e.tool_call_id for e in events if e.type == "tool_execution_start"]
    ends = [e.tool_call_id for e in events if e.type == "tool_execution_end"]
    assert sorted(starts) == sorted(ends) and len(set(starts)) == len(starts)
    assert [e.type for e in events][-2:] == ["turn_end", "agent_end"]
    assert sum(e.type == "turn_start" for e in events) == sum(e.type == "turn_end" for e in events)
    assert sum(e.type == "message_end" for e in events) >= 1


async def run_and_cancel(
    tools: list[AgentTool], responses: list[Any], after_s: float, **kw: Any
) -> tuple[AgentContext, list[AgentEvent]]:
    fm = FauxModel(responses, **kw)
    context = AgentContext("sys", [], tools)
    events: list[AgentEvent] = []
    config = AgentLoopConfig(model=fm.model)
    task = asyncio.ensure_future(
        run_agent_loop([UserMessage("go")], context, config, events.append, None, fm.stream_fn)
    )
    await asyncio.sleep(after_s)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return context, events


@pytest.mark.parametrize("parallel", [False, True])
async def test_r4_1_cancelled_run_task_answers_every_tool_call(parallel: bool) -> None:
    """`asyncio.wait_for`/`task.cancel()` around a run is an abort path too: the calls that
    finished keep their results, the others get "cancelled" results, in source order."""
    tools = [
        make_tool("slow", slow, parallel=parallel),
        make_tool("quick", quick, parallel=parallel),
    ]
    message = faux_message(faux_tool_call("quick", {}), faux_tool_call("slow", {}))
    context, events = await run_and_cancel(tools, [message, "never"], 0.1)
    calls, results = calls_and_results(context.messages)
    assert len(calls) == 2 and calls == results
    texts = [text_of(m.content) for m in context.messages if isinstance(m, ToolResultMessage)]
    assert texts[0] == "quick done" and "cancelled" in texts[1]
    check_event_pairs(events)
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "aborted"
    turn_end = events[-2]
    assert isinstance(turn_end, TurnEndEvent)
    assert [r.tool_call_id for r in turn_end.tool_results] == calls


async def test_r4_1_cancel_during_the_model_stream_ends_the_message_and_turn() -> None:
    """A stream cut by cancellation still gets its message_end: an "aborted" message."""
    response = faux_message(faux_text("a long answer " * 20), faux_tool_call("quick", {}))
    context, events = await run_and_cancel(
        [make_tool("quick", quick)], [response], 0.05, chunk_size=2, delay_s=0.01
    )
    assert any(e.type == "message_update" for e in events)
    check_event_pairs(events)
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "aborted"
    message_end = events[-3]
    assert isinstance(message_end, MessageEndEvent) and message_end.message is last


@pytest.mark.parametrize("plain", [True, False])
@pytest.mark.parametrize("kind", [SystemExit, SystemExit(2), "custom"])
async def test_r4_1_tool_raising_a_base_exception_gets_an_error_result(
    plain: bool, kind: Any
) -> None:
    """A tool wrapping a CLI calls `sys.exit` (argparse does on bad input): the model gets an
    error result and the program goes on, instead of the event loop dying."""

    class Custom(BaseException):
        pass

    error = Custom("stop") if kind == "custom" else kind

    def execute_plain(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise error

    async def execute_async(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise error

    tool = make_tool("cli", execute_plain if plain else execute_async)
    fm = FauxModel([faux_message(faux_tool_call("cli", {})), "ok"])
    context = AgentContext("sys", [], [tool])
    stream = agent_loop(
        [UserMessage("go")], context, AgentLoopConfig(model=fm.model), None, fm.stream_fn
    )
    events = [event async for event in stream]
    result = next(m for m in context.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and text_of(result.content).startswith("Tool cli raised ")
    name = "Custom" if kind == "custom" else "SystemExit"
    assert name in text_of(result.content)
    assert end_reason(events) == "stop" and fm.call_count == 2


def test_r4_1_plain_tool_raising_keyboard_interrupt_on_its_thread_is_its_failure() -> None:
    """Ctrl-C is delivered to the main thread only: a worker thread's KeyboardInterrupt is
    the tool's own raise, an error result like any other."""

    def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise KeyboardInterrupt

    async def main() -> list[Any]:
        fm = FauxModel([faux_message(faux_tool_call("t", {})), "ok"])
        context = AgentContext("sys", [], [make_tool("t", execute)])
        config = AgentLoopConfig(model=fm.model)
        return await run_agent_loop(
            [UserMessage("go")], context, config, ignore, None, fm.stream_fn
        )

    messages = asyncio.run(main())
    result = next(m for m in messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "KeyboardInterrupt" in text_of(result.content)


async def test_r4_4_before_hook_may_replace_the_args_object() -> None:
    """`ctx.args = {...}` in `before_tool_call` is honoured, like a change in place."""
    got: list[Any] = []
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        got.append(args)
        return "ok"

    def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> None:
        ctx.args = {**ctx.args, "path": "/sandbox/" + ctx.args["path"]}

    fm = FauxModel([faux_message(faux_tool_call("read", {"path": "a.txt"})), "done"])
    context = AgentContext("sys", [], [make_tool("read", execute, schema=schema)])
    config = AgentLoopConfig(model=fm.model, before_tool_call=before)
    await run_agent_loop([UserMessage("go")], context, config, ignore, None, fm.stream_fn)
    assert got == [{"path": "/sandbox/a.txt"}]


@pytest.mark.parametrize("tool_execution", ["sequential", "parallel"])
async def test_r4_10_some_but_not_all_results_terminate_the_loop_goes_on(
    tool_execution: str,
) -> None:
    def result(terminate: bool) -> Any:
        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
            return AgentToolResult([TextContent(str(terminate))], terminate=terminate)

        return execute

    tools = [
        make_tool("stop", result(True), parallel=True),
        make_tool("go", result(False), parallel=True),
    ]
    fm = FauxModel([faux_message(faux_tool_call("stop", {}), faux_tool_call("go", {})), "answer"])
    context = AgentContext("sys", [], tools)
    config = AgentLoopConfig(model=fm.model, tool_execution=tool_execution)  # type: ignore[arg-type]
    events: list[AgentEvent] = []
    await run_agent_loop([UserMessage("go")], context, config, events.append, None, fm.stream_fn)
    assert fm.call_count == 2
    assert end_reason(events) == "stop"


@pytest.mark.parametrize(
    "returned",
    [
        ["hello"],  # a text in a single-message hook's place
        "hello",  # a bare text: not five one-letter messages
        UserMessage("hello"),  # one message, not a list
    ],
)
async def test_r5_4_steering_hook_returning_one_message_or_a_text(returned: Any) -> None:
    polls = [returned]

    def steering() -> Any:
        return polls.pop() if polls else []

    fm = FauxModel(["first", "second"])
    context = AgentContext("sys", [], [])
    config = AgentLoopConfig(model=fm.model, get_steering_messages=steering)
    events: list[AgentEvent] = []
    await run_agent_loop([UserMessage("go")], context, config, events.append, None, fm.stream_fn)
    users = [text_of(m.content) for m in context.messages if isinstance(m, UserMessage)]
    assert users == ["go", "hello"] and fm.call_count == 1
    assert end_reason(events) == "stop"


@pytest.mark.parametrize("content", ["plain text", ["plain text"]])
async def test_r4_11_text_given_as_result_content_becomes_text_content(content: Any) -> None:
    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return AgentToolResult(content)

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "done"])
    context = AgentContext("sys", [], [make_tool("t", execute)])
    config = AgentLoopConfig(model=fm.model)
    await run_agent_loop([UserMessage("go")], context, config, ignore, None, fm.stream_fn)
    result = next(m for m in context.messages if isinstance(m, ToolResultMessage))
    assert result.content == [TextContent("plain text")]


async def run_one_call(**config: Any) -> ToolResultMessage:
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "done"])
    context = AgentContext("sys", [], [make_tool("t", quick)])
    loop_config = AgentLoopConfig(model=fm.model, **config)
    await run_agent_loop([UserMessage("go")], context, loop_config, ignore, None, fm.stream_fn)
    return next(m for m in context.messages if isinstance(m, ToolResultMessage))


async def test_r4_4_before_hook_may_answer_with_a_plain_dict() -> None:
    """pi's hooks return plain objects; `{"block": True, "reason": ...}` blocks."""
    result = await run_one_call(
        before_tool_call=lambda ctx, signal: {"block": True, "reason": "no"}
    )
    assert result.is_error and text_of(result.content) == "no"


async def test_r4_6_after_hook_may_answer_with_a_plain_dict_and_a_text() -> None:
    def after(ctx: Any, signal: Any) -> Any:
        return {"content": "redacted", "isError": True}

    result = await run_one_call(after_tool_call=after)
    assert result.is_error and result.content == [TextContent("redacted")]


async def test_r4_6_after_hook_returning_something_else_is_named_in_the_error() -> None:
    result = await run_one_call(after_tool_call=lambda ctx, signal: "oops")
    assert result.is_error
    assert text_of(result.content) == (
        "after_tool_call returned str; expected AfterToolCallResult or None"
    )


async def test_r5_2_transform_context_editing_its_list_in_place_leaves_the_transcript() -> None:
    """A pruning transform written as `del messages[:-n]` (or an append) works on its own
    copy; the run's transcript keeps every message."""

    def transform(messages: list[Any], signal: Any) -> list[Any]:
        messages.append(UserMessage("reminder: be brief"))
        del messages[:-2]
        return messages

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "done"])
    context = AgentContext("sys", [], [make_tool("t", quick)])
    config = AgentLoopConfig(model=fm.model, transform_context=transform)
    new = await run_agent_loop([UserMessage("go")], context, config, ignore, None, fm.stream_fn)
    assert [m.role for m in context.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert context.messages == new
    assert [m.role for m in fm.contexts[1].messages] == ["toolResult", "user"]


@pytest.mark.parametrize("hook", ["transform_context", "convert_to_llm"])
async def test_r5_9_a_hook_returning_none_is_named_in_the_error(hook: str) -> None:
    def returns_none(*args: Any) -> None:
        return None

    fm = FauxModel(["never"])
    hooks: dict[str, Any] = {hook: returns_none}
    config = AgentLoopConfig(model=fm.model, **hooks)
    new = await run_agent_loop(
        [UserMessage("go")], AgentContext(), config, ignore, None, fm.stream_fn
    )
    last = new[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert f"{hook} returned None" in (last.error_message or "") and fm.call_count == 0


async def test_r4_5_on_update_with_a_text_is_a_partial_result() -> None:
    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        on_update("half way")
        return "done"

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "ok"])
    context = AgentContext("sys", [], [make_tool("t", execute)])
    events: list[AgentEvent] = []
    config = AgentLoopConfig(model=fm.model)
    await run_agent_loop([UserMessage("go")], context, config, events.append, None, fm.stream_fn)
    update = next(e for e in events if isinstance(e, ToolExecutionUpdateEvent))
    assert update.partial_result.content == [TextContent("half way")]


async def test_r4_5_an_abort_listener_that_raises_does_not_keep_tools_running() -> None:
    """A user's own listener on the run's signal raising must not swallow the abort for the
    tools registered after it."""
    signal = AbortSignal()

    def broken(reason: str | None) -> None:
        raise RuntimeError("listener bug")

    signal.add_listener(broken)

    async def waits(tool_call_id: str, args: Any, tool_signal: AbortSignal, on_update: Any) -> str:
        await asyncio.wait_for(tool_signal.wait(), 2)
        return "stopped on abort"

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "never"])
    context = AgentContext("sys", [], [make_tool("t", waits)])
    config = AgentLoopConfig(model=fm.model)
    run = asyncio.ensure_future(
        run_agent_loop([UserMessage("go")], context, config, ignore, signal, fm.stream_fn)
    )
    await asyncio.sleep(0.05)
    signal.abort("stop")
    new = await asyncio.wait_for(run, 1)
    result = next(m for m in new if isinstance(m, ToolResultMessage))
    assert text_of(result.content) == "stopped on abort"


@pytest.mark.parametrize(
    "prompts",
    ["hello", ["hello"], UserMessage("hello"), {"role": "user", "content": "hello"}],
)
async def test_r5_1_a_text_or_one_message_as_prompts_is_one_user_message(prompts: Any) -> None:
    """`agent_loop("hello", ...)` must not put five one-letter messages in the transcript."""
    fm = FauxModel(["hi"])
    context = AgentContext()
    stream = agent_loop(prompts, context, AgentLoopConfig(model=fm.model), None, fm.stream_fn)
    new = await stream.result()
    assert [m.role for m in new] == ["user", "assistant"]
    first = new[0]
    assert isinstance(first, UserMessage) and text_of(first.content) == "hello"


async def test_r5_1_prompts_that_are_not_messages_raise_at_the_call() -> None:
    fm = FauxModel(["hi"])
    config = AgentLoopConfig(model=fm.model)
    for bad in (42, [object()], [{"role": "system", "content": "x"}]):
        with pytest.raises(MessageInputError, match="message") as raised:
            agent_loop(bad, AgentContext(), config, None, fm.stream_fn)  # type: ignore[arg-type]
        assert isinstance(raised.value, TypeError)  # as before the one coercion


async def test_r4_1_asyncio_timeout_around_a_run_still_raises_timeout_error() -> None:
    """`asyncio.timeout` (and TaskGroup) recognise only a plain `CancelledError`: the
    cancellation that leaves a run must be the one it received."""
    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "never"])
    context = AgentContext("sys", [], [make_tool("slow", slow)])
    config = AgentLoopConfig(model=fm.model)
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await run_agent_loop([UserMessage("go")], context, config, ignore, None, fm.stream_fn)
    calls, results = calls_and_results(context.messages)
    assert len(calls) == 1 and calls == results


def test_r4_1_keyboard_interrupt_in_an_async_tool_still_answers_every_call() -> None:
    """A Ctrl-C landing in an async tool (no asyncio.run signal handling) goes on to the
    caller, but the transcript first gets a result for each call and the turn is closed."""

    async def interrupted(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise KeyboardInterrupt

    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("ok", {}), faux_tool_call("t", {}), faux_tool_call("ok", {})
            ),
            "never",
        ]
    )
    context = AgentContext("sys", [], [make_tool("ok", quick), make_tool("t", interrupted)])
    events: list[AgentEvent] = []
    config = AgentLoopConfig(model=fm.model, tool_execution="sequential")

    async def main() -> None:
        await run_agent_loop(
            [UserMessage("go")], context, config, events.append, None, fm.stream_fn
        )

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(main())
    calls, results = calls_and_results(context.messages)
    assert len(calls) == 3 and calls == results
    texts = [text_of(m.content) for m in context.messages if isinstance(m, ToolResultMessage)]
    assert texts == ["quick done", *["Tool call interrupted: KeyboardInterrupt"] * 2]
    check_event_pairs(events)
    assert end_reason(events) == "aborted"


async def test_r4_1_repeated_ids_are_unique_already_in_message_end() -> None:
    """A UI or a session log keyed on `message_end` sees the same ids as the tool events."""
    from yiemagent.ai.providers.faux import faux_duplicate_id_calls

    fm = FauxModel([faux_duplicate_id_calls("t", [{}, {}], id=""), "done"])
    context = AgentContext("sys", [], [make_tool("t", quick)])
    ids_at_end: list[list[str]] = []

    def emit(event: AgentEvent) -> None:
        if isinstance(event, MessageEndEvent) and isinstance(event.message, AssistantMessage):
            ids_at_end.append([c.id for c in event.message.tool_calls])

    config = AgentLoopConfig(model=fm.model)
    await run_agent_loop([UserMessage("go")], context, config, emit, None, fm.stream_fn)
    calls, results = calls_and_results(context.messages)
    assert ids_at_end[0] == calls == results and len(set(calls)) == 2


async def test_r4_4_a_tool_changing_nested_args_leaves_the_recorded_call_alone() -> None:
    """The transcript keeps the arguments the model sent, whatever the tool (or a hook) does
    to the nested lists and objects it received."""
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array"}, "opt": {"type": "object"}},
    }

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        args["items"].append("added by the tool")
        args["opt"]["x"] = 1
        return "ok"

    def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> None:
        ctx.args["opt"]["hook"] = True

    sent = {"items": ["a"], "opt": {}}
    fm = FauxModel([faux_message(faux_tool_call("t", sent)), "done"])
    context = AgentContext("sys", [], [make_tool("t", execute, schema=schema)])
    config = AgentLoopConfig(model=fm.model, before_tool_call=before)
    await run_agent_loop([UserMessage("go")], context, config, ignore, None, fm.stream_fn)
    recorded = context.messages[1]
    assert isinstance(recorded, AssistantMessage)
    assert recorded.tool_calls[0].arguments == {"items": ["a"], "opt": {}}


async def test_r4_4_an_integer_sent_as_3_point_0_reaches_the_tool_as_an_int() -> None:
    """JSON Schema counts 3.0 as an integer; a Python tool slicing with it would fail."""
    got: list[Any] = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        got.append(args)
        return "ok"

    fm = FauxModel([faux_message(faux_tool_call("t", {"n": 3.0, "x": 2.0})), "done"])
    context = AgentContext("sys", [], [make_tool("t", execute, schema=schema)])
    await run_agent_loop(
        [UserMessage("go")], context, AgentLoopConfig(model=fm.model), ignore, None, fm.stream_fn
    )
    assert got == [{"n": 3, "x": 2.0}]
    assert type(got[0]["n"]) is int and type(got[0]["x"]) is float
