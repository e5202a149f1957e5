"""Seed 000's `yiemAgent`, sentence by sentence, through the public `Agent` (DESIGN §6):
construction as the seed writes it, the event sink, the initial history and the order of
follow-ups against new input."""

from __future__ import annotations

import asyncio
from typing import Any

from yiemagent import Agent, AgentEvent, AgentToolResult, ToolStore, list_tools_tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent, make_tool, user_texts


class Llm:
    """A seed-style `llmCall`: records what it is given, answers from a script."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.received: list[dict[str, Any]] = []

    def __call__(self, formatted: dict[str, Any]) -> dict[str, Any]:
        self.received.append(formatted)
        return self.answers.pop(0)


def tool_call_answer(name: str, arguments: str = "{}") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


async def test_the_seeds_manual_registration_and_constructor_work_together() -> None:
    """000 §1 step 2.5: `registerTool(store, ...)`, `registerTool(store, listTool(store))`,
    then `yiemAgent(tools = getTools(store), llmCall, agentEventSink, _tool_store = store)`;
    the store stays the agent's, so a tool registered later is offered on the next turn."""
    store = ToolStore("myAgent")
    store.register(make_tool("getTime", lambda *args: "12:00"))
    store.register(list_tools_tool(store))
    events: list[AgentEvent] = []
    llm = Llm(
        tool_call_answer("listTools"),
        {"role": "assistant", "content": "I have the tools."},
    )
    agent = Agent(
        system_prompt="You are a helpful assistant.",
        tools=store.tools,
        llm_call=llm,
        on_event=events.append,
        tool_store=store,
    )
    store.register(make_tool("getWeather", lambda *args: "sunny"))
    answer = await agent.prompt("which tools?")
    assert answer.text == "I have the tools."
    offered = [t["function"]["name"] for t in llm.received[0]["tools"]]
    assert offered == ["getTime", "listTools", "getWeather"]
    listing = llm.received[1]["messages"][-1]["content"]
    assert "- getTime:" in listing and "- getWeather:" in listing
    assert events[0].type == "agent_start" and events[-1].type == "agent_end"


async def test_the_event_sink_sees_each_calls_start_updates_and_end() -> None:
    """000 §13: `toolExecStartEvent → [zero or more toolExecUpdateEvent] → toolExecEndEvent`,
    delivered to the `agentEventSink` given at construction."""

    def count(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        on_update(AgentToolResult.text("1"))
        on_update(AgentToolResult.text("2"))
        return "counted"

    events: list[AgentEvent] = []
    agent = Agent(
        tools=[make_tool("count", count)],
        llm_call=Llm(tool_call_answer("count"), {"role": "assistant", "content": "done"}),
        on_event=events.append,
    )
    await agent.prompt("count")
    lifecycle = [e for e in events if e.type.startswith("tool_execution")]
    assert [(e.type, getattr(e, "tool_call_id", None)) for e in lifecycle] == [
        ("tool_execution_start", "call_1"),
        ("tool_execution_update", "call_1"),
        ("tool_execution_update", "call_1"),
        ("tool_execution_end", "call_1"),
    ]
    end = lifecycle[-1]
    assert end.type == "tool_execution_end"
    assert text_of(end.result.content) == "counted" and end.is_error is False


async def test_initial_messages_are_the_history_the_first_call_sees() -> None:
    """000 §1 constructor: `messages` — "Initial conversation history" (default empty)."""
    earlier = Agent(llm_call=Llm({"role": "assistant", "content": "Hi Ann."}))
    await earlier.prompt("I am Ann.")
    llm = Llm({"role": "assistant", "content": "You are Ann."})
    agent = Agent(messages=earlier.state.messages, llm_call=llm)
    await agent.prompt("Who am I?")
    sent = [(m["role"], m["content"]) for m in llm.received[0]["messages"]]
    assert sent[1:] == [
        ("user", "I am Ann."),
        ("assistant", "Hi Ann."),
        ("user", "Who am I?"),
    ]
    assert Agent(llm_call=llm).state.messages == []


async def test_a_follow_up_runs_before_a_prompt_sent_after_it() -> None:
    """000 §5: follow-ups sent while busy "are processed after the primary message completes
    but before new input arrives"; DESIGN R-6.4: a sent prompt waits for the run to end."""
    release = asyncio.Event()

    async def slow(*args: Any) -> str:
        await release.wait()
        return "slow done"

    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "primary", "follow", "next"])
    agent = faux_agent(fm, tools=[make_tool("slow", slow)])
    waiter = EventWaiter(agent)
    agent.send("primary prompt")
    await waiter.wait_for("tool_execution_start")
    agent.follow_up("and the follow-up")
    agent.send("new input")
    release.set()
    first = await agent.take_response()
    second = await agent.take_response()
    assert (first.text, second.text) == ("follow", "next")
    assert user_texts(fm.contexts[2].messages) == ["primary prompt", "and the follow-up"]
    assert user_texts(fm.contexts[3].messages) == [
        "primary prompt",
        "and the follow-up",
        "new input",
    ]


async def test_after_a_terminate_the_agent_resumes_from_the_tool_results() -> None:
    """000 §10 "Async handoff: a tool triggers a long-running external operation; the
    external system will later resume via `continue()`": the terminated run ends without a
    second model call, and `resume()` then calls the model on the transcript as it is."""

    def start_job(*args: Any) -> AgentToolResult:
        return AgentToolResult.text("started job 7", terminate=True)

    fm = FauxModel([faux_message(faux_tool_call("start_job", {})), "Job 7 finished."])
    agent = faux_agent(fm, tools=[make_tool("start_job", start_job)])
    stopped = await agent.prompt("run the job")
    assert stopped.stop_reason == "tool_use_terminated" and fm.call_count == 1
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]
    answer = await agent.resume()
    assert answer.text == "Job 7 finished." and fm.call_count == 2
    resumed_with = fm.contexts[1].messages
    assert [m.role for m in resumed_with] == ["user", "assistant", "toolResult"]
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
