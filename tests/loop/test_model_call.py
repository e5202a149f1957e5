"""DESIGN R-5.2, R-5.8, R-5.9: each model call, a stalled stream, and anything that raises."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
import time
from typing import Any

import pytest

from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Context,
    Model,
    StreamOptions,
    ToolResultMessage,
    TurnContext,
    UserMessage,
    agent_loop,
    default_convert_to_llm,
    run_agent_loop,
)
from yiemagent.ai import AssistantMessageEventStream
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_stall, faux_tool_call
from yiemagent.loop import ABORT_GRACE_S

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def noop_tool() -> AgentTool:
    return AgentTool("noop", "noop", "does nothing", SCHEMA, lambda i, a, s, u: "ok")


async def run(
    fm: FauxModel | None,
    config: AgentLoopConfig,
    tools: list[AgentTool] | None = None,
    history: list[AgentMessage] | None = None,
    stream_fn: Any = None,
) -> tuple[list[AgentEvent], AgentContext]:
    context = AgentContext("sys", history if history is not None else [], tools or [])
    stream = agent_loop(
        [UserMessage("go")], context, config, stream_fn=stream_fn or (fm.stream_fn if fm else None)
    )
    events = [event async for event in stream]
    assert await stream.result() == events[-1].messages  # type: ignore[union-attr]
    return events, context


def assert_failed_run(events: list[AgentEvent], context: AgentContext, text: str) -> None:
    """An error assistant message with the text, turn_end, agent_end reason error."""
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "error"
    assert [e.type for e in events[-4:]] == [
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    message = events[-3].message  # type: ignore[union-attr]
    assert isinstance(message, AssistantMessage) and message.stop_reason == "error"
    assert text in (message.error_message or "")
    assert context.messages[-1] is message
    starts = sum(e.type == "turn_start" for e in events)
    assert starts == sum(e.type == "turn_end" for e in events)


@pytest.mark.parametrize("custom", [False, True])
async def test_r5_2_transform_then_convert_then_provider(custom: bool) -> None:
    order: list[str] = []

    def transform(messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        order.append("transform")
        assert signal is not None and not signal.aborted
        return [*messages, BashExecutionMessage("ls", "a.txt", exit_code=2)]

    def convert(messages: list[AgentMessage]) -> list[Any]:
        order.append("convert")
        assert messages[-1].role == "bashExecution"
        return default_convert_to_llm(messages)

    fm = FauxModel(["ok"])
    config = AgentLoopConfig(
        model=fm.model, transform_context=transform, convert_to_llm=convert if custom else None
    )
    _, context = await run(fm, config)
    assert order == (["transform", "convert"] if custom else ["transform"])
    sent = fm.contexts[0].messages
    assert [m.role for m in sent] == ["user", "user"]
    assert sent[1].content[0].text == (  # type: ignore[union-attr]
        "Ran `ls`\n```\na.txt\n```\n\nCommand exited with code 2"
    )
    assert len(context.messages) == 2  # the transform's copy did not touch the transcript


async def test_r5_2_default_conversion_of_custom_messages() -> None:
    class Note:
        role = "note"

    prompt = UserMessage("q")
    history: list[AgentMessage] = [
        CompactionSummaryMessage("we did X"),
        BranchSummaryMessage("tried Y"),
        Note(),
        BashExecutionMessage("true", ""),
        prompt,
    ]
    converted = default_convert_to_llm(history)
    assert [m.role for m in converted] == ["user", "user", "user", "user"]
    texts = [m.content[0].text for m in converted]  # type: ignore[union-attr]
    assert texts[0] == (
        "The conversation history before this point was compacted into the "
        "following summary:\n\n<summary>\nwe did X\n</summary>"
    )
    assert texts[1] == (
        "The following is a summary of a branch that this conversation came "
        "back from:\n\n<summary>\ntried Y</summary>"
    )
    assert texts[2] == "Ran `true`\n(no output)"
    assert converted[3] is prompt  # passed through, not copied


async def test_r5_2_provider_sees_the_converted_transcript_at_every_call() -> None:
    history: list[AgentMessage] = [UserMessage("old"), CompactionSummaryMessage("sum")]
    fm = FauxModel(
        [faux_message(faux_tool_call("noop")), faux_message(faux_tool_call("noop")), "done"]
    )
    snapshots: list[list[AgentMessage]] = []

    def stream_fn(model: Model, context: Context, options: Any) -> Any:
        return fm.stream_fn(model, context, options)

    def stop(turn: TurnContext) -> bool:
        snapshots.append(list(turn.context.messages))
        return False

    config = AgentLoopConfig(model=fm.model, should_stop_after_turn=stop)
    await run(None, config, [noop_tool()], history, stream_fn)
    expected = [default_convert_to_llm(history[:3])]
    expected += [default_convert_to_llm(s) for s in snapshots[:-1]]
    assert [c.messages for c in fm.contexts] == expected
    # Each context is a snapshot: later turns did not grow an earlier one.
    assert [len(c.messages) for c in fm.contexts] == [3, 5, 7]


async def test_every_provider_option_of_the_config_reaches_the_call() -> None:
    """`AgentLoopConfig` is a `ProviderOptions`: each of its provider fields arrives in the
    call's `StreamOptions` as it is, none copied by hand."""
    import dataclasses

    from yiemagent.types import ProviderOptions

    names = [f.name for f in dataclasses.fields(ProviderOptions)]
    assert {"api_key", "temperature", "cache_retention", "on_response"} <= set(names)
    values: dict[str, Any] = {name: object() for name in names}
    seen: list[StreamOptions] = []
    fm = FauxModel(["done"])

    def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        seen.append(options)
        return fm.stream_fn(model, context, StreamOptions(signal=options.signal))

    await run(None, AgentLoopConfig(model=fm.model, **values), stream_fn=stream_fn)
    assert len(seen) == 1
    assert {name: getattr(seen[0], name) for name in names} == values


async def test_r5_2_api_key_and_provider_options_are_resolved_per_call() -> None:
    keys = iter(["key-1", "key-2"])
    seen: list[StreamOptions] = []
    fm = FauxModel([faux_message(faux_tool_call("noop")), "done"])

    async def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        seen.append(options)  # an async stream_fn: awaited by the loop
        return fm.stream_fn(model, context, options)

    config = AgentLoopConfig(
        model=fm.model,
        get_api_key=lambda provider: next(keys),
        temperature=0.3,
        max_tokens=77,
        session_id="s1",
        headers={"x": "y"},
        stream_idle_timeout_s=30,
    )
    await run(None, config, [noop_tool()], stream_fn=stream_fn)
    assert [o.api_key for o in seen] == ["key-1", "key-2"]
    assert all(
        o.temperature == 0.3
        and o.max_tokens == 77
        and o.session_id == "s1"
        and o.headers == {"x": "y"}
        and o.idle_timeout_s == 30
        for o in seen
    )
    assert all(o.signal is not None and not o.signal.aborted for o in seen)

    fallback = FauxModel(["ok"])
    options: list[StreamOptions] = []
    await run(
        None,
        AgentLoopConfig(model=fallback.model, api_key="static"),
        stream_fn=lambda m, c, o: options.append(o) or fallback.stream_fn(m, c, o),
    )
    assert options[0].api_key == "static"


async def test_r5_8_stalled_stream_ends_by_idle_timeout() -> None:
    fm = FauxModel([faux_stall(after_chunks=1), "never"])
    signals: list[Any] = []

    def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        signals.append(options.signal)
        return fm.stream_fn(model, context, options)

    started = time.perf_counter()
    events, context = await run(
        None, AgentLoopConfig(model=fm.model, stream_idle_timeout_s=0.2), stream_fn=stream_fn
    )
    elapsed = time.perf_counter() - started
    assert 0.2 <= elapsed < 2.0
    message = context.messages[-1]
    assert isinstance(message, AssistantMessage) and message.stop_reason == "error"
    assert message.error_message == "The model stream sent nothing for 0.2 s"
    assert message.text  # what had arrived is kept
    assert signals[0].aborted  # the provider's call was aborted
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "error"
    assert [e.type for e in events].count("message_start") == 2  # prompt + one assistant
    assert fm.call_count == 1


async def test_r5_8_a_slow_consumer_is_not_an_idle_provider() -> None:
    fm = FauxModel(["quick answer"])

    async def slow_sink(event: AgentEvent) -> None:
        if event.type == "message_start":
            await asyncio.sleep(0.3)

    messages = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=fm.model, stream_idle_timeout_s=0.1),
        slow_sink,
        stream_fn=fm.stream_fn,
    )
    assert messages[-1].stop_reason == "stop"  # type: ignore[union-attr]


def busy_provider(
    silent_s: float, *, keep_alive: bool, ignore_abort: bool = False
) -> tuple[Any, list[StreamOptions]]:
    """A provider shaped like the embedded model: `start`, then `silent_s` without an event
    (reading the prompt), calling `options.keep_alive()` every 20 ms if `keep_alive`, then
    "late answer". With `ignore_abort` it goes on after an abort, keep-alives included."""
    seen: list[StreamOptions] = []

    def stream_fn(model: Model, context: Context, options: StreamOptions) -> Any:
        seen.append(options)
        stream = AssistantMessageEventStream()
        builder = MessageBuilder(model, stream)

        async def work() -> None:
            builder.start()
            started = time.monotonic()
            try:
                while time.monotonic() - started < silent_s:
                    await asyncio.sleep(0.02)
                    aborted = options.signal is not None and options.signal.aborted
                    if aborted and not ignore_abort:
                        builder.fail("aborted", "Request was aborted")
                        return
                    if keep_alive and options.keep_alive is not None:
                        options.keep_alive()
                builder.text_delta("late answer")
                builder.done("stop")
            except Exception as exc:  # a provider never raises: it ends the stream
                builder.fail("error", repr(exc))

        tasks.append(asyncio.get_running_loop().create_task(work()))
        return stream

    tasks: list[asyncio.Task[None]] = []
    return stream_fn, seen


LOCAL = dataclasses.replace(FauxModel([]).model, api="local", provider="local")


async def test_r5_8_a_provider_busy_without_output_says_so_with_keep_alive() -> None:
    """R-5.8, one rule for every provider: the embedded model streams nothing while it reads
    a long prompt (under load more than 120 s: "The model stream sent nothing for 120 s").
    A provider that calls `options.keep_alive()` while it works is not idle; the keep-alives
    are no events: the consumer sees exactly the seeds' message events."""
    stream_fn, seen = busy_provider(1.5, keep_alive=True)  # 3 idle limits
    events: list[AgentEvent] = []
    messages = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=LOCAL, stream_idle_timeout_s=0.5),
        events.append,
        stream_fn=stream_fn,
    )
    assert messages[-1].stop_reason == "stop", messages[-1]  # type: ignore[union-attr]
    assert seen[0].idle_timeout_s == 0.5 and seen[0].keep_alive is not None
    updates = [e.assistant_message_event.type for e in events if e.type == "message_update"]
    assert updates == ["text_start", "text_delta", "text_end"]

    # No idle limit: no watchdog to keep alive.
    stream_fn, seen = busy_provider(0.0, keep_alive=True)
    await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=LOCAL, stream_idle_timeout_s=None),
        None,
        stream_fn=stream_fn,
    )
    assert seen[0].idle_timeout_s is None and seen[0].keep_alive is None


@pytest.mark.parametrize("model", [LOCAL, FauxModel([]).model], ids=["local", "hosted"])
async def test_r5_8_a_silent_provider_is_idle_whatever_its_api(model: Model) -> None:
    """The same silence without keep-alives ends in error, for the embedded model too (the
    loop used to exempt api "local" from the limit altogether)."""
    stream_fn, _ = busy_provider(3.0, keep_alive=False)
    started = time.monotonic()
    messages = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=model, stream_idle_timeout_s=0.5),
        None,
        stream_fn=stream_fn,
    )
    message = messages[-1]
    assert isinstance(message, AssistantMessage) and message.stop_reason == "error"
    assert message.error_message == "The model stream sent nothing for 0.5 s"
    assert time.monotonic() - started < 2.5  # ended by the limit, not by the provider

    hosted = FauxModel(["late answer"], delay_s=0.5)  # a hosted stream silent between chunks
    messages = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=hosted.model, stream_idle_timeout_s=0.1),
        None,
        stream_fn=hosted.stream_fn,
    )
    assert messages[-1].stop_reason == "error"  # type: ignore[union-attr]


async def test_r5_8_keep_alives_after_an_abort_do_not_hold_the_run() -> None:
    """A provider that ignores the abort and keeps calling keep_alive is still abandoned
    after the abort grace: keep-alives extend the idle limit, never the grace."""
    stream_fn, _ = busy_provider(30.0, keep_alive=True, ignore_abort=True)
    signal = AbortSignal()
    asyncio.get_running_loop().call_later(0.2, signal.abort)
    started = time.monotonic()
    messages = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=LOCAL, stream_idle_timeout_s=60),
        None,
        signal,
        stream_fn=stream_fn,
    )
    assert messages[-1].stop_reason == "aborted"  # type: ignore[union-attr]
    assert time.monotonic() - started < 0.2 + ABORT_GRACE_S + 2.0


async def test_r5_9_raising_convert_to_llm_ends_the_run_with_an_error_message() -> None:
    def convert(messages: list[AgentMessage]) -> list[Any]:
        raise ValueError("cannot convert this")

    fm = FauxModel(["never"])
    events, context = await run(fm, AgentLoopConfig(model=fm.model, convert_to_llm=convert))
    assert_failed_run(events, context, "ValueError: cannot convert this")
    assert fm.call_count == 0


@pytest.mark.parametrize("hook", ["transform_context", "convert_to_llm"])
@pytest.mark.parametrize(
    ("returned", "kind"), [(None, "None"), ("oops", "str"), (42, "int"), ({}, "dict")]
)
async def test_r5_9_a_context_hook_returning_no_list_of_messages_says_so(
    hook: str, returned: Any, kind: str
) -> None:
    # openai-agents test_call_model_input_filter_invalid_return_type_raises: a text was read
    # as its letters, none a message, and the model was called with no messages at all
    def bad(*_: Any) -> Any:
        return returned

    fm = FauxModel(["never"])
    events, context = await run(fm, AgentLoopConfig(model=fm.model, **{hook: bad}))
    assert_failed_run(events, context, f"TypeError: {hook} returned {kind}; return the list")
    assert fm.call_count == 0


async def test_r5_2_a_context_hook_may_return_a_tuple() -> None:
    fm = FauxModel(["seen"])
    config = AgentLoopConfig(
        model=fm.model,
        transform_context=lambda messages, signal: tuple(messages),
        convert_to_llm=lambda messages: tuple(messages),
    )
    await run(fm, config)
    assert fm.call_count == 1 and [m.role for m in fm.contexts[0].messages] == ["user"]


async def test_r5_9_provider_bug_raising_instead_of_erroring() -> None:
    def stream_fn(model: Model, context: Context, options: Any) -> Any:
        raise RuntimeError("provider exploded")

    events, context = await run(
        None, AgentLoopConfig(model=Model("m", "p", "x")), stream_fn=stream_fn
    )
    assert_failed_run(events, context, "RuntimeError: provider exploded")


async def test_r5_9_raising_should_stop_after_turn_keeps_turns_balanced() -> None:
    def stop(turn: TurnContext) -> bool:
        raise KeyError("hook bug")

    fm = FauxModel(["answer"])
    events, context = await run(fm, AgentLoopConfig(model=fm.model, should_stop_after_turn=stop))
    assert_failed_run(events, context, "hook bug")
    assert [m.role for m in context.messages] == ["user", "assistant", "assistant"]


async def test_r5_9_a_batch_that_raises_leaves_no_call_unanswered(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def broken_batch(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("batch bug")

    # Fault injection: the pipeline never raises, so make it.
    monkeypatch.setattr(
        sys.modules["yiemagent.loop._agent_loop"], "execute_tool_calls", broken_batch
    )
    fm = FauxModel([faux_message(faux_tool_call("noop"), faux_tool_call("noop")), "never"])
    events, context = await run(fm, AgentLoopConfig(model=fm.model), [noop_tool()])
    assert_failed_run(events, context, "RuntimeError: batch bug")
    answered = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    asked = context.messages[1].tool_calls  # type: ignore[union-attr]
    assert [m.tool_call_id for m in answered] == [c.id for c in asked]
    assert all(m.is_error for m in answered)


async def test_r5_9_run_agent_loop_does_not_raise() -> None:
    async def transform(messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        raise RuntimeError("transform bug")

    fm = FauxModel(["never"])
    messages = await run_agent_loop(
        [UserMessage("go")],
        AgentContext(),
        AgentLoopConfig(model=fm.model, transform_context=transform),
        lambda event: None,
        stream_fn=fm.stream_fn,
    )
    assert messages[-1].stop_reason == "error"  # type: ignore[union-attr]
    assert "transform bug" in (messages[-1].error_message or "")  # type: ignore[union-attr]


async def test_r5_8_a_slow_context_hook_does_not_switch_the_idle_watchdog_off() -> None:
    """A `transform_context` slower than the idle limit (its time does not count) must
    leave the watchdog running for the stream after it: a stalled stream still ends."""

    async def slow_transform(messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        await asyncio.sleep(0.6)  # two idle limits
        return messages

    fm = FauxModel([faux_stall(after_chunks=1)])
    config = AgentLoopConfig(
        model=fm.model, transform_context=slow_transform, stream_idle_timeout_s=0.3
    )
    _, context = await asyncio.wait_for(run(fm, config), 10)
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert last.error_message == "The model stream sent nothing for 0.3 s"
