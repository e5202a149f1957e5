"""openai-agents' `tool_use_behavior` cases (tests/test_tool_use_behavior.py,
test_run_step_execution.py) on the Agent: what ends a run after tools, and what `prompt`
returns then. yiemagent spells them differently: "stop_on_first_tool" is a result with
`terminate=True`, `StopAtTools` an `after_tool_call` that sets `terminate`, a custom
behaviour `should_stop_after_turn`. Where it differs by choice: a batch ends the run only
when every result terminates (R-4.10; openai-agents stops when any listed tool ran), and the
answer is the seeds' "tool_use_terminated" summary rather than the tool's raw value. Also
what an answer cut off at the output limit ends as (pydantic-ai's
`test_empty_response_with_finish_reason_length` raises instead)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import (
    AfterToolCallResult,
    AgentEndEvent,
    AgentRunError,
    AgentToolResult,
    AssistantMessage,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

from ._kit import faux_agent, make_tool


def answers(name: str) -> Any:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=f"{name}_result")

    return make_tool(name, execute)


def stop_at(*names: str) -> Any:
    """`StopAtTools(names)`: a result of one of `names` asks to end the run."""

    def after(ctx: Any, signal: Any) -> AfterToolCallResult | None:
        return AfterToolCallResult(terminate=True) if ctx.tool_call.name in names else None

    return after


def ends_of(agent: Any) -> list[str]:
    reasons: list[str] = []
    agent.subscribe(
        lambda e, _s: reasons.append(e.reason) if isinstance(e, AgentEndEvent) else None
    )
    return reasons


async def test_an_empty_answer_ends_the_run_and_is_the_answer() -> None:
    # test_empty_response_is_final_output: no text and no calls is an answer, not a retry
    fm = FauxModel([faux_message(), "never asked"])
    agent = faux_agent(fm)
    reasons = ends_of(agent)
    reply = await agent.prompt("hi")
    assert reply.stop_reason == "stop" and reply.text == "" and reply.content == []
    assert fm.call_count == 1 and reasons == ["stop"]


async def test_stop_at_a_tool_that_was_the_only_call_ends_with_its_result() -> None:
    fm = FauxModel([faux_message(faux_tool_call("tool2", {})), "never asked"])
    agent = faux_agent(
        fm, tools=[answers("tool1"), answers("tool2")], after_tool_call=stop_at("tool2")
    )
    reasons = ends_of(agent)
    reply = await agent.prompt("go")
    assert fm.call_count == 1 and reasons == ["terminate"]
    assert reply.stop_reason == "tool_use_terminated" and reply.error_message is None
    assert [b.text for b in reply.content] == ["Tool execution completed.", "tool2_result"]
    # the summary is the answer only: the transcript keeps the model's own messages
    assert isinstance(agent.state.messages[-1], ToolResultMessage)


async def test_stop_at_a_tool_beside_another_call_asks_the_model_again() -> None:
    # by choice (R-4.10): openai-agents would stop with tool2's result here
    both = faux_message(faux_tool_call("tool1", {}), faux_tool_call("tool2", {}))
    fm = FauxModel([both, "from both results"])
    agent = faux_agent(
        fm, tools=[answers("tool1"), answers("tool2")], after_tool_call=stop_at("tool2")
    )
    reasons = ends_of(agent)
    reply = await agent.prompt("go")
    assert reply.text == "from both results" and fm.call_count == 2 and reasons == ["stop"]


async def test_a_custom_stop_after_tools_returns_the_turn_that_called_them() -> None:
    seen: list[list[str]] = []

    def stop_after_tools(turn: Any) -> bool:
        seen.append([r.tool_name for r in turn.tool_results])
        return bool(turn.tool_results)

    calling = faux_message(faux_tool_call("tool1", {}))
    fm = FauxModel([calling, "never asked"])
    agent = faux_agent(fm, tools=[answers("tool1")], should_stop_after_turn=stop_after_tools)
    reasons = ends_of(agent)
    reply = await agent.prompt("go")
    assert fm.call_count == 1 and reasons == ["should_stop"] and seen == [["tool1"]]
    assert isinstance(reply, AssistantMessage) and reply.stop_reason == "toolUse"
    assert reply is agent.state.messages[-2]  # the model's message, then its result
    result = agent.state.messages[-1]
    assert isinstance(result, ToolResultMessage) and result.tool_name == "tool1"


class Answer(BaseModel):
    value: int


@pytest.mark.parametrize("how", ["terminate", "should_stop"])
async def test_a_typed_run_ended_by_its_tools_raises_saying_how(how: str) -> None:
    # openai-agents returns the tool's output unvalidated; a typed run here never returns
    # something that is not a valid value of its type
    fm = FauxModel([faux_message(faux_tool_call("tool1", {}))])
    hooks: dict[str, Any] = (
        {"after_tool_call": stop_at("tool1")}
        if how == "terminate"
        else {"should_stop_after_turn": lambda turn: True}
    )
    agent = faux_agent(fm, tools=[answers("tool1")], output_type=Answer, **hooks)
    with pytest.raises(AgentRunError, match=f"ended \\({how}\\) before the model gave a valid"):
        await agent.prompt("go")
    assert fm.call_count == 1
    assert isinstance(agent.state.messages[-1], ToolResultMessage)  # the call is answered


async def test_an_answer_cut_off_by_the_output_limit_is_returned_as_it_came() -> None:
    # pydantic-ai raises "Model token limit exceeded before any response was generated";
    # here the run ends and the caller reads stop_reason "length" (the CLI and the chat
    # say the answer was cut off)
    cut = faux_message(faux_text("The answer is"), stop_reason="length")
    fm = FauxModel([cut, "never asked"])
    agent = faux_agent(fm)
    reasons = ends_of(agent)
    reply = await agent.prompt("hi")
    assert reply.stop_reason == "length" and reply.text == "The answer is"
    assert fm.call_count == 1 and reasons == ["stop"]


async def test_a_typed_run_cut_off_before_any_output_asks_again() -> None:
    empty = faux_message(stop_reason="length")
    fm = FauxModel([empty, faux_message(faux_tool_call("final_result", {"value": 3}))])
    agent = faux_agent(fm, output_type=Answer)
    reply = await agent.prompt("go")
    assert reply.output == Answer(value=3) and fm.call_count == 2
