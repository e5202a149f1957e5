"""The cases strands-agents' tests check (tests/strands/agent/test_agent.py,
event_loop/test_event_loop.py, tools/executors/test_concurrent.py), on our Agent: a history
whose tool calls have no results answered before a new prompt, a valid one left alone,
several messages as one prompt, an invalid tool name, a tool asking to stop the loop, a
raising tool in a concurrent batch, and the history given at construction copied.

Where ours differs by choice: one result asking to terminate stops the loop only when every
result of the batch does (R-4.10), where strands' `stop_event_loop` from any tool stops
it; and the unanswered calls are answered in what the model is sent ("No result provided",
R-5.10), not written into the agent's transcript as strands does."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import (
    Agent,
    AgentToolResult,
    AssistantMessage,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import faux_agent, make_tool


def recording_llm_call(sent: list[dict[str, Any]]) -> Any:
    def llm_call(formatted: dict[str, Any]) -> dict[str, Any]:
        sent.append(formatted)
        return {"role": "assistant", "content": "ok"}

    return llm_call


async def test_tool_calls_a_history_left_unanswered_are_answered_before_the_new_prompt() -> None:
    sent: list[dict[str, Any]] = []
    orphaned = AssistantMessage(
        [ToolCall("orphaned-1", "echo", {}), ToolCall("orphaned-2", "echo", {})],
        stop_reason="toolUse",
    )
    history = [UserMessage("hi"), orphaned]
    agent = Agent(
        llm_call=recording_llm_call(sent),
        messages=history,
        tools=[make_tool("echo", lambda *a: "echoed")],
    )
    await agent.prompt("next")

    wire = sent[0]["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "tool", "user"]
    assert [(m["tool_call_id"], m["content"]) for m in wire[3:5]] == [
        ("orphaned-1", "No result provided"),
        ("orphaned-2", "No result provided"),
    ]
    assert agent.state.messages[:2] == history  # the transcript keeps what was given


async def test_a_valid_history_is_sent_as_it_is() -> None:
    sent: list[dict[str, Any]] = []
    history = [
        UserMessage("hi"),
        AssistantMessage([ToolCall("c1", "echo", {})], stop_reason="toolUse"),
        ToolResultMessage("c1", "echo", "echoed"),
        AssistantMessage("done"),
    ]
    agent = Agent(
        llm_call=recording_llm_call(sent),
        messages=history,
        tools=[make_tool("echo", lambda *a: "echoed")],
    )
    await agent.prompt("next")

    wire = sent[0]["messages"]
    assert [m["role"] for m in wire] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert wire[3]["content"] == "echoed"


async def test_several_messages_make_one_prompt_in_order() -> None:
    fm = FauxModel(["ok"])
    agent = faux_agent(fm)
    await agent.prompt([UserMessage("first"), UserMessage("second")])
    assert [text_of(m.content) for m in fm.contexts[0].messages] == ["first", "second"]
    assert fm.call_count == 1


async def test_a_call_of_an_invalid_tool_name_is_answered_and_the_run_goes_on() -> None:
    fm = FauxModel([faux_message(faux_tool_call("invalid tool", {})), "done"])
    agent = faux_agent(fm, tools=[make_tool("echo", lambda *a: "echoed")])
    reply = await agent.prompt("go")

    (result,) = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error
    assert text_of(result.content) == 'Tool "invalid tool" not found. Available tools: echo'
    assert reply.text == "done"


def stop(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content="stopping", terminate=True)


def carry_on(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
    return AgentToolResult(content="carrying on")


async def test_a_tool_asking_to_stop_ends_the_run_without_another_model_call() -> None:
    fm = FauxModel([faux_message(faux_tool_call("stop", {})), "never asked"])
    agent = faux_agent(fm, tools=[make_tool("stop", stop)])
    reply = await agent.prompt("go")

    assert fm.call_count == 1
    assert reply.stop_reason == "tool_use_terminated"
    assert "stopping" in reply.text


async def test_one_of_two_results_asking_to_stop_does_not_stop_the_loop() -> None:
    calls = [faux_tool_call("stop", {}), faux_tool_call("carry_on", {})]
    fm = FauxModel([faux_message(*calls), "answered"])
    agent = faux_agent(fm, tools=[make_tool("stop", stop), make_tool("carry_on", carry_on)])
    reply = await agent.prompt("go")
    assert fm.call_count == 2 and reply.text == "answered"


async def test_a_raising_tool_in_a_concurrent_batch_leaves_the_others_running() -> None:
    finished: list[str] = []

    async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(0.05)
        finished.append(call_id)
        return "slow done"

    async def broken(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError("Tool error")

    calls = [faux_tool_call("slow", {}, id="s1"), faux_tool_call("broken", {}, id="b1")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(
        fm,
        tools=[make_tool("slow", slow, parallel=True), make_tool("broken", broken, parallel=True)],
    )
    reply = await agent.prompt("go")

    results = {m.tool_call_id: m for m in agent.state.messages if isinstance(m, ToolResultMessage)}
    assert finished == ["s1"]
    assert not results["s1"].is_error and text_of(results["s1"].content) == "slow done"
    assert results["b1"].is_error and "Tool error" in text_of(results["b1"].content)
    assert reply.text == "done"


async def test_the_history_given_is_copied_not_shared() -> None:
    given = [UserMessage("one")]
    agent = faux_agent(FauxModel(["ok"]), messages=given)
    given.append(UserMessage("two"))
    assert [text_of(m.content) for m in agent.state.messages] == ["one"]
