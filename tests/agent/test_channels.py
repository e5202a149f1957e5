"""DESIGN R-6.4: the seeds' channels — send/take_response, steer, follow_up, the bounds of
seed 000 §5, close — through the public API on the faux provider."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import AgentBusyError, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

from ._kit import EventWaiter, faux_agent, make_tool, user_texts


async def test_r6_4_sent_prompts_run_in_order_and_responses_come_in_order() -> None:
    fm = FauxModel(["one", "two", "three"])
    agent = faux_agent(fm)
    for text in ("first", "second", "third"):
        agent.send(text)
    answers = [(await agent.take_response()).text for _ in range(3)]
    assert answers == ["one", "two", "three"]
    # one run per prompt: each model call saw the prompts so far, in order
    assert [user_texts(c.messages) for c in fm.contexts] == [
        ["first"],
        ["first", "second"],
        ["first", "second", "third"],
    ]
    await agent.wait_for_idle()
    assert not agent.is_busy


async def test_r6_4_a_prompt_sent_during_a_run_starts_when_it_ends() -> None:
    release = asyncio.Event()

    async def slow(*args: Any) -> str:
        await release.wait()
        return "ok"

    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "prompted", "sent"])
    agent = faux_agent(fm, tools=[make_tool("slow", slow)])
    waiter = EventWaiter(agent)
    run = asyncio.create_task(agent.prompt("by prompt"))
    await waiter.wait_for("tool_execution_start")
    agent.send("by send")
    release.set()
    assert (await run).text == "prompted"
    assert (await agent.take_response()).text == "sent"
    assert user_texts(agent.state.messages) == ["by prompt", "by send"]


async def test_r6_4_with_16_responses_untaken_the_next_run_waits() -> None:
    fm = FauxModel([f"answer {i}" for i in range(17)])
    agent = faux_agent(fm)
    for i in range(16):
        agent.send(f"prompt {i}")
    await agent.wait_for_idle()
    assert fm.call_count == 16
    agent.send("prompt 16")
    await asyncio.sleep(0.05)  # timing is the point: the 17th run must not start
    assert fm.call_count == 16
    assert agent.is_busy
    assert (await agent.take_response()).text == "answer 0"
    answers = [(await agent.take_response()).text for _ in range(16)]
    assert answers == [f"answer {i}" for i in range(1, 17)]
    assert fm.call_count == 17


async def test_r6_4_bounded_queues_raise_busy_when_full() -> None:
    agent = faux_agent(FauxModel([]))
    for i in range(16):
        agent.send(f"p{i}")  # no await in between: the worker has not taken any yet
    with pytest.raises(AgentBusyError, match="prompt queue is full"):
        agent.send("one too many")
    for i in range(32):
        agent.follow_up(f"f{i}")
    with pytest.raises(AgentBusyError, match="follow-up queue is full"):
        agent.follow_up("one too many")
    agent.clear_all_queues()
    await agent.close()


async def test_r6_4_a_list_of_follow_ups_with_too_little_room_queues_none_of_it() -> None:
    fm = FauxModel(["ok", "followed", "ok again", "followed again"])
    agent = faux_agent(fm, follow_up_mode="all")
    for i in range(31):
        agent.follow_up(f"f{i}")
    with pytest.raises(AgentBusyError, match=r"follow-up queue has room for 1 \(31 waiting\)"):
        agent.follow_up(["a", "b"])  # a retry after this must not deliver "a" twice

    await agent.prompt("go")
    assert user_texts(agent.state.messages) == ["go", *(f"f{i}" for i in range(31))]
    agent.follow_up(["a", "b"])  # room again: the whole list is queued
    await agent.prompt("again")
    assert user_texts(agent.state.messages)[-3:] == ["again", "a", "b"]


async def test_r6_4_steer_during_a_batch_opens_the_next_turn() -> None:
    fm = FauxModel([faux_message(faux_tool_call("work", {})), "steered answer"])
    agent = faux_agent(fm)

    def work(*args: Any) -> str:  # a plain tool: runs on a worker thread
        agent.steer("change of plan")
        return "worked"

    agent.tool_store.register(make_tool("work", work))
    waiter = EventWaiter(agent)
    answer = await agent.prompt("start")
    assert answer.text == "steered answer"
    assert [m.role for m in fm.contexts[1].messages] == ["user", "assistant", "toolResult", "user"]
    assert user_texts(fm.contexts[1].messages) == ["start", "change of plan"]
    types = waiter.types()
    second_turn = types.index("turn_start", types.index("turn_end"))
    assert types[second_turn + 1 : second_turn + 3] == ["message_start", "message_end"]
    assert not agent.has_queued_messages()


@pytest.mark.parametrize(("mode", "model_calls"), [("one-at-a-time", 3), ("all", 2)])
async def test_r6_4_two_steers_take_two_turns_one_at_a_time_and_one_in_all_mode(
    mode: Any, model_calls: int
) -> None:
    fm = FauxModel([faux_message(faux_tool_call("work", {})), "r1", "r2"])
    agent = faux_agent(fm, steering_mode=mode)

    def work(*args: Any) -> str:
        agent.steer("A")
        agent.steer("B")
        return "worked"

    agent.tool_store.register(make_tool("work", work))
    await agent.prompt("go")
    assert fm.call_count == model_calls
    if mode == "all":
        assert user_texts(fm.contexts[1].messages) == ["go", "A", "B"]
    else:
        assert user_texts(fm.contexts[1].messages) == ["go", "A"]
        assert user_texts(fm.contexts[2].messages) == ["go", "A", "B"]
    assert user_texts(agent.state.messages) == ["go", "A", "B"]


async def test_r6_4_follow_up_waits_until_the_agent_would_stop() -> None:
    fm = FauxModel([faux_message(faux_tool_call("work", {})), "first answer", "second answer"])
    agent = faux_agent(fm)

    def work(*args: Any) -> str:
        agent.follow_up("and then?")
        return "worked"

    agent.tool_store.register(make_tool("work", work))
    answer = await agent.prompt("go")
    assert answer.text == "second answer"
    assert user_texts(fm.contexts[1].messages) == ["go"]  # not after the tool batch
    assert user_texts(fm.contexts[2].messages) == ["go", "and then?"]


@pytest.mark.parametrize(("mode", "model_calls"), [("one-at-a-time", 3), ("all", 2)])
async def test_r6_4_follow_up_modes(mode: Any, model_calls: int) -> None:
    fm = FauxModel(["r0", "r1", "r2"])
    agent = faux_agent(fm, follow_up_mode=mode)
    agent.follow_up("F1")
    agent.follow_up(UserMessage("F2"))
    assert agent.has_queued_messages()
    await agent.prompt("go")
    assert fm.call_count == model_calls
    assert user_texts(agent.state.messages) == ["go", "F1", "F2"]
    assert not agent.has_queued_messages()


async def test_r6_4_clear_queues() -> None:
    fm = FauxModel(["only"])
    agent = faux_agent(fm)
    agent.steer("s")
    agent.follow_up("f")
    agent.clear_steering_queue()
    assert agent.has_queued_messages()
    agent.clear_follow_up_queue()
    assert not agent.has_queued_messages()
    await agent.prompt("go")
    assert user_texts(agent.state.messages) == ["go"]


async def test_r6_4_close_finishes_queued_prompts_then_refuses_new_ones() -> None:
    fm = FauxModel(["a", "b"])
    agent = faux_agent(fm)
    agent.send("1")
    agent.send("2")
    await agent.close()
    assert fm.call_count == 2
    with pytest.raises(AgentBusyError, match="closed"):
        agent.send("3")
    with pytest.raises(AgentBusyError, match="closed"):
        await agent.prompt("4")
    assert [(await agent.take_response()).text for _ in range(2)] == ["a", "b"]
    with pytest.raises(AgentBusyError, match="no response is left"):
        await agent.take_response()


@settings(max_examples=40, deadline=None)
@given(
    steers=st.lists(st.sampled_from("abc"), max_size=4),
    follow_ups=st.lists(st.sampled_from("xyz"), max_size=4),
    steering_mode=st.sampled_from(["one-at-a-time", "all"]),
    follow_up_mode=st.sampled_from(["one-at-a-time", "all"]),
)
def test_r6_4_property_every_queued_message_is_delivered_once_in_order(
    steers: list[str], follow_ups: list[str], steering_mode: Any, follow_up_mode: Any
) -> None:
    fm = FauxModel(["ok"] * 10)
    agent = faux_agent(fm, steering_mode=steering_mode, follow_up_mode=follow_up_mode)
    steered = [f"s{i}{text}" for i, text in enumerate(steers)]
    followed = [f"f{i}{text}" for i, text in enumerate(follow_ups)]
    for text in steered:
        agent.steer(text)
    for text in followed:
        agent.follow_up(text)
    asyncio.run(agent.prompt("go"))
    assert user_texts(agent.state.messages) == ["go", *steered, *followed]
    # steering: one per turn from the first turn on; follow-ups: once the agent would stop
    expected_calls = max(1, len(steered)) if steering_mode == "one-at-a-time" else 1
    expected_calls += len(followed) if follow_up_mode == "one-at-a-time" else int(bool(followed))
    assert fm.call_count == expected_calls
    assert not agent.has_queued_messages()
