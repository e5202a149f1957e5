"""What a run held for approval has left to spend after `resume()`, in the cases
openai-agents' test_agent_runner_streamed.py checks
(`test_streaming_hitl_resume_enforces_max_turns`,
`test_streaming_max_turns_emits_pending_tool_output_events`).

By choice (docs/approvals.md, "What happens"): the resumed run is a new run, so its
`max_turns` and `usage_limits` count from zero; openai-agents carries the turn count across
the pause and raises `MaxTurnsExceeded` on resume."""

from __future__ import annotations

from typing import Any

from tests.approvals._kit import recording_tool
from yiemagent import Agent, AgentEndEvent, ToolResultMessage, Usage, UsageLimits
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


def agent_of(fm: FauxModel, ran: list[str], **kwargs: Any) -> tuple[Agent, list[str]]:
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[
            recording_tool("held", ran, requires_approval=True),
            recording_tool("free", ran),
        ],
        **kwargs,
    )
    reasons: list[str] = []
    agent.subscribe(lambda e, s: reasons.append(e.reason) if isinstance(e, AgentEndEvent) else None)
    return agent, reasons


async def test_a_run_held_at_its_last_turn_answers_after_the_decision() -> None:
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("held", {}, id="h1")), "done"])
    agent, reasons = agent_of(fm, ran, max_turns=1)

    await agent.prompt("use it")
    agent.approve("h1")
    answer = await agent.resume()

    assert reasons == ["awaiting_approval", "stop"] and text_of(answer.content) == "done"
    assert ran == ["h1"]


async def test_usage_limits_count_the_resumed_run_from_zero() -> None:
    ran: list[str] = []
    held = faux_message(faux_tool_call("held", {}, id="h1"))
    held.usage = Usage(input=300, output=300, total_tokens=600)
    after = faux_message(faux_tool_call("free", {}, id="f1"))
    after.usage = Usage(input=300, output=300, total_tokens=600)
    fm = FauxModel([held, after, "done"])
    agent, reasons = agent_of(fm, ran, usage_limits=UsageLimits(max_total_tokens=1000))

    await agent.prompt("use it")
    agent.approve("h1")
    answer = await agent.resume()

    # 600 + 600 would pass the limit after the resumed run's batch; 600 alone does not
    assert reasons == ["awaiting_approval", "stop"] and text_of(answer.content) == "done"
    assert ran == ["h1", "f1"] and fm.call_count == 3


async def test_a_run_stopped_by_max_turns_has_answered_its_last_calls() -> None:
    # test_streaming_max_turns_emits_pending_tool_output_events
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("free", {}, id="f1")), "never asked"])
    agent, reasons = agent_of(fm, ran, max_turns=1)
    types: list[str] = []
    agent.subscribe(lambda e, s: types.append(e.type))

    await agent.prompt("use it")

    assert reasons == ["max_turns"] and fm.call_count == 1 and ran == ["f1"]
    assert types[-6:] == [
        "tool_execution_start",
        "tool_execution_end",
        "message_start",
        "message_end",
        "turn_end",
        "agent_end",
    ]
    assert isinstance(agent.state.messages[-1], ToolResultMessage)
