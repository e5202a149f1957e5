"""The cases pi-mono's agent tests check (packages/agent/test/agent-loop.test.ts and
agent.test.ts; the seeds port pi-agent-core), re-expressed on our loop and Agent: custom
message roles through `convert_to_llm`, `transform_context` before it, a parallel batch
answered in source order, `agent_loop_continue` from a transcript, a busy agent refusing a
second run, `resume` from an assistant tail taking queued follow-ups and steering one at a
time, the session id reaching the provider, and the partial message an abort mid-stream
leaves (its text kept; a partial tool call answered, never run)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentBusyError,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ConfigError,
    MessageEndEvent,
    MessageStartEvent,
    TextContent,
    ToolExecutionEndEvent,
    UserMessage,
    agent_loop,
    agent_loop_continue,
    default_convert_to_llm,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_stall, faux_tool_call
from yiemagent.types import text_of

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"value": {"type": "string"}},
    "required": ["value"],
}


@dataclass
class Notification:
    """An application's own message kind: the model never sees it unless converted."""

    text: str
    role: str = "notification"
    timestamp: int = field(default=0)


def notifications_as_user_text(messages: list[AgentMessage]) -> list[AgentMessage]:
    return [UserMessage(f"[note] {m.text}") if isinstance(m, Notification) else m for m in messages]


async def test_a_custom_message_is_dropped_by_default_and_sent_when_converted() -> None:
    fm = FauxModel(["plain", "converted"])
    history: list[AgentMessage] = [UserMessage("hi"), Notification("disk almost full")]
    plain = agent_loop(
        [UserMessage("go")],
        AgentContext("", list(history), []),
        AgentLoopConfig(model=fm.model),
        stream_fn=fm.stream_fn,
    )
    await plain.result()
    converted = agent_loop(
        [UserMessage("go")],
        AgentContext("", list(history), []),
        AgentLoopConfig(model=fm.model, convert_to_llm=notifications_as_user_text),
        stream_fn=fm.stream_fn,
    )
    new = await converted.result()

    assert [text_of(m.content) for m in fm.contexts[0].messages] == ["hi", "go"]
    assert [text_of(m.content) for m in fm.contexts[1].messages] == [
        "hi",
        "[note] disk almost full",
        "go",
    ]
    assert text_of(new[-1].content) == "converted"


async def test_transform_context_runs_before_convert_to_llm() -> None:
    order: list[str] = []
    seen_by_convert: list[int] = []

    def keep_last_two(messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        order.append("transform")
        return messages[-2:]

    def convert(messages: list[AgentMessage]) -> list[AgentMessage]:
        order.append("convert")
        seen_by_convert.append(len(messages))
        return default_convert_to_llm(messages)

    fm = FauxModel(["ok"])
    old = [UserMessage(f"old {i}") for i in range(4)]
    stream = agent_loop(
        [UserMessage("new")],
        AgentContext("", old, []),
        AgentLoopConfig(model=fm.model, transform_context=keep_last_two, convert_to_llm=convert),
        stream_fn=fm.stream_fn,
    )
    await stream.result()

    assert order == ["transform", "convert"]
    assert seen_by_convert == [2]
    assert [text_of(m.content) for m in fm.contexts[0].messages] == ["old 3", "new"]


async def test_a_parallel_batch_overlaps_and_its_results_keep_source_order() -> None:
    release_first = asyncio.Event()
    second_ran_while_first_waited = False

    async def echo(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        nonlocal second_ran_while_first_waited
        if args["value"] == "first":
            await asyncio.wait_for(release_first.wait(), timeout=10)
        else:
            second_ran_while_first_waited = not release_first.is_set()
            release_first.set()
        return AgentToolResult(content=f"echoed: {args['value']}")

    calls = [
        faux_tool_call("echo", {"value": "first"}, id="tool-1"),
        faux_tool_call("echo", {"value": "second"}, id="tool-2"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    tool = AgentTool("echo", "Echo", "Echo tool", SCHEMA, echo, parallel=True)
    stream = agent_loop(
        [UserMessage("echo both")],
        AgentContext("", [], [tool]),
        AgentLoopConfig(model=fm.model, tool_execution="parallel"),
        stream_fn=fm.stream_fn,
    )
    events = [event async for event in stream]

    assert second_ran_while_first_waited
    ends = [e.tool_call_id for e in events if isinstance(e, ToolExecutionEndEvent)]
    assert ends == ["tool-2", "tool-1"]  # completion order
    results = [
        e.message.tool_call_id
        for e in events
        if isinstance(e, MessageEndEvent) and e.message.role == "toolResult"
    ]
    assert results == ["tool-1", "tool-2"]  # source order


def test_continuing_an_empty_transcript_raises_at_the_call() -> None:
    fm = FauxModel(["never"])
    with pytest.raises(ConfigError, match="no messages in context"):
        agent_loop_continue(
            AgentContext("", [], []), AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn
        )
    assert fm.call_count == 0


async def test_continue_emits_no_prompt_events_and_returns_only_new_messages() -> None:
    fm = FauxModel(["Response"])
    stream = agent_loop_continue(
        AgentContext("You are helpful.", [UserMessage("Hello")], []),
        AgentLoopConfig(model=fm.model),
        stream_fn=fm.stream_fn,
    )
    events = [event async for event in stream]
    new = await stream.result()

    assert [m.role for m in new] == ["assistant"]
    ends = [e.message.role for e in events if isinstance(e, MessageEndEvent)]
    assert ends == ["assistant"]


async def test_continue_from_a_custom_message_the_converter_makes_user_text() -> None:
    fm = FauxModel(["Response to custom message"])
    stream = agent_loop_continue(
        AgentContext("", [Notification("Hook content")], []),
        AgentLoopConfig(model=fm.model, convert_to_llm=notifications_as_user_text),
        stream_fn=fm.stream_fn,
    )
    new = await stream.result()

    assert [m.role for m in new] == ["assistant"]
    assert text_of(new[0].content) == "Response to custom message"
    assert [text_of(m.content) for m in fm.contexts[0].messages] == ["[note] Hook content"]


async def test_prompt_and_resume_while_a_run_streams_are_refused_then_it_aborts() -> None:
    fm = FauxModel([faux_stall(after_chunks=1, response="never finished")])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)
    agent.abort()  # idle: nothing to abort, no error

    first = asyncio.create_task(agent.prompt("First message"))
    for _ in range(200):
        if agent.state.streaming_message is not None:
            break
        await asyncio.sleep(0.01)
    assert agent.state.active_run

    with pytest.raises(AgentBusyError):
        await agent.prompt("Second message")
    with pytest.raises(AgentBusyError):
        await agent.resume()
    agent.abort()
    answer = await asyncio.wait_for(first, timeout=10)

    assert answer.stop_reason == "aborted"
    assert [text_of(m.content) for m in agent.state.messages if m.role == "user"] == [
        "First message"
    ]


def assistant(text: str) -> AssistantMessage:
    return AssistantMessage([TextContent(text)])


async def test_resume_after_an_assistant_turn_runs_a_queued_follow_up() -> None:
    fm = FauxModel(["Processed"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        messages=[UserMessage("Initial"), assistant("Initial response")],
    )
    agent.follow_up("Queued follow-up")

    answer = await agent.resume()

    assert answer.text == "Processed"
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "user", "assistant"]
    assert text_of(agent.state.messages[2].content) == "Queued follow-up"


async def test_resume_after_an_assistant_turn_takes_steering_one_at_a_time() -> None:
    fm = FauxModel(["Processed 1", "Processed 2"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        messages=[UserMessage("Initial"), assistant("Initial response")],
    )
    agent.steer("Steering 1")
    agent.steer("Steering 2")

    await agent.resume()

    assert fm.call_count == 2
    recent = agent.state.messages[-4:]
    assert [m.role for m in recent] == ["user", "assistant", "user", "assistant"]
    assert [text_of(m.content) for m in recent] == [
        "Steering 1",
        "Processed 1",
        "Steering 2",
        "Processed 2",
    ]


async def test_resume_after_an_assistant_turn_with_nothing_queued_says_so() -> None:
    fm = FauxModel(["never"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        messages=[UserMessage("Initial"), assistant("Initial response")],
    )
    with pytest.raises(ConfigError, match="assistant"):
        await agent.resume()
    assert fm.call_count == 0
    assert (await agent.prompt("still usable")) is not None


async def test_the_session_id_reaches_the_provider_and_a_new_one_the_next_call() -> None:
    fm = FauxModel(["ok", "ok again"])
    seen: list[str | None] = []

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(options.session_id)
        return fm.stream_fn(model, context, options)

    agent = Agent(model=fm.model, stream_fn=stream_fn, session_id="session-abc")
    await agent.prompt("hello")
    agent.session_id = "session-def"
    assert agent.session_id == "session-def"
    await agent.prompt("hello again")

    assert seen == ["session-abc", "session-def"]


async def test_every_event_of_an_injected_steering_message_follows_its_turn_start() -> None:
    fm = FauxModel([faux_message(faux_tool_call("echo", {"value": "x"})), "done"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[AgentTool("echo", "Echo", "Echo tool", SCHEMA, lambda *a: "ok")],
    )
    events: list[Any] = []
    agent.subscribe(lambda event, signal: events.append(event))
    steered = False

    def steer_once(event: Any, signal: Any) -> None:
        nonlocal steered
        if isinstance(event, ToolExecutionEndEvent) and not steered:
            steered = True
            agent.steer("also this")

    agent.subscribe(steer_once)
    await agent.prompt("go")

    types = [e.type for e in events]
    start = next(
        i
        for i, e in enumerate(events)
        if isinstance(e, MessageStartEvent)
        and e.message.role == "user"
        and text_of(e.message.content) == "also this"
    )
    assert types[start - 1] == "turn_start"
    assert types[start + 1] == "message_end"


async def test_an_abort_mid_answer_keeps_the_partial_text_as_the_aborted_message() -> None:
    fm = FauxModel(
        ["The quick brown fox jumps over the lazy dog. " * 4, "next answer"], delay_s=0.01
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)

    def abort_after_some_text(event: Any, signal: Any) -> None:
        if event.type == "message_update" and len(text_of(event.message.content)) > 20:
            agent.abort()

    unsubscribe = agent.subscribe(abort_after_some_text)
    reply = await agent.prompt("go")
    unsubscribe()

    assert reply.stop_reason == "aborted" and reply.error_message
    assert 20 < len(reply.text) < len("The quick brown fox jumps over the lazy dog. " * 4)
    assert "The quick brown fox jumps over the lazy dog. ".startswith(reply.text[:20])
    assert agent.state.messages[-1] is reply  # kept in the transcript, as it was shown
    assert (await agent.prompt("again")).text == "next answer"


async def test_an_abort_mid_tool_call_answers_the_partial_call_without_running_it() -> None:
    ran: list[str] = []
    calling = faux_message("calling", faux_tool_call("echo", {"value": "a long value here"}))
    fm = FauxModel([calling], chunk_size=3, delay_s=0.01)
    tool = AgentTool("echo", "Echo", "Echo tool", SCHEMA, lambda *a: ran.append("ran") or "x")
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])

    def abort_in_the_call(event: Any, signal: Any) -> None:
        if (
            event.type == "message_update"
            and event.assistant_message_event.type == "toolcall_delta"
        ):
            agent.abort()

    agent.subscribe(abort_in_the_call)
    reply = await agent.prompt("go")

    assert reply.stop_reason == "aborted"
    assert ran == []
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult"]
    result = agent.state.messages[-1]
    assert result.is_error and result.tool_call_id == reply.tool_calls[0].id
