"""DESIGN R-5.4 / R-5.5: what happens between turns, and why a run ends."""

from __future__ import annotations

from collections import deque
from typing import Any

import pytest

from yiemagent import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    Model,
    TurnContext,
    TurnUpdate,
    UserMessage,
    agent_loop,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def make_tool(name: str, execute: Any) -> AgentTool:
    return AgentTool(name, name, f"the {name} tool", SCHEMA, execute)


def noop_tool(name: str = "noop") -> AgentTool:
    return make_tool(name, lambda tool_call_id, args, signal, on_update: "ok")


class Queue:
    """A steering/follow-up queue delivering one message per poll (one-at-a-time mode)."""

    def __init__(self, *texts: str) -> None:
        self.items: deque[AgentMessage] = deque(UserMessage(text) for text in texts)
        self.polls = 0

    def add(self, text: str) -> None:
        self.items.append(UserMessage(text))

    def __call__(self) -> list[AgentMessage]:
        self.polls += 1
        return [self.items.popleft()] if self.items else []


async def run(
    fm: FauxModel, config: AgentLoopConfig, tools: list[AgentTool] | None = None
) -> tuple[list[AgentEvent], AgentContext]:
    context = AgentContext("sys", [], tools or [])
    events: list[AgentEvent] = []
    await run_agent_loop(
        [UserMessage("go")], context, config, events.append, stream_fn=fm.stream_fn
    )
    return events, context


def end_of(events: list[AgentEvent]) -> AgentEndEvent:
    end = events[-1]
    assert isinstance(end, AgentEndEvent)
    return end


def texts(context: AgentContext) -> list[str]:
    """Each message as role:text, for reading transcripts in assertions."""
    out = []
    for message in context.messages:
        content = getattr(message, "content", [])
        text = "".join(getattr(block, "text", "") for block in content)
        calls = [block.name for block in content if getattr(block, "type", "") == "toolCall"]
        out.append(f"{message.role}:{text}{''.join('@' + name for name in calls)}")
    return out


def tool_use(*names: str) -> Any:
    return faux_message(*(faux_tool_call(name) for name in names))


async def test_r5_4_should_stop_after_turn_exact_sequence() -> None:
    fm = FauxModel([tool_use("steer_me"), "never reached"])
    steering, follow = Queue(), Queue("follow")
    seen: list[TurnContext] = []

    def steer_me(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        steering.add("steer")
        return "ok"

    def stop(turn: TurnContext) -> bool:
        seen.append(turn)
        return True

    config = AgentLoopConfig(
        model=fm.model,
        should_stop_after_turn=stop,
        get_steering_messages=steering,
        get_follow_up_messages=follow,
    )
    events, context = await run(fm, config, [make_tool("steer_me", steer_me)])
    assert [e.type for e in events if e.type != "message_update"] == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert end_of(events).reason == "should_stop"
    assert fm.call_count == 1
    assert steering.polls == 1 and follow.polls == 0  # only the start poll; queues untouched
    assert len(steering.items) == 1 and len(follow.items) == 1
    assert len(seen) == 1 and seen[0].message.tool_calls[0].name == "steer_me"
    assert [m.role for m in seen[0].tool_results] == ["toolResult"]
    assert seen[0].context is context and seen[0].new_messages == context.messages


async def test_r5_4_steering_during_a_batch_arrives_after_the_whole_batch() -> None:
    steering = Queue()

    def first(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        steering.add("steer now")
        return "first done"

    tools = [make_tool("first", first), noop_tool("second")]
    fm = FauxModel([tool_use("first", "second"), "answer"])
    config = AgentLoopConfig(
        model=fm.model, get_steering_messages=steering, tool_execution="sequential"
    )
    events, context = await run(fm, config, tools)
    assert texts(context) == [
        "user:go",
        "assistant:@first@second",
        "toolResult:first done",
        "toolResult:ok",
        "user:steer now",
        "assistant:answer",
    ]
    # Injected right after the turn_start of the turn it opens.
    types = [e.type for e in events if e.type != "message_update"]
    second_turn = types.index("turn_start", 2)
    assert types[second_turn + 1 : second_turn + 3] == ["message_start", "message_end"]
    assert end_of(events).reason == "stop"


async def test_r5_4_two_steers_one_at_a_time_give_two_turns() -> None:
    steering = Queue("s1", "s2")
    steering_polls_seen = []

    def poll() -> list[AgentMessage]:
        if steering.polls == 0:  # the start poll: nothing yet, both arrive during turn 1
            steering.polls += 1
            return []
        steering_polls_seen.append(len(steering.items))
        return steering()

    fm = FauxModel(["a1", "a2", "a3"])
    config = AgentLoopConfig(model=fm.model, get_steering_messages=poll)
    events, context = await run(fm, config)
    assert texts(context) == [
        "user:go",
        "assistant:a1",
        "user:s1",
        "assistant:a2",
        "user:s2",
        "assistant:a3",
    ]
    assert [e.type for e in events].count("turn_start") == 3
    assert fm.call_count == 3


async def test_r5_4_steering_at_the_start_joins_the_first_turn() -> None:
    steering = Queue("early")
    fm = FauxModel(["answer"])
    events, context = await run(fm, AgentLoopConfig(model=fm.model, get_steering_messages=steering))
    assert texts(context) == ["user:go", "user:early", "assistant:answer"]
    assert [e.type for e in events].count("turn_start") == 1


async def test_r5_4_follow_ups_after_a_terminate() -> None:
    def finish(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult.text("finished", terminate=True)

    follow = Queue("one more thing")
    fm = FauxModel([tool_use("finish"), "sure"])
    config = AgentLoopConfig(model=fm.model, get_follow_up_messages=follow)
    events, context = await run(fm, config, [make_tool("finish", finish)])
    assert texts(context) == [
        "user:go",
        "assistant:@finish",
        "toolResult:finished",
        "user:one more thing",
        "assistant:sure",
    ]
    assert end_of(events).reason == "stop"
    assert follow.polls == 2


async def test_r5_5_terminate_without_follow_ups_ends_with_reason_terminate() -> None:
    def finish(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult.text("finished", terminate=True)

    fm = FauxModel([tool_use("finish"), "never"])
    events, _ = await run(fm, AgentLoopConfig(model=fm.model), [make_tool("finish", finish)])
    assert end_of(events).reason == "terminate"
    assert fm.call_count == 1


async def test_r5_4_prepare_next_turn_replaces_system_prompt_and_model() -> None:
    other = Model(id="faux-2", provider="faux", api="faux")
    turns: list[TurnContext] = []

    def prepare(turn: TurnContext) -> TurnUpdate:
        turns.append(turn)
        new_context = AgentContext("new system", turn.context.messages, turn.context.tools)
        return TurnUpdate(context=new_context, model=other, reasoning="high")

    fm = FauxModel([tool_use("noop"), "answer"])
    seen_models: list[str] = []
    seen_reasoning: list[Any] = []

    def stream_fn(model: Model, context: Any, options: Any) -> Any:
        seen_models.append(model.id)
        seen_reasoning.append(options.reasoning)
        return fm.stream_fn(model, context, options)

    context = AgentContext("old system", [], [noop_tool()])
    config = AgentLoopConfig(model=fm.model, prepare_next_turn=prepare)
    messages = await run_agent_loop(
        [UserMessage("go")], context, config, lambda e: None, stream_fn=stream_fn
    )
    assert [c.system_prompt for c in fm.contexts] == ["old system", "new system"]
    assert seen_models == ["faux", "faux-2"] and seen_reasoning == [None, "high"]
    assert messages[-1].model == "faux-2"  # type: ignore[union-attr]
    assert len(turns) == 1
    assert config.model is fm.model  # the caller's config is never mutated


async def test_r5_4_prepare_next_turn_may_answer_with_a_mapping_of_its_fields() -> None:
    # pi's plain-object shape, as the tool hooks take it ({"block": True} and the like)
    other = Model(id="faux-2", provider="faux", api="faux")
    fm = FauxModel([tool_use("noop"), "answer"])
    seen: list[str] = []

    def stream_fn(model: Model, context: Any, options: Any) -> Any:
        seen.append(model.id)
        return fm.stream_fn(model, context, options)

    config = AgentLoopConfig(model=fm.model, prepare_next_turn=lambda turn: {"model": other})
    context = AgentContext("sys", [], [noop_tool()])
    await run_agent_loop([UserMessage("go")], context, config, lambda e: None, stream_fn=stream_fn)
    assert seen == ["faux", "faux-2"]


@pytest.mark.parametrize(
    ("returned", "text"),
    [
        ("next", "prepare_next_turn returned str; expected TurnUpdate or None"),
        ({"modle": None}, "prepare_next_turn returned {'modle': None}: "),
    ],
)
async def test_r5_9_prepare_next_turn_returning_something_else_says_what(
    returned: Any, text: str
) -> None:
    fm = FauxModel([tool_use("noop"), "never asked"])
    config = AgentLoopConfig(model=fm.model, prepare_next_turn=lambda turn: returned)
    events, _ = await run(fm, config, [noop_tool()])
    end = end_of(events)
    assert end.reason == "error" and fm.call_count == 1
    failed = end.messages[-1]
    assert isinstance(failed, AssistantMessage) and text in (failed.error_message or "")


async def test_r5_5_max_turns_stops_a_model_that_calls_tools_forever() -> None:
    fm = FauxModel([tool_use("noop") for _ in range(10)])
    events, context = await run(fm, AgentLoopConfig(model=fm.model, max_turns=3), [noop_tool()])
    assert end_of(events).reason == "max_turns"
    assert fm.call_count == 3
    assert [m.role for m in context.messages].count("toolResult") == 3


async def test_r5_5_stop_reason_when_the_model_answers() -> None:
    fm = FauxModel(["hi"])
    events, _ = await run(fm, AgentLoopConfig(model=fm.model, max_turns=1))
    assert end_of(events).reason == "stop"


async def test_r5_4_async_hooks_are_awaited() -> None:
    calls: list[str] = []
    follow = deque([UserMessage("later")])

    async def steering() -> list[AgentMessage]:
        calls.append("steering")
        return []

    async def follow_up() -> list[AgentMessage]:
        calls.append("follow_up")
        return [follow.popleft()] if follow else []

    async def should_stop(turn: TurnContext) -> bool:
        calls.append("should_stop")
        return False

    async def prepare(turn: TurnContext) -> None:
        calls.append("prepare")

    async def transform(messages: list[AgentMessage], signal: Any) -> list[AgentMessage]:
        calls.append("transform")
        return messages

    async def api_key(provider: str) -> str:
        calls.append(f"key:{provider}")
        return "k"

    fm = FauxModel(["one", "two"])
    config = AgentLoopConfig(
        model=fm.model,
        get_steering_messages=steering,
        get_follow_up_messages=follow_up,
        should_stop_after_turn=should_stop,
        prepare_next_turn=prepare,
        transform_context=transform,
        get_api_key=api_key,
    )
    _, context = await run(fm, config)
    assert texts(context) == ["user:go", "assistant:one", "user:later", "assistant:two"]
    assert calls == [
        "steering",
        "transform",
        "key:faux",
        "should_stop",
        "steering",
        "follow_up",
        "prepare",
        "transform",
        "key:faux",
        "should_stop",
        "steering",
        "follow_up",
    ]


async def test_r5_4_agent_loop_stream_result_is_the_new_messages() -> None:
    fm = FauxModel(["hi"])
    history: list[AgentMessage] = [UserMessage("old"), faux_message("older answer")]
    context = AgentContext("sys", history, [])
    stream = agent_loop(
        [UserMessage("new")], context, AgentLoopConfig(model=fm.model), stream_fn=fm.stream_fn
    )
    messages = await stream.result()
    assert [m.role for m in messages] == ["user", "assistant"]
    assert len(context.messages) == 4 and context.messages is history


async def test_r5_4_steering_after_a_terminate_still_opens_a_turn() -> None:
    steering = Queue()

    def finish(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        steering.add("wait, one more")
        return AgentToolResult.text("finished", terminate=True)

    fm = FauxModel([tool_use("finish"), "ok"])
    config = AgentLoopConfig(model=fm.model, get_steering_messages=steering)
    events, context = await run(fm, config, [make_tool("finish", finish)])
    assert texts(context) == [
        "user:go",
        "assistant:@finish",
        "toolResult:finished",
        "user:wait, one more",
        "assistant:ok",
    ]
    assert end_of(events).reason == "stop" and fm.call_count == 2
