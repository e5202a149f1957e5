"""The agent cases smolagents' tests/test_agents.py checks for its tool-calling agent, on
our `Agent`: tools offered with their descriptions, an empty toolbox, a conversation reset,
a tool added after the agent was made, an interrupt from a step callback, an image a tool
returns, wrong arguments and a raising tool answered to the model, a model error raised,
a misformatted call, a final answer a check refuses, and a final answer beside other calls.

Where ours differs by choice: smolagents raises on a tool's wrong arguments or error, ours
answers the model with an error result and the run goes on (R-4.1); and `final_result`
may share a reply with other tool calls (docs/output.md, "How each model is asked"), where
smolagents refuses a final answer called in parallel."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from yiemagent import (
    AgentRunError,
    AgentTool,
    AgentToolResult,
    ImageContent,
    ToolResultMessage,
    TurnStartEvent,
    tool,
)
from yiemagent.ai.providers.faux import (
    FauxModel,
    faux_malformed_tool_call,
    faux_message,
    faux_tool_call,
)
from yiemagent.types import text_of

from ._kit import faux_agent, make_tool

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


@tool
def fake_image_understanding(prompt: str) -> str:
    """Describe an image.

    Args:
        prompt: What to look for.
    """
    return f"described {prompt}"


def results(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_the_model_is_offered_each_tool_with_its_description_and_schema() -> None:
    fm = FauxModel(["ok"])
    agent = faux_agent(fm, tools=[fake_image_understanding])
    await agent.prompt("look")

    offered = {t.name: t for t in fm.contexts[0].tools}
    assert list(offered) == ["fake_image_understanding"]
    assert offered["fake_image_understanding"].description.startswith("Describe an image.")
    schema = offered["fake_image_understanding"].input_schema
    assert schema["properties"]["prompt"]["description"] == "What to look for."


async def test_an_agent_without_tools_offers_none_and_answers() -> None:
    fm = FauxModel(["plain answer"])
    agent = faux_agent(fm)
    reply = await agent.prompt("hi")
    assert reply.text == "plain answer"
    assert list(fm.contexts[0].tools) == []


async def test_reset_starts_the_next_conversation_empty() -> None:
    fm = FauxModel(["first", "second"])
    agent = faux_agent(fm, system_prompt="be brief")
    await agent.prompt("one")
    agent.reset()
    assert agent.state.messages == []
    await agent.prompt("two")

    assert [text_of(m.content) for m in fm.contexts[1].messages] == ["two"]
    assert fm.contexts[1].system_prompt == "be brief"


async def test_a_tool_registered_after_the_agent_was_made_is_offered_next_prompt() -> None:
    fm = FauxModel(["without", faux_message(faux_tool_call("late", {})), "with"])
    agent = faux_agent(fm, tools=[make_tool("early", lambda *a: "e")])
    await agent.prompt("one")
    agent.tool_store.register(make_tool("late", lambda *a: "late ran"))
    reply = await agent.prompt("two")

    assert [t.name for t in fm.contexts[0].tools] == ["early"]
    assert sorted(t.name for t in fm.contexts[1].tools) == ["early", "late"]
    assert text_of(results(agent)[0].content) == "late ran"
    assert reply.text == "with"


async def test_an_abort_from_a_step_callback_stops_before_the_next_model_call() -> None:
    fm = FauxModel([faux_message(faux_tool_call("step", {})), "never asked", "after"])
    agent = faux_agent(fm, tools=[make_tool("step", lambda *a: "stepped")])

    def interrupt_after_first_step(event: Any, signal: Any) -> None:
        if event.type == "turn_end":
            agent.abort("interrupted")
            unsubscribe()

    unsubscribe = agent.subscribe(interrupt_after_first_step)
    reply = await agent.prompt("go")

    assert fm.call_count == 1
    assert reply.stop_reason == "aborted"
    assert len(results(agent)) == 1  # the step's call is answered
    assert (await agent.prompt("again")).text == "never asked"  # the agent is usable


async def test_an_image_a_tool_returns_reaches_the_model_in_its_result() -> None:
    def screenshot(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=[ImageContent(PNG, "image/png")])

    fm = FauxModel([faux_message(faux_tool_call("screenshot", {})), "I see it"])
    agent = faux_agent(fm, tools=[make_tool("screenshot", screenshot)])
    await agent.prompt("look")

    sent = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    images = [b for b in sent[0].content if isinstance(b, ImageContent)]
    assert [(i.data, i.mime_type) for i in images] == [(PNG, "image/png")]


async def test_wrong_arguments_are_answered_to_the_model_which_corrects_them() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("fake_image_understanding", {"prompt": 3})),
            faux_message(faux_tool_call("fake_image_understanding", {"prompt": "cats"})),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[fake_image_understanding])
    reply = await agent.prompt("look")

    first, second = results(agent)
    assert first.is_error and "$.prompt" in text_of(first.content)
    assert not second.is_error and text_of(second.content) == "described cats"
    assert reply.text == "done"


async def test_a_raising_tool_is_an_error_result_and_the_run_answers() -> None:
    def broken(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise RuntimeError("Sorry, I can't do that")

    fm = FauxModel([faux_message(faux_tool_call("broken", {})), "it failed"])
    agent = faux_agent(fm, tools=[make_tool("broken", broken)])
    reply = await agent.prompt("try")

    (result,) = results(agent)
    assert result.is_error and "Sorry, I can't do that" in text_of(result.content)
    assert reply.text == "it failed"


async def test_a_model_error_is_raised_and_the_agent_stays_usable() -> None:
    fm = FauxModel(
        [faux_message(stop_reason="error", error_message="Model is overloaded"), "fine now"]
    )
    agent = faux_agent(fm)
    with pytest.raises(AgentRunError, match="Model is overloaded"):
        await agent.prompt("hi")
    assert (await agent.prompt("again")).text == "fine now"


async def test_a_misformatted_call_says_what_was_wrong_and_the_model_retries() -> None:
    fm = FauxModel(
        [
            faux_malformed_tool_call("fake_image_understanding", '{"prompt": "cats",,}'),
            faux_message(faux_tool_call("fake_image_understanding", {"prompt": "cats"})),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[fake_image_understanding])
    reply = await agent.prompt("look")

    first, second = results(agent)
    assert first.is_error and "not valid JSON" in text_of(first.content)
    assert '\\"cats\\",,}' in text_of(first.content)  # what was received, echoed
    assert text_of(second.content) == "described cats"
    assert reply.text == "done"


async def test_each_model_call_is_one_step_counted_by_turn_starts() -> None:
    fm = FauxModel([faux_message(faux_tool_call("step", {}))] * 2 + ["done"])
    agent = faux_agent(fm, tools=[make_tool("step", lambda *a: "ok")])
    turns: list[Any] = []
    agent.subscribe(
        lambda event, signal: turns.append(event) if isinstance(event, TurnStartEvent) else None
    )
    await agent.prompt("go")
    assert len(turns) == fm.call_count == 3


class Answer(BaseModel):
    value: int

    @field_validator("value")
    @classmethod
    def must_be_even(cls, value: int) -> int:
        if value % 2:
            raise ValueError("the answer must be even")
        return value


async def test_a_final_answer_a_check_refuses_goes_back_and_the_next_is_kept() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"value": 7})),
            faux_message(faux_tool_call("final_result", {"value": 8})),
        ]
    )
    agent = faux_agent(fm, output_type=Answer)
    reply = await agent.prompt("an even number")

    assert reply.output == Answer(value=8)
    refused = results(agent)[0]
    assert refused.is_error and "the answer must be even" in text_of(refused.content)


async def test_a_final_answer_beside_another_call_runs_both_and_ends_the_run() -> None:
    ran: list[str] = []

    def lookup(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append("lookup")
        return "found"

    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("lookup", {}), faux_tool_call("final_result", {"value": 2})
            ),
            "never asked",
        ]
    )
    agent = faux_agent(fm, tools=[make_tool("lookup", lookup)], output_type=Answer)
    reply = await agent.prompt("go")

    assert reply.output == Answer(value=2)
    assert ran == ["lookup"] and fm.call_count == 1
    assert [text_of(r.content) for r in results(agent)] == ["found", "Final result accepted."]


def test_a_tool_of_an_invalid_name_is_refused_when_made() -> None:
    with pytest.raises(ValueError, match="name"):
        AgentTool("bad name!", "Bad", "d", {"type": "object"}, lambda *a: "x")
