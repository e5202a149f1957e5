"""The seeds' tool pipeline and agent loop, sentence by sentence, through the public API.

Each test names the seed passage it pins (seed 000: the YiemAgent tool lifecycle; 002: the
AgentCore loop; 004: the executeToolCalls pseudo-code). Where DESIGN chose otherwise the test
holds DESIGN's choice; the rules themselves are in docs/architecture.md.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.loop._kit import Recorder, call, make_tool, result_text, run_batch, texts
from yiemagent import (
    AbortSignal,
    AfterToolCallContext,
    AgentContext,
    AgentEvent,
    AgentLoopConfig,
    AgentToolResult,
    BeforeToolCallContext,
    TextContent,
    ToolCall,
    ToolResultMessage,
    TurnContext,
    UserMessage,
    prepare_tool_call_arguments,
    run_agent_loop,
    validate_tool_arguments,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

CITY: dict[str, Any] = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
    "required": ["city"],
}


def _call_id(event: Any) -> str:
    """The tool call an event is about (a result message's for message events)."""
    return str(getattr(event, "tool_call_id", None) or event.message.tool_call_id)


def city_tool(**kwargs: Any) -> Any:
    async def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return f"{tool_call_id}: weather in {args['city']}"

    return make_tool("getWeather", execute, schema=CITY, **kwargs)


# ── seed 000 §8.1 / seed 004 prepareToolCallArguments, validateToolArguments ────────────


def test_prepare_tool_call_arguments_returns_the_original_call_without_a_hook() -> None:
    """000 §8.1 step 2: "If no hook or no change, returns original toolCall"."""
    tool = city_tool()
    tc = call("getWeather", {"city": "Tokyo"})
    assert prepare_tool_call_arguments(tool, tc) is tc


def test_prepare_tool_call_arguments_returns_the_call_when_the_hook_changes_nothing() -> None:
    """004: "If the tool has no hook or the hook returns the same object reference, the
    original call is returned unchanged"."""
    same = city_tool(prepare_arguments=lambda args: args)
    equal = city_tool(prepare_arguments=lambda args: dict(args))
    tc = call("getWeather", {"city": "Tokyo"})
    assert prepare_tool_call_arguments(same, tc) is tc
    assert prepare_tool_call_arguments(equal, tc) is tc


def test_prepare_tool_call_arguments_gives_a_call_with_the_prepared_arguments() -> None:
    """004: `merge(toolCall, dict(:arguments => prepared))`: same id and name, the prepared
    arguments; the model's call is left as it was sent."""
    tool = city_tool(prepare_arguments=lambda args: {"city": args["town"].title()})
    tc = call("getWeather", {"town": "tokyo"}, id="call_1")
    prepared = prepare_tool_call_arguments(tool, tc)
    assert isinstance(prepared, ToolCall)
    assert (prepared.id, prepared.name, prepared.arguments) == (
        "call_1",
        "getWeather",
        {"city": "Tokyo"},
    )
    assert tc.arguments == {"town": "tokyo"}


def test_validate_tool_arguments_takes_the_prepared_call() -> None:
    """000 §8.1 step 3: `validateToolArguments(tool, prepared)` with the prepared call; a
    failure raises (prepareToolCall turns it into an error result)."""
    tool = city_tool()
    tc = call("getWeather", {"city": "Tokyo"})
    assert validate_tool_arguments(tool, prepare_tool_call_arguments(tool, tc)) == {"city": "Tokyo"}
    try:
        validate_tool_arguments(tool, call("getWeather", {}))
    except ValueError as error:
        assert "city" in str(error)
    else:
        raise AssertionError("missing required argument accepted")


# ── seed 000 §8.1 step 4 / §14: the beforeToolCall hook ─────────────────────────────────


async def test_before_hook_gets_the_context_fields_and_the_runs_signal() -> None:
    """000 §14: `(msgCtx::beforeToolCallContext, signal)`; the context carries the assistant
    message, the call, the validated args and the agent context."""
    seen: list[tuple[BeforeToolCallContext, Any]] = []
    signal = AbortSignal()
    batch, _, msg = await run_batch(
        [city_tool()],
        call("getWeather", {"city": "Tokyo", "units": None}),
        signal=signal,
        before_tool_call=lambda ctx, sig: seen.append((ctx, sig)),
    )
    ((ctx, sig),) = seen
    assert ctx.assistant_message is msg and ctx.tool_call is msg.tool_calls[0]
    assert ctx.args == {"city": "Tokyo"}  # validated: the optional null dropped
    assert [t.name for t in ctx.context.tools] == ["getWeather"]
    assert isinstance(sig, AbortSignal) and not sig.aborted
    assert texts(batch) == ["id_getWeather: weather in Tokyo"]


async def test_before_hook_answering_the_seeds_dict_blocks_or_allows() -> None:
    """000 §14: `Dict(:block => true, :reason => "...")` blocks with the reason fed back to
    the LLM; `Dict(:block => false)` proceeds (explicit allow)."""
    blocked, _, _ = await run_batch(
        [city_tool()],
        call("getWeather", {"city": "Tokyo"}),
        before_tool_call=lambda ctx, sig: {"block": True, "reason": "no weather today"},
    )
    assert texts(blocked) == ["no weather today"] and blocked.messages[0].is_error
    allowed, _, _ = await run_batch(
        [city_tool()],
        call("getWeather", {"city": "Tokyo"}),
        before_tool_call=lambda ctx, sig: {"block": False},
    )
    assert texts(allowed) == ["id_getWeather: weather in Tokyo"]
    assert not allowed.messages[0].is_error


async def test_the_start_event_comes_before_preparation() -> None:
    """000 §13: `toolExecStartEvent` is emitted "Before `prepareToolCall()` for each tool
    call", so the before hook runs after it, and an unknown tool still gets start and end."""
    rec = Recorder()
    order: list[str] = []

    def before(ctx: BeforeToolCallContext, signal: Any) -> None:
        order.append(f"hook after {rec.kinds()[-1]}")

    batch, _, _ = await run_batch(
        [city_tool()],
        call("getWeather", {"city": "Oslo"}),
        call("nowhere"),
        recorder=rec,
        before_tool_call=before,
        tool_execution="sequential",
    )
    assert order == ["hook after tool_execution_start"]
    starts = [e.tool_name for e in rec.of("tool_execution_start")]
    ends = [(e.tool_name, e.is_error) for e in rec.of("tool_execution_end")]
    assert starts == ["getWeather", "nowhere"]
    assert ends == [("getWeather", False), ("nowhere", True)]
    assert len(batch.messages) == 2


# ── seed 000 §8.2: execute ──────────────────────────────────────────────────────────────


async def test_execute_gets_the_call_id_the_prepared_args_and_a_signal() -> None:
    """000 §3: `execute(toolCallId, args, signal, onPartialResult)`; args "already passed
    through prepareArguments and validateRequiredArgs"."""
    seen: list[Any] = []

    async def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        seen.append((tool_call_id, args, isinstance(signal, AbortSignal), callable(on_update)))
        return "done"

    tool = make_tool(
        "t",
        execute,
        schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        prepare_arguments=lambda raw: {"n": raw["count"]},
    )
    await run_batch([tool], call("t", {"count": "41"}, id="call_abc123"))
    assert seen == [("call_abc123", {"n": 41}, True, True)]


async def test_update_events_carry_the_calls_arguments_as_sent() -> None:
    """000 §8.2: `toolExecUpdateEvent(prep.toolCall.id, prep.toolCall.name,
    prep.toolCall.arguments, partialResult)`: the model's arguments, not the prepared ones."""

    async def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text("1/2"))
        on_update(AgentToolResult.text("2/2"))
        return "done"

    tool = make_tool("t", execute, prepare_arguments=lambda raw: {})
    batch, rec, _ = await run_batch([tool], call("t", {"raw": "x"}, id="c9"))
    updates = rec.of("tool_execution_update")
    assert [(u.tool_call_id, u.tool_name, u.args) for u in updates] == [
        ("c9", "t", {"raw": "x"}),
        ("c9", "t", {"raw": "x"}),
    ]
    assert [u.partial_result.content[0].text for u in updates] == ["1/2", "2/2"]
    assert rec.of("tool_execution_start")[0].args == {"raw": "x"}
    assert texts(batch) == ["done"]


async def test_a_tool_that_raises_after_updates_ends_in_one_error_after_them() -> None:
    """000 §8.2 step 4: on error, pending updates settle, then an error outcome with the
    exception's text; 000 §13: start → updates → end."""

    async def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text("working"))
        raise RuntimeError("disk full")

    batch, rec, _ = await run_batch([make_tool("t", execute)], call("t"))
    tool_kinds = [k for k in rec.kinds() if k.startswith("tool_execution")]
    assert tool_kinds == ["tool_execution_start", "tool_execution_update", "tool_execution_end"]
    assert texts(batch) == ["disk full"] and batch.messages[0].is_error


# ── seed 000 §8.3 / §8.4 / §14: afterToolCall and the end event ──────────────────────────


async def test_after_hook_gets_the_raw_result_and_the_signal() -> None:
    """000 §8.3: `afterToolCallContext(assistantMsg, prep.toolCall, prep.args, result,
    isError, context)` and `signal`."""
    seen: list[tuple[AfterToolCallContext, Any]] = []
    batch, _, msg = await run_batch(
        [city_tool()],
        call("getWeather", {"city": "Rome"}),
        after_tool_call=lambda ctx, sig: seen.append((ctx, sig)),
    )
    ((ctx, sig),) = seen
    assert ctx.assistant_message is msg and ctx.tool_call is msg.tool_calls[0]
    assert ctx.args == {"city": "Rome"} and ctx.is_error is False
    assert result_text(ctx.result) == "id_getWeather: weather in Rome"
    assert [t.name for t in ctx.context.tools] == ["getWeather"]
    assert isinstance(sig, AbortSignal)
    assert texts(batch) == ["id_getWeather: weather in Rome"]


async def test_after_hook_dict_wraps_an_error_in_a_friendlier_message() -> None:
    """000 §14 use case "Wrap an error result in a friendlier message", with the seed's dict
    keys (`:content`, `:isError`); the end event carries the finalized result."""

    async def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        raise ConnectionError("ECONNRESET 10.0.0.7:443 key=sk-secret")

    def after(ctx: AfterToolCallContext, signal: Any) -> dict[str, Any] | None:
        if not ctx.is_error:
            return None
        return {
            "content": [TextContent("The weather service is down; try later.")],
            "isError": False,
        }

    batch, rec, _ = await run_batch([make_tool("w", execute)], call("w"), after_tool_call=after)
    assert texts(batch) == ["The weather service is down; try later."]
    assert batch.messages[0].is_error is False
    (end,) = rec.of("tool_execution_end")
    assert end.is_error is False and result_text(end.result).startswith("The weather")
    kinds = rec.kinds()
    assert kinds.index("tool_execution_end") < kinds.index("message_start")


async def test_after_hook_flipping_terminate_ends_the_batch() -> None:
    """000 §14: "Inspect the result and decide to flip `terminate: true` based on business
    logic"; 000 §10: the batch terminates when every result does."""
    batch, _, _ = await run_batch(
        [make_tool("deploy"), make_tool("notify")],
        call("deploy"),
        call("notify"),
        after_tool_call=lambda ctx, sig: {"terminate": True},
    )
    assert batch.terminate is True
    assert texts(batch) == ["ok deploy", "ok notify"]


# ── seed 000 §9 / 004: sequential and parallel batches ──────────────────────────────────


async def test_sequential_runs_one_call_at_a_time_each_to_its_result_message() -> None:
    """000 §9 sequential: for each call start, prepare, execute, finalize, end, result
    message; the next call starts only after."""
    running: list[str] = []
    overlap: list[bool] = []

    def slow(name: str) -> Any:
        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            overlap.append(bool(running))
            running.append(name)
            await asyncio.sleep(0.02)
            running.remove(name)
            return name

        return make_tool(name, execute, parallel=False)

    batch, rec, _ = await run_batch([slow("a"), slow("b")], call("a"), call("b"))
    assert overlap == [False, False]
    per_call = [(e.type, _call_id(e)) for e in rec.events]
    assert per_call == [
        ("tool_execution_start", "id_a"),
        ("tool_execution_end", "id_a"),
        ("message_start", "id_a"),
        ("message_end", "id_a"),
        ("tool_execution_start", "id_b"),
        ("tool_execution_end", "id_b"),
        ("message_start", "id_b"),
        ("message_end", "id_b"),
    ]
    assert texts(batch) == ["a", "b"]


async def test_parallel_results_keep_the_call_order_whatever_finishes_first() -> None:
    """004 executeToolCallsParallel: "Finalization preserves the original call order so tool
    result messages appear in the same order the assistant requested them"."""

    def after(seconds: float, name: str) -> Any:
        async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            await asyncio.sleep(seconds)
            return name

        return make_tool(name, execute, parallel=True)

    batch, rec, _ = await run_batch(
        [after(0.3, "slow"), after(0.0, "quick")], call("slow"), call("quick")
    )
    assert [e.tool_name for e in rec.of("tool_execution_end")] == ["quick", "slow"]
    assert texts(batch) == ["slow", "quick"]
    assert [m.tool_call_id for m in batch.messages] == ["id_slow", "id_quick"]


# ── seed 000 §10, §11: batch termination and result messages ────────────────────────────


async def test_a_result_message_carries_the_seeds_fields() -> None:
    """000 §1 step 4 / §11: toolCallId, toolName, content, isError, details, timestamp;
    role "toolResult" (DESIGN: integer ms)."""

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("42")], details={"n": 1})

    batch, _, _ = await run_batch([make_tool("t", execute)], call("t", id="call-1"))
    (msg,) = batch.messages
    assert isinstance(msg, ToolResultMessage) and msg.role == "toolResult"
    assert (msg.tool_call_id, msg.tool_name, msg.is_error) == ("call-1", "t", False)
    assert msg.content == [TextContent("42")] and msg.details == {"n": 1}
    assert msg.usage is None and msg.added_tool_names is None
    assert isinstance(msg.timestamp, int) and msg.timestamp > 1_600_000_000_000


# ── seed 002 runAgentLoop / runLoop ─────────────────────────────────────────────────────


async def test_run_agent_loop_returns_prompt_and_turns_and_agent_end_carries_them() -> None:
    """002 runAgentLoop: "Output: new_messages (appended prompts + turns)"; §5 "AgentEndEvent
    ── Final event with all messages"; TurnEndEvent(message, tool_results)."""
    fm = FauxModel([faux_message(faux_tool_call("getWeather", {"city": "Tokyo"})), "Sunny."])
    context = AgentContext("You are a helpful assistant.", [], [city_tool()])
    events: list[AgentEvent] = []
    prompt = UserMessage("What's the weather in Tokyo?")
    new = await run_agent_loop(
        [prompt], context, AgentLoopConfig(model=fm.model), events.append, stream_fn=fm.stream_fn
    )
    assert [m.role for m in new] == ["user", "assistant", "toolResult", "assistant"]
    assert new[0] is prompt
    assert events[-1].type == "agent_end" and list(events[-1].messages) == new
    turn_ends = [e for e in events if e.type == "turn_end"]
    assert turn_ends[0].message is new[1] and list(turn_ends[0].tool_results) == [new[2]]
    assert turn_ends[1].message is new[3] and list(turn_ends[1].tool_results) == []


async def test_the_llm_sees_a_failed_call_as_a_tool_result_and_can_retry() -> None:
    """000 §12: "formatMsgForLLM() → LLM receives error as tool result ... LLM can: retry
    with corrected args"."""
    fm = FauxModel(
        [
            faux_message(faux_tool_call("getWeather", {"town": "Tokyo"}, id="c1")),
            faux_message(faux_tool_call("getWeather", {"city": "Tokyo"}, id="c2")),
            "Sunny.",
        ]
    )
    context = AgentContext("", [], [city_tool()])
    new = await run_agent_loop(
        [UserMessage("weather?")],
        context,
        AgentLoopConfig(model=fm.model),
        lambda e: None,
        stream_fn=fm.stream_fn,
    )
    second_call = fm.contexts[1].messages
    error = second_call[-1]
    assert isinstance(error, ToolResultMessage) and error.is_error
    assert error.tool_call_id == "c1" and "city" in text_of(error.content)
    results = [m for m in new if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.is_error) for r in results] == [("c1", True), ("c2", False)]


async def test_follow_ups_are_polled_only_when_no_tool_calls_remain() -> None:
    """002 runLoop: "Check follow-up messages (processed only after all tool calls
    complete)"; steering is polled at the start and after each turn."""
    polls: list[tuple[str, int]] = []
    fm = FauxModel([faux_message(faux_tool_call("getWeather", {"city": "Oslo"})), "Cold."])

    def steering() -> list[Any]:
        polls.append(("steering", fm.call_count))
        return []

    def follow_ups() -> list[Any]:
        polls.append(("follow_up", fm.call_count))
        return []

    config = AgentLoopConfig(
        model=fm.model, get_steering_messages=steering, get_follow_up_messages=follow_ups
    )
    await run_agent_loop(
        [UserMessage("go")],
        AgentContext("", [], [city_tool()]),
        config,
        lambda e: None,
        stream_fn=fm.stream_fn,
    )
    assert polls == [("steering", 0), ("steering", 1), ("steering", 2), ("follow_up", 2)]


async def test_should_stop_after_turn_sees_the_turn_and_ends_the_run() -> None:
    """002 PrepareNextTurnContext(message, tool_results, context, new_messages) and
    `should_stop_after_turn` → AgentEndEvent (no further model call)."""
    seen: list[TurnContext] = []

    def stop(turn: TurnContext) -> bool:
        seen.append(turn)
        return True

    fm = FauxModel([faux_message(faux_tool_call("getWeather", {"city": "Oslo"})), "never"])
    events: list[AgentEvent] = []
    new = await run_agent_loop(
        [UserMessage("go")],
        AgentContext("", [], [city_tool()]),
        AgentLoopConfig(model=fm.model, should_stop_after_turn=stop),
        events.append,
        stream_fn=fm.stream_fn,
    )
    assert fm.call_count == 1 and len(seen) == 1
    (turn,) = seen
    assert turn.message is new[1] and list(turn.tool_results) == [new[2]]
    assert list(turn.new_messages) == new and turn.context.messages[-1] is new[2]
    assert events[-1].type == "agent_end" and events[-1].reason == "should_stop"


# ── seed 002 AgentLoopConfig and its complete example ───────────────────────────────────


async def test_the_seeds_complete_example_config_runs() -> None:
    """002 "Complete Example": an `AgentLoopConfig` naming every field of the seed's struct
    (`signal = nothing`, `api_key = nothing` included) runs a prompt to its answer."""
    fm = FauxModel([faux_message(faux_tool_call("getWeather", {"city": "Tokyo"})), "Sunny."])
    config = AgentLoopConfig(
        model=fm.model,
        reasoning="medium",
        session_id=None,
        on_payload=None,
        on_response=None,
        transport="auto",
        thinking_budgets=None,
        max_retry_delay_ms=None,
        tool_execution="parallel",
        before_tool_call=lambda ctx, signal: None,
        after_tool_call=lambda ctx, signal: None,
        prepare_next_turn=lambda turn: None,
        convert_to_llm=None,
        transform_context=lambda messages, signal: messages,
        get_api_key=lambda provider: None,
        get_steering_messages=lambda: [],
        get_follow_up_messages=lambda: [],
        should_stop_after_turn=lambda turn: False,
        max_tokens=None,
        temperature=None,
        cache_retention=None,
        headers=None,
        metadata=None,
        signal=None,
        api_key=None,
    )
    events: list[AgentEvent] = []
    new = await run_agent_loop(
        [UserMessage("Hello")],
        AgentContext("sys", [], [city_tool()]),
        config,
        events.append,
        None,
        fm.stream_fn,
    )
    assert [m.role for m in new] == ["user", "assistant", "toolResult", "assistant"]
    assert events[-1].type == "agent_end" and events[-1].reason == "stop"


async def test_a_signal_in_the_config_aborts_a_run_given_none() -> None:
    """002 AgentLoopConfig: "`signal`, `api_key` — Per-request overrides for abort
    handling"; the run answers the call it aborted (DESIGN R-4.1) and ends "aborted"."""
    signal = AbortSignal()
    started = asyncio.Event()

    async def wait(tool_call_id: str, args: Any, tool_signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await tool_signal.wait()
        return "stopped"

    fm = FauxModel([faux_message(faux_tool_call("wait", {})), "never"])
    events: list[AgentEvent] = []

    async def abort_when_started() -> None:
        await started.wait()
        signal.abort("user pressed stop")

    aborter = asyncio.create_task(abort_when_started())
    new = await run_agent_loop(
        [UserMessage("go")],
        AgentContext("", [], [make_tool("wait", wait)]),
        AgentLoopConfig(model=fm.model, signal=signal),
        events.append,
        None,
        fm.stream_fn,
    )
    await aborter
    assert fm.call_count == 1
    assert events[-1].type == "agent_end" and events[-1].reason == "aborted"
    assert [m.role for m in new] == ["user", "assistant", "toolResult"]
    assert AgentLoopConfig(model=fm.model, signal=signal).run_signal(None) is signal
    other = AbortSignal()
    assert AgentLoopConfig(model=fm.model, signal=signal).run_signal(other) is other


async def test_a_result_without_content_is_an_empty_answer_not_a_failure() -> None:
    """004 createToolResultMessage: "Normalizes missing content to an empty array"; a text
    given as the content is one text block (DESIGN R-4.11: content never None)."""

    async def nothing(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return AgentToolResult(content=None)  # type: ignore[arg-type]

    async def bare_text(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return AgentToolResult(content="x" * 1000, details={"kept": True})  # type: ignore[arg-type]

    batch, rec, _ = await run_batch(
        [make_tool("nothing", nothing), make_tool("bare", bare_text)],
        call("nothing"),
        call("bare"),
    )
    assert [(m.content, m.is_error) for m in batch.messages] == [
        ([], False),
        ([TextContent("x" * 1000)], False),
    ]
    assert batch.messages[1].details == {"kept": True}
    assert [e.is_error for e in rec.of("tool_execution_end")] == [False, False]
    capped, _, _ = await run_batch(
        [make_tool("bare", bare_text)], call("bare"), max_tool_result_chars=10
    )
    (text,) = texts(capped)
    assert not capped.messages[0].is_error and len(text) < 1000 and "x" * 5 in text


async def test_the_before_hook_sees_only_calls_that_resolved_and_validated() -> None:
    """000 §8.1: the hook is step 4, after the tool lookup (step 1) and validation (step 3),
    each of which returns its immediate error outcome first; 000 §2: every call still gets
    a result."""
    hooked: list[str] = []
    batch, _, _ = await run_batch(
        [city_tool()],
        call("getWeather", {"city": "Lima"}, id="good"),
        call("getWeather", {}, id="invalid"),
        call("getTime", {}, id="unknown"),
        before_tool_call=lambda ctx, sig: hooked.append(ctx.tool_call.id),
    )
    assert hooked == ["good"]
    assert [(m.tool_call_id, m.is_error) for m in batch.messages] == [
        ("good", False),
        ("invalid", True),
        ("unknown", True),
    ]
