"""DESIGN R-6.3 / R-6.6: a run that ends in error raises `AgentRunError` from `prompt` and
`resume` (carrying the error message and the run's messages) and leaves the agent usable; an
aborted run and the `send` / `take_response` channel hand back the message as before."""

from __future__ import annotations

import asyncio

import pytest

from tests.agent._kit import EventWaiter, faux_agent, make_tool
from yiemagent import (
    Agent,
    AgentRunError,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    YiemAgentError,
    get_model,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call


async def test_a_failed_prompt_raises_with_the_message_and_the_runs_messages() -> None:
    fm = FauxModel([faux_message(faux_text("half"), stop_reason="error"), "fine"])
    agent = faux_agent(fm)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    error = raised.value
    assert isinstance(error, YiemAgentError)
    assert error.message.stop_reason == "error"
    assert str(error) == error.message.error_message
    assert [m.role for m in error.new_messages] == ["user", "assistant"]
    assert error.new_messages[-1] is error.message
    assert agent.state.messages == error.new_messages  # in the transcript as with any run
    assert agent.state.error_message == error.message.error_message
    assert not agent.is_busy
    reply = await agent.prompt("again")  # usable
    assert reply.text == "fine"
    assert agent.state.error_message is None


async def test_the_quickstart_with_no_api_key_raises_instead_of_an_empty_reply(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The README quickstart with a hosted model and no key printed an empty line and exited 0."""
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = Agent(model=get_model("openai/gpt-4o-mini"))
    with pytest.raises(AgentRunError, match="OPENAI_API_KEY"):
        await agent.prompt("What is 17 * 23?")
    assert not agent.is_busy and agent.state.active_run is False


def test_prompt_sync_raises_it_too() -> None:
    agent = faux_agent(FauxModel([]))
    with pytest.raises(AgentRunError, match="No more faux responses"):
        agent.prompt_sync("hi")


async def test_resume_raises_on_an_error_run() -> None:
    fm = FauxModel([faux_message(faux_text("x"), stop_reason="error")])
    agent = faux_agent(fm, messages=[UserMessage("left over")])
    with pytest.raises(AgentRunError) as raised:
        await agent.resume()
    assert [m.role for m in raised.value.new_messages] == ["assistant"]


async def test_an_aborted_run_returns_its_message() -> None:
    started = asyncio.Event()

    async def wait(*args: object) -> str:
        started.set()
        await asyncio.sleep(10)
        return "never"

    fm = FauxModel([faux_message(faux_tool_call("wait", {}))])
    agent = faux_agent(fm, tools=[make_tool("wait", wait)])
    waiter = EventWaiter(agent)
    task = asyncio.ensure_future(agent.prompt("go"))
    await waiter.wait_for("tool_execution_start")
    agent.abort()
    reply = await task
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "aborted"
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 1 and results[0].is_error  # the call is answered


async def test_send_and_take_response_hand_back_the_error_message() -> None:
    fm = FauxModel([faux_message(faux_text("x"), stop_reason="error"), "second"])
    agent = faux_agent(fm)
    agent.send("one")
    agent.send("two")
    first = await agent.take_response()
    second = await agent.take_response()
    assert first.stop_reason == "error" and first.error_message
    assert second.text == "second"


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("cannot print myself")


@pytest.mark.parametrize(
    ("raised", "said"),
    [
        (
            ExceptionGroup("unhandled errors in a TaskGroup", [ConnectionError("db down")]),
            "ExceptionGroup: db down",
        ),
        (_Unprintable(), "_Unprintable"),
    ],
)
async def test_a_run_that_fails_says_what_failed_inside_a_group_or_unprintable(
    raised: Exception, said: str
) -> None:
    # griptape#2027: a hook whose work runs in a TaskGroup (a store's client) ended the run
    # with "ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)"; an exception
    # whose text cannot be read ended it with the error of reading it ("RuntimeError:
    # cannot print myself"). The run's error names what failed.
    def transform(messages: list[object], signal: object) -> list[object]:
        raise raised

    fm = FauxModel(["never"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, transform_context=transform)
    with pytest.raises(AgentRunError) as error:
        await agent.prompt("hi")
    assert error.value.message.error_message == said
    assert fm.call_count == 0 and not agent.is_busy


async def test_a_prepare_next_turn_returning_no_turn_update_says_what_it_returned() -> None:
    def ok(tool_call_id: str, args: object, signal: object, on_update: object) -> str:
        return "ok"

    fm = FauxModel([faux_message(faux_tool_call("t", {})), "never asked", "fine"])
    agent = faux_agent(fm, tools=[make_tool("t", ok)], prepare_next_turn=lambda turn: "next")
    with pytest.raises(AgentRunError, match="prepare_next_turn returned str; expected Turn"):
        await agent.prompt("go")
    assert fm.call_count == 1
    assert isinstance(agent.state.messages[-2], ToolResultMessage)  # the call was answered
