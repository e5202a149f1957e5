"""Agents as agno (tests/unit/agent/test_run_error_event_type.py's exploding model,
tests/unit/team/test_delegate_closure_bug.py) and llama_index
(agent/workflow/test_single_agent_workflow.py's streamed and non-streamed runs) check
theirs, through `Agent`: a model call that raises, members built in a loop, and the two
ways of calling a model giving one run."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import Agent, AgentEndEvent, AgentRunError, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AgentEvent, Context, Model, StreamOptions, text_of


async def test_a_model_call_that_raises_ends_the_run_naming_the_error_class() -> None:
    # agno: RunErrorEvent.error_type "RuntimeError", the status error, "boom" in the content
    fm = FauxModel(["after the failure"])
    attempts: list[int] = []

    def exploding(model: Model, context: Context, options: StreamOptions | None) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise RuntimeError("boom")
        return fm.stream_fn(model, context, options)

    agent = Agent(model=fm.model, stream_fn=exploding)
    events: list[AgentEvent] = []
    agent.subscribe(lambda e, s: events.append(e))

    with pytest.raises(AgentRunError, match=r"^RuntimeError: boom$") as caught:
        await agent.prompt("hi")

    assert caught.value.message.stop_reason == "error"
    assert [e.type for e in events][-3:] == ["message_end", "turn_end", "agent_end"]
    assert [e.reason for e in events if isinstance(e, AgentEndEvent)] == ["error"]
    assert not agent.state.active_run
    reply = await agent.prompt("again")  # the agent stays usable
    assert text_of(reply.content) == "after the failure"


async def test_a_plain_model_call_that_raises_does_the_same() -> None:
    # agno test_non_streaming_run_still_reports_error_status, on the llm_call path
    def llm_call(formatted: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("boom")

    agent = Agent(llm_call=llm_call)
    with pytest.raises(AgentRunError, match="llm_call failed: RuntimeError: boom") as caught:
        await agent.prompt("hi")
    assert caught.value.message.stop_reason == "error"
    assert agent.state.messages[-1] is caught.value.message


async def test_members_built_in_a_loop_each_answer_for_themselves() -> None:
    # agno test_async_closure_captures_correct_agent_identity: three workers made in a
    # loop and called at once; each call reaches its own worker, not the last one built
    workers = []
    for i in range(1, 4):
        fm = FauxModel([f"Response from Worker{i}"])
        worker = Agent(f"You are worker {i}.", fm.model, stream_fn=fm.stream_fn, name=f"Worker{i}")
        workers.append(worker.as_tool())
    lead_fm = FauxModel(
        [
            faux_message(*(faux_tool_call(f"Worker{i}", {"input": "task"}) for i in range(1, 4))),
            "all answered",
        ]
    )
    lead = Agent(model=lead_fm.model, stream_fn=lead_fm.stream_fn, tools=workers)

    await lead.prompt("ask everyone")

    answers = [
        (m.tool_name, text_of(m.content))
        for m in lead.state.messages
        if isinstance(m, ToolResultMessage)
    ]
    assert answers == [(f"Worker{i}", f"Response from Worker{i}") for i in range(1, 4)]


async def test_a_streamed_and_a_plain_model_call_give_the_same_run() -> None:
    # llama_index test_function_agent_streams_empty_tool_arguments: a tool without
    # arguments runs once either way and the answers match
    def run_with(ran: list[str]) -> AgentTool:
        def empty_tool(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
            ran.append(call_id)
            return "empty tool result"

        return AgentTool("empty_tool", "empty", "d", {"type": "object"}, empty_tool)

    streamed_ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("empty_tool", {}, id="empty-call")), "finished"])
    streamed = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[run_with(streamed_ran)])

    plain_ran: list[str] = []
    replies: list[dict[str, Any]] = [
        {
            "role": "assistant",
            "content": "calling empty tool",
            "tool_calls": [
                {"id": "empty-call", "function": {"name": "empty_tool", "arguments": ""}}
            ],
        },
        {"role": "assistant", "content": "finished"},
    ]
    plain = Agent(llm_call=lambda formatted: replies.pop(0), tools=[run_with(plain_ran)])

    streamed_reply = await streamed.prompt("Run the empty tool")
    plain_reply = await plain.prompt("Run the empty tool")

    assert text_of(streamed_reply.content) == text_of(plain_reply.content) == "finished"
    assert streamed_ran == plain_ran == ["empty-call"]
