"""An `Agent` given a history of the shapes pydantic-ai's test_agent.py runs from
(`test_run_with_history_ending_on_model_response_*`, `test_consecutive_model_responses_in_history`):
what `resume()` and `prompt()` do with it, and what an OpenAI-compatible server is sent.

By choice (docs/agent.md, "Prompts"): tool calls a given history leaves without results
are never run by `resume()` (pydantic-ai runs them; here a call's side effects are not
repeated behind the caller's back, and a session reopened after a crash marks such calls
interrupted instead), and a new prompt after them is allowed: the provider is sent each
unanswered call with the result "No result provided" (pydantic-ai refuses the prompt)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import Agent, AgentTool, ConfigError, Model, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import text_of

pytestmark = pytest.mark.timeout(120)  # the OpenAI case imports the SDK: seconds under load

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def recording_tool(ran: list[str]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "Test response"

    return AgentTool("test_tool", "test_tool", "a test tool", SCHEMA, execute)


def unanswered() -> list[Any]:
    return [UserMessage("Hello"), faux_message(faux_tool_call("test_tool", {}, id="call_123"))]


async def test_resume_after_unanswered_calls_refuses_and_runs_nothing() -> None:
    ran: list[str] = []
    fm = FauxModel(["never asked"])
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[recording_tool(ran)], messages=unanswered()
    )

    with pytest.raises(ConfigError, match="nothing to resume"):
        await agent.resume()

    assert ran == [] and fm.call_count == 0 and not agent.state.active_run
    assert [m.role for m in agent.state.messages] == ["user", "assistant"]


async def test_resume_after_an_answer_refuses_and_a_queued_follow_up_starts_it() -> None:
    # test_run_with_history_ending_on_model_response_without_tool_calls_or_user_prompt:
    # pydantic-ai returns no new messages; here there is nothing to continue until a
    # follow-up is queued (pi's continue() then runs it)
    fm = FauxModel(["Final response"])
    history = [UserMessage("Hello"), faux_message(faux_text("world"))]
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, messages=history)

    with pytest.raises(ConfigError, match="nothing to resume"):
        await agent.resume()
    agent.follow_up(UserMessage("and then?"))
    reply = await agent.resume()

    assert text_of(reply.content) == "Final response"
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "user", "assistant"]


async def test_consecutive_assistant_messages_in_a_history_are_sent_in_order() -> None:
    # test_consecutive_model_responses_in_history
    fm = FauxModel(["ok"])
    history = [UserMessage("Hello"), faux_message(faux_text("a")), faux_message(faux_text("b"))]
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, messages=history)
    await agent.prompt("next")

    sent = fm.contexts[0].messages
    assert [(m.role, text_of(m.content)) for m in sent] == [
        ("user", "Hello"),
        ("assistant", "a"),
        ("assistant", "b"),
        ("user", "next"),
    ]


async def test_a_prompt_after_unanswered_calls_sends_each_its_no_result_answer() -> None:
    # test_run_with_history_ending_on_model_response_with_tool_calls_and_user_prompt
    ran: list[str] = []
    with ReplayServer() as server:
        server.enqueue(sse_reply(openai_chunks({"role": "assistant", "content": "Answered."})))
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        agent = Agent(model=model, tools=[recording_tool(ran)], messages=unanswered())
        reply = await agent.prompt("New question")
        body = server.requests[0].body

    assert text_of(reply.content) == "Answered." and ran == []
    wire = [(m["role"], m.get("tool_call_id"), m.get("content")) for m in body["messages"]]
    assert wire[-3:] == [
        ("assistant", None, None),
        ("tool", "call_123", "No result provided"),
        ("user", None, "New question"),
    ]
    assert body["messages"][-3]["tool_calls"][0]["id"] == "call_123"
