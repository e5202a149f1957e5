"""Cases ported from pi-mono's `agent.test.ts` / `agent-loop.test.ts` and from bug reports,
through the public `Agent` API on the faux provider (DESIGN R-5.1, R-6.2 to R-6.6)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.agent._kit import EventWaiter, faux_agent, make_tool, user_texts
from yiemagent import AgentBusyError, AssistantMessage, UserMessage
from yiemagent.agent import AgentRunError
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_message,
    faux_stall,
    faux_text,
    faux_tool_call,
)
from yiemagent.types import ImageContent, text_of


async def until_aborted(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    await asyncio.wait_for(signal.wait(), 5)
    return "stopped"


async def quick(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
    return "done"


def assert_idle_and_clean(agent: Any) -> None:
    state = agent.state
    assert state.active_run is False
    assert state.streaming_message is None
    assert state.pending_tool_calls == set()
    assert not agent.is_busy


def test_pi_default_state_and_queued_messages_stay_out_of_the_transcript() -> None:
    fm = FauxModel([])
    agent = faux_agent(fm)
    seen: list[Any] = []
    unsubscribe = agent.subscribe(lambda e, s: seen.append(e))
    assert seen == []  # no event on subscribe
    assert agent.state.messages == [] and agent.state.error_message is None
    assert_idle_and_clean(agent)
    agent.steer("steering message")
    agent.follow_up("follow-up message")
    assert agent.state.messages == []
    assert agent.has_queued_messages()
    unsubscribe()
    agent.abort()  # idle: no-op


async def test_pi_unsubscribed_listener_sees_no_more_events() -> None:
    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm)
    seen: list[str] = []
    unsubscribe = agent.subscribe(lambda e, s: seen.append(e.type))
    await agent.prompt("a")
    count = len(seen)
    assert count > 0
    unsubscribe()
    await agent.prompt("b")
    assert len(seen) == count


async def test_r6_3_prompt_and_resume_while_streaming_raise_busy() -> None:
    fm = FauxModel([faux_stall(1)], delay_s=0.01)
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)
    first = asyncio.ensure_future(agent.prompt("first"))
    await waiter.wait_for("message_update")
    assert agent.state.active_run is True
    with pytest.raises(AgentBusyError):
        await agent.prompt("second")
    with pytest.raises(AgentBusyError):
        await agent.resume()
    agent.abort()
    reply = await first
    assert reply.stop_reason == "aborted"
    assert_idle_and_clean(agent)
    assert user_texts(agent.state.messages) == ["first"]


async def test_r6_3_resume_processes_a_queued_follow_up_after_an_assistant_turn() -> None:
    fm = FauxModel(["Processed"])
    agent = faux_agent(fm)
    agent.state.messages = [
        UserMessage("Initial"),
        faux_message(faux_text("Initial response")),
    ]
    agent.follow_up(UserMessage("Queued follow-up"))
    reply = await agent.resume()
    assert text_of(reply.content) == "Processed"
    assert "Queued follow-up" in user_texts(agent.state.messages)
    assert agent.state.messages[-1].role == "assistant"
    assert not agent.has_queued_messages()


async def test_r6_3_resume_processes_queued_steering_before_follow_ups() -> None:
    fm = FauxModel(["after steer", "after follow"])
    agent = faux_agent(fm)
    agent.state.messages = [UserMessage("hi"), faux_message(faux_text("hello"))]
    agent.follow_up("later")
    agent.steer("now")
    await agent.resume()
    assert user_texts(agent.state.messages) == ["hi", "now", "later"]


async def test_pi_resume_keeps_one_at_a_time_steering_from_an_assistant_tail() -> None:
    # pi agent.test.ts "continue() should keep one-at-a-time steering semantics from
    # assistant tail": the second steer waited for its own turn, not for the first one's
    fm = FauxModel(["Processed 1", "Processed 2"])
    agent = faux_agent(fm)
    agent.state.messages = [UserMessage("Initial"), faux_message(faux_text("Initial response"))]
    agent.steer("Steering 1")
    agent.steer("Steering 2")
    reply = await agent.resume()
    assert text_of(reply.content) == "Processed 2" and fm.call_count == 2
    assert [m.role for m in agent.state.messages[-4:]] == ["user", "assistant"] * 2
    assert user_texts(fm.contexts[0].messages) == ["Initial", "Steering 1"]
    assert not agent.has_queued_messages()


async def test_pi_session_id_reaches_stream_fn_and_the_setter_applies_next_run() -> None:
    seen: list[Any] = []
    fm = FauxModel(["ok", "ok"])

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(options.session_id if options is not None else None)
        return fm.stream_fn(model, context, options)

    from yiemagent import Agent

    agent = Agent(model=fm.model, stream_fn=stream_fn, session_id="session-abc")
    await agent.prompt("hello")
    agent.session_id = "session-def"
    assert agent.session_id == "session-def"
    await agent.prompt("hello again")
    assert seen == ["session-abc", "session-def"]


# ── state after each kind of end ───────────────────────────────────


async def test_r6_2_state_after_stop() -> None:
    fm = FauxModel(["fine"])
    agent = faux_agent(fm)
    reply = await agent.prompt("hi")
    assert reply.stop_reason == "stop"
    assert_idle_and_clean(agent)
    assert agent.state.error_message is None


async def test_r6_2_state_after_error_then_cleared_by_the_next_good_run() -> None:
    fm = FauxModel([faux_message(faux_text("boom"), stop_reason="error"), "fine"])
    agent = faux_agent(fm)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    reply = raised.value.message
    assert reply.stop_reason == "error"
    assert_idle_and_clean(agent)
    assert agent.state.error_message
    reply = await agent.prompt("again")
    assert reply.stop_reason == "stop"
    assert agent.state.error_message is None
    assert_idle_and_clean(agent)


async def test_r6_2_state_after_no_more_responses_error() -> None:
    fm = FauxModel([])
    agent = faux_agent(fm)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    reply = raised.value.message
    assert reply.stop_reason == "error"
    assert agent.state.error_message and "No more faux responses" in agent.state.error_message
    assert_idle_and_clean(agent)


async def test_r6_2_state_after_abort_mid_stream_and_wait_for_idle_returns() -> None:
    fm = FauxModel([faux_message(faux_text("word " * 200)), "next"], chunk_size=2, delay_s=0.01)
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)
    task = asyncio.ensure_future(agent.prompt("go"))
    await waiter.wait_for("message_update")
    assert agent.state.streaming_message is not None
    agent.abort()
    await asyncio.wait_for(agent.wait_for_idle(), 2)
    reply = await task
    assert reply.stop_reason == "aborted"
    assert_idle_and_clean(agent)
    assert agent.state.error_message  # an aborted message carries its reason
    assert agent.state.messages[-1] is reply  # the partial answer is kept in the transcript
    assert text_of(reply.content).startswith("wo")
    assert waiter.types()[-1] == "agent_end"
    assert text_of((await agent.prompt("again")).content) == "next"


async def test_r6_2_state_after_abort_mid_tool_has_the_error_message() -> None:
    calls = faux_message(faux_tool_call("wait", {}), faux_tool_call("wait", {}))
    fm = FauxModel([calls, "next"])
    agent = faux_agent(fm, tools=[make_tool("wait", until_aborted, parallel=True)])
    waiter = EventWaiter(agent)
    task = asyncio.ensure_future(agent.prompt("go"))
    await waiter.wait_for("tool_execution_start")
    await asyncio.sleep(0.02)
    assert agent.state.pending_tool_calls
    agent.abort()
    await asyncio.wait_for(agent.wait_for_idle(), 2)
    reply = await task
    assert reply.stop_reason == "aborted"
    assert_idle_and_clean(agent)
    assert agent.state.error_message == reply.error_message  # as after an abort mid-stream
    assert waiter.types()[-1] == "agent_end"
    starts = [e for e in waiter.events if e.type == "tool_execution_start"]
    ends = [e for e in waiter.events if e.type == "tool_execution_end"]
    assert len(starts) == len(ends) == 2
    assert text_of((await agent.prompt("again")).content) == "next"


async def test_r6_2_state_after_terminate() -> None:
    async def finish(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        from yiemagent import AgentToolResult, TextContent

        return AgentToolResult(content=[TextContent("all done")], terminate=True)

    fm = FauxModel([faux_message(faux_tool_call("finish", {}))])
    agent = faux_agent(fm, tools=[make_tool("finish", finish)])
    reply = await agent.prompt("go")
    assert reply.stop_reason == "tool_use_terminated"
    assert_idle_and_clean(agent)
    assert agent.state.error_message is None


# ── events a subscriber sees ───────────────────────────────────────


async def test_r5_1_subscriber_sees_the_loop_order_for_a_tool_run() -> None:
    fm = FauxModel([faux_message(faux_tool_call("quick", {})), "answer"])
    agent = faux_agent(fm, tools=[make_tool("quick", quick)])
    waiter = EventWaiter(agent)
    await agent.prompt("go")
    kinds = [t for t in waiter.types() if t != "message_update" and t != "tool_execution_update"]
    assert kinds == [
        "agent_start",
        "turn_start",
        "message_start",  # user
        "message_end",
        "message_start",  # assistant with the call
        "message_end",
        "tool_execution_start",
        "tool_execution_end",
        "message_start",  # tool result
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    roles = [e.message.role for e in waiter.events if e.type == "message_end"]
    assert roles == ["user", "assistant", "toolResult", "assistant"]


async def test_r5_1_state_is_updated_before_listeners_see_message_end() -> None:
    fm = FauxModel(["answer"])
    agent = faux_agent(fm)
    lengths: list[int] = []

    def listener(event: Any, signal: Any) -> None:
        if event.type == "message_end":
            lengths.append(len(agent.state.messages))

    agent.subscribe(listener)
    await agent.prompt("go")
    assert lengths == [1, 2]


async def test_r6_2_active_run_is_true_at_agent_start_and_false_after() -> None:
    fm = FauxModel(["answer"])
    agent = faux_agent(fm)
    flags: list[tuple[str, bool]] = []
    agent.subscribe(lambda e, s: flags.append((e.type, agent.state.active_run)))
    await agent.prompt("go")
    assert flags[0] == ("agent_start", True)
    assert all(active for kind, active in flags[:-1])
    assert agent.state.active_run is False


# ── input forms ────────────────────────────────────────────────────


async def test_r6_3_prompt_with_images() -> None:
    fm = FauxModel(["a cat"])
    agent = faux_agent(fm)
    image = ImageContent(data="aGVsbG8=", mime_type="image/png")
    await agent.prompt("what is this?", images=[image])
    sent = fm.contexts[-1].messages[-1]
    assert sent.role == "user"
    kinds = [c.type for c in sent.content]
    assert kinds == ["text", "image"]
    assert sent.content[1].data == "aGVsbG8="


async def test_r6_3_prompt_with_a_list_of_user_messages_is_one_run() -> None:
    fm = FauxModel(["both read"])
    agent = faux_agent(fm)
    reply = await agent.prompt([UserMessage("one"), UserMessage("two")])
    assert text_of(reply.content) == "both read"
    assert user_texts(agent.state.messages) == ["one", "two"]
    assert len(fm.contexts) == 1


async def test_r6_3_an_empty_list_is_refused_and_the_agent_stays_idle() -> None:
    fm = FauxModel(["x"])
    agent = faux_agent(fm)
    with pytest.raises(ValueError, match="at least one message"):
        await agent.prompt([])
    with pytest.raises(ValueError, match="at least one message"):
        agent.send([])
    assert_idle_and_clean(agent)
    assert agent.state.messages == [] and fm.contexts == []


# ── channels under abort ────────────────────────────────────


async def test_r6_5_abort_a_sent_prompt_then_take_response_gets_the_aborted_answer() -> None:
    fm = FauxModel([faux_stall(1), "second"], delay_s=0.01)
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)
    agent.send("first")
    agent.send("second")
    await waiter.wait_for("message_update")
    agent.abort()
    first = await asyncio.wait_for(agent.take_response(), 2)
    second = await asyncio.wait_for(agent.take_response(), 2)
    assert first.stop_reason == "aborted"
    assert text_of(second.content) == "second"
    await asyncio.wait_for(agent.wait_for_idle(), 2)
    assert_idle_and_clean(agent)
    assert user_texts(agent.state.messages) == ["first", "second"]


async def test_r6_5_wait_for_idle_after_abort_of_a_sent_prompt() -> None:
    fm = FauxModel([faux_stall(1)], delay_s=0.01)
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)
    agent.send("first")
    await waiter.wait_for("message_update")
    agent.abort()
    await asyncio.wait_for(agent.wait_for_idle(), 2)
    assert_idle_and_clean(agent)
    assert (await agent.take_response()).stop_reason == "aborted"


async def test_r6_6_prompt_after_an_aborted_run_sends_a_valid_transcript() -> None:
    fm = FauxModel([faux_stall(2), "ok"], delay_s=0.01)
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)
    task = asyncio.ensure_future(agent.prompt("first"))
    await waiter.wait_for("message_update")
    agent.abort()
    await task
    reply = await agent.prompt("second")
    assert text_of(reply.content) == "ok"
    assert user_texts(fm.contexts[-1].messages) == ["first", "second"]
    assert isinstance(agent.state.messages[-1], AssistantMessage)


# ── agent-loop.test.ts through the Agent ───────────────────────────────────


async def test_r6_3_resume_from_a_user_message_emits_no_user_message_events() -> None:
    fm = FauxModel(["Response"])
    agent = faux_agent(fm, messages=[UserMessage("Hello")])
    waiter = EventWaiter(agent)
    reply = await agent.resume()
    assert text_of(reply.content) == "Response"
    ends = [e.message.role for e in waiter.events if e.type == "message_end"]
    assert ends == ["assistant"]
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_r6_3_resume_with_an_empty_transcript_raises_and_stays_idle() -> None:
    from yiemagent.errors import ConfigError

    fm = FauxModel(["x"])
    agent = faux_agent(fm)
    with pytest.raises(ConfigError, match="nothing to resume"):
        await agent.resume()
    assert_idle_and_clean(agent)
    assert text_of((await agent.prompt("hi")).content) == "x"


async def test_pi_transform_context_runs_before_convert_to_llm_and_keeps_the_transcript() -> None:
    fm = FauxModel(["Response"])
    seen: dict[str, int] = {}

    async def transform(messages: list[Any], signal: Any = None) -> list[Any]:
        seen["transformed"] = len(messages)
        return messages[-2:]

    def convert(messages: list[Any]) -> list[Any]:
        seen["converted"] = len(messages)
        return list(messages)

    history = [
        UserMessage("old 1"),
        faux_message(faux_text("old response 1")),
        UserMessage("old 2"),
        faux_message(faux_text("old response 2")),
    ]
    agent = faux_agent(fm, messages=history, transform_context=transform, convert_to_llm=convert)
    await agent.prompt("new message")
    assert seen == {"transformed": 5, "converted": 2}
    assert len(fm.contexts[-1].messages) == 2
    assert len(agent.state.messages) == 6


async def test_pi_steer_during_the_first_tool_is_in_context_of_the_next_call() -> None:
    started = asyncio.Event()

    async def echo(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(0.05)
        return f"ok:{args['value']}"

    calls = faux_message(
        faux_tool_call("echo", {"value": "first"}), faux_tool_call("echo", {"value": "second"})
    )
    fm = FauxModel([calls, "done"])
    agent = faux_agent(fm, tools=[make_tool("echo", echo)], tool_execution="sequential")
    waiter = EventWaiter(agent)
    task = asyncio.ensure_future(agent.prompt("start"))
    await asyncio.wait_for(started.wait(), 2)
    agent.steer("interrupt")
    await task
    # every call gets a result and the steering message reaches the next model call
    ends = [e for e in waiter.events if e.type == "tool_execution_end"]
    assert len(ends) == 2
    assert "interrupt" in user_texts(fm.contexts[-1].messages)
    roles = [m.role for m in fm.contexts[-1].messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "user"]


async def test_r6_5_resume_that_fails_before_its_run_keeps_the_queued_follow_up(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import yiemagent.ai.models as models
    from yiemagent import Agent, ProviderError

    def missing(name: str, **kwargs: Any) -> Any:
        raise ProviderError("the local extra is not installed")

    monkeypatch.setattr(models, "get_model", missing)
    agent = Agent(messages=[UserMessage("hi"), faux_message(faux_text("hello"))])
    agent.follow_up("queued")
    with pytest.raises(ProviderError):
        await agent.resume()
    assert agent.has_queued_messages()  # not lost with the run that never started
    assert_idle_and_clean(agent)


async def test_r5_1_a_follow_up_gets_its_message_events_right_after_the_turn_start() -> None:
    fm = FauxModel(["first", "second"])
    agent = faux_agent(fm)
    waiter = EventWaiter(agent)
    agent.follow_up("more")
    await agent.prompt("go")
    kinds = [t for t in waiter.types() if t != "message_update"]
    assert kinds == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "turn_start",
        "message_start",  # the follow-up
        "message_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    roles = [e.message.role for e in waiter.events if e.type == "message_end"]
    assert roles == ["user", "assistant", "user", "assistant"]
    assert user_texts(agent.state.messages) == ["go", "more"]


async def test_r5_1b_a_listener_that_aborts_at_agent_start_ends_the_run_cleanly() -> None:
    fm = FauxModel(["later"])
    agent = faux_agent(fm)
    starts: list[Any] = []

    def listener(event: Any, signal: Any) -> None:
        if event.type == "agent_start":
            starts.append(event)
            if len(starts) == 1:
                agent.abort()

    agent.subscribe(listener)
    reply = await agent.prompt("go")
    assert reply.stop_reason == "aborted"
    assert_idle_and_clean(agent)
    assert agent.state.error_message
    assert text_of((await agent.prompt("again")).content) == "later"


def test_r6_4_a_prompt_sent_before_any_loop_is_not_overtaken_by_a_later_prompt() -> None:
    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm)
    agent.send("sent first")  # no event loop yet: it waits for one
    assert agent.is_busy

    async def main() -> list[str]:
        with pytest.raises(AgentBusyError):
            await agent.prompt("prompted second")
        first = await agent.take_response()
        await agent.wait_for_idle()
        reply = await agent.prompt("prompted second")
        return [text_of(first.content), text_of(reply.content)]

    assert asyncio.run(main()) == ["one", "two"]
    assert user_texts(agent.state.messages) == ["sent first", "prompted second"]
    assert not agent.is_busy


async def test_pi_custom_message_types_reach_convert_to_llm_and_stay_in_the_transcript() -> None:
    from dataclasses import dataclass, field

    @dataclass
    class HookMessage:
        text: str
        role: str = "hookMessage"
        timestamp: int = field(default=0)

    def convert(messages: list[Any]) -> list[Any]:
        out: list[Any] = []
        for m in messages:
            if m.role == "hookMessage":
                out.append(UserMessage(m.text))
            elif m.role in ("user", "assistant", "toolResult"):
                out.append(m)
        return out

    fm = FauxModel(["Response to hook", "plain"])
    agent = faux_agent(fm, messages=[HookMessage("Hook content")], convert_to_llm=convert)
    reply = await agent.resume()  # a custom message last: the caller's converter decides
    assert text_of(reply.content) == "Response to hook"
    assert user_texts(fm.contexts[-1].messages) == ["Hook content"]
    plain = faux_agent(fm, messages=[HookMessage("dropped")])
    await plain.prompt("hi")
    assert user_texts(fm.contexts[-1].messages) == ["hi"]  # default: custom roles dropped
    assert [m.role for m in plain.state.messages] == ["hookMessage", "user", "assistant"]


@pytest.mark.parametrize("kind", ["steer", "follow_up"])
async def test_r6_5_message_drained_then_aborted_before_injection_is_never_lost(
    kind: str,
) -> None:
    """openclaw#128008: a steer (or follow-up) the loop took when an abort lands in an awaited
    listener before the next model call is delivered exactly once: in this run or, requeued
    at the front, in the next one."""
    calls = faux_message(faux_tool_call("quick", {}), faux_tool_call("quick", {}))
    fm = FauxModel([calls if kind == "steer" else "answer", "after abort", "after the follow-up"])
    agent = faux_agent(fm, tools=[make_tool("quick", quick)], tool_execution="sequential")
    queue = agent.steer if kind == "steer" else agent.follow_up
    done: list[str] = []

    async def listener(event: Any, signal: Any) -> None:
        if event.type == "message_end" and event.message.role == "assistant" and not done:
            done.append("queued")
            queue("mine")
        elif event.type == "turn_start" and len(done) == 1:
            done.append("aborted")
            await asyncio.sleep(0)
            agent.abort()

    agent.subscribe(listener)
    await agent.prompt("go")
    assert done == ["queued", "aborted"]
    assert_idle_and_clean(agent)
    queue("later")
    await agent.prompt("next")
    texts = user_texts(agent.state.messages)
    assert texts.count("mine") == 1 and texts.count("later") == 1
    assert texts.index("mine") < texts.index("later")


async def test_r6_3_resume_after_an_abort_mid_tool_continues_from_the_tool_results() -> None:
    fm = FauxModel([faux_message(faux_tool_call("wait", {})), "resumed"])
    agent = faux_agent(fm, tools=[make_tool("wait", until_aborted)])
    waiter = EventWaiter(agent)
    task = asyncio.ensure_future(agent.prompt("go"))
    await waiter.wait_for("tool_execution_start")
    agent.abort()
    await task
    reply = await agent.resume()
    assert text_of(reply.content) == "resumed"
    assert [m.role for m in fm.contexts[-1].messages] == ["user", "assistant", "toolResult"]
    assert agent.state.error_message is None
    assert_idle_and_clean(agent)


async def test_r6_3_prompt_with_an_openai_user_dict_holding_an_image() -> None:
    fm = FauxModel(["a picture"])
    agent = faux_agent(fm)
    url = "data:image/png;base64,aGVsbG8="
    content = [{"type": "text", "text": "what"}, {"type": "image_url", "image_url": {"url": url}}]
    await agent.prompt({"role": "user", "content": content})
    sent = fm.contexts[-1].messages[-1]
    assert [c.type for c in sent.content] == ["text", "image"]
    assert sent.content[1].mime_type == "image/png" and sent.content[1].data == "aGVsbG8="


def test_r6_1_queue_modes_set_later_are_checked_like_the_constructors() -> None:
    from yiemagent.errors import ConfigError

    agent = faux_agent(FauxModel([]))
    agent.steering_mode = "all"
    agent.follow_up_mode = "all"
    assert (agent.steering_mode, agent.follow_up_mode) == ("all", "all")
    with pytest.raises(ConfigError, match="steering_mode"):
        agent.steering_mode = "one"  # type: ignore[assignment]
    with pytest.raises(ConfigError, match="follow_up_mode"):
        agent.follow_up_mode = "every"  # type: ignore[assignment]
    assert (agent.steering_mode, agent.follow_up_mode) == ("all", "all")


async def test_r6_5_prompt_and_wait_for_idle_return_after_async_agent_end_listeners() -> None:
    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm)
    finished: list[str] = []

    async def listener(event: Any, signal: Any) -> None:
        if event.type == "agent_end":
            await asyncio.sleep(0.05)
            finished.append("settled")

    agent.subscribe(listener)
    await agent.prompt("a")
    assert finished == ["settled"]
    agent.send("b")
    await agent.wait_for_idle()
    assert finished == ["settled", "settled"]


async def test_r6_2_state_changes_between_runs_apply_to_the_next_run() -> None:
    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm, system_prompt="first")
    await agent.prompt("a")
    agent.state.system_prompt = "second"
    agent.state.tools = [make_tool("quick", quick)]
    await agent.prompt("b")
    assert [c.system_prompt for c in fm.contexts] == ["first", "second"]
    assert [t.name for t in fm.contexts[-1].tools] == ["quick"]
    assert [t.name for t in agent.tool_store.tools.values()] == ["quick"]


@pytest.mark.parametrize(
    "kind", ["tool_execution_start", "tool_execution_end", "message_end", "turn_end", "agent_end"]
)
@pytest.mark.parametrize("is_async", [False, True])
async def test_a_listener_that_raises_loses_no_tool_result(
    kind: str, is_async: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """pi#9599: a listener raising on tool_execution_end left the completed call without
    its result in the history. Here it is logged; the run and the transcript go on whole."""
    ran: list[str] = []

    async def tool(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(tool_call_id)
        return f"done {tool_call_id}"

    calls = faux_message(faux_tool_call("t", {}, id="a"), faux_tool_call("t", {}, id="b"))
    fm = FauxModel([calls, "final", "second answer"])
    agent = faux_agent(fm, tools=[make_tool("t", tool, parallel=True)])

    def sync_listener(event: Any, signal: Any) -> None:
        if event.type == kind:
            raise RuntimeError("listener boom")

    async def async_listener(event: Any, signal: Any) -> None:
        sync_listener(event, signal)

    agent.subscribe(async_listener if is_async else sync_listener)
    reply = await agent.prompt("go")
    assert text_of(reply.content) == "final" and sorted(ran) == ["a", "b"]
    results = [(m.tool_call_id, text_of(m.content)) for m in agent.state.messages[2:4]]
    assert results == [("a", "done a"), ("b", "done b")]
    assert "listener boom" in caplog.text
    assert text_of((await agent.prompt("again")).content) == "second answer"
    assert_idle_and_clean(agent)
