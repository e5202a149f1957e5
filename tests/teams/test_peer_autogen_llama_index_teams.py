"""Teams as autogen-agentchat (test_group_chat.py's Swarm cases, test_assistant_agent.py's
handoff and tool-loop cases, test_task_runner_tool.py) and llama_index (agent/workflow/
test_multi_agent_workflow.py) check theirs, through handoffs and agents as tools
(DESIGN §17). Ours differs by choice in one place, written in docs/teams.md ("Agents as
tools"): autogen's AgentTool keeps the agent's state from call to call, ours runs a fresh
copy each call."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentEndEvent,
    AgentRunError,
    AgentTool,
    AgentToolResult,
    Handoff,
    SqliteSessionStore,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AssistantMessage, Context, text_of

from ..approvals._kit import transcript_problems
from ._kit import SCHEMA, calls, scripted


def named_tool(name: str, ran: list[str]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(name)
        return name

    return AgentTool(name, name, f"the {name} tool", SCHEMA, execute, parallel=True)


def results(messages: list[Any]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_the_target_reads_the_task_and_the_calls_made_beside_the_transfer() -> None:
    # autogen test_swarm_with_parallel_tool_calls
    ran: list[str] = []
    agent2, agent2_fm = scripted("agent2", ["Hello"])
    agent1, agent1_fm = scripted(
        "agent1",
        [calls(("tool1", {}), ("tool2", {}), ("transfer_to_agent2", {}))],
        tools=[named_tool("tool1", ran), named_tool("tool2", ran)],
        handoffs=[agent2],
    )

    reply = await agent1.prompt("task")

    assert reply.text == "Hello" and reply.agent == "agent2"
    assert sorted(ran) == ["tool1", "tool2"] and agent1_fm.call_count == 1
    seen = agent2_fm.contexts[0].messages
    assert isinstance(seen[0], UserMessage) and text_of(seen[0].content) == "task"
    assert [(name, error) for name, error, _ in results(list(seen))] == [
        ("tool1", False),
        ("tool2", False),
        ("transfer_to_agent2", False),
    ]
    assert [text for _, _, text in results(list(seen))][:2] == ["tool1", "tool2"]
    assert transcript_problems(agent1.state.messages) == []


async def test_a_handoff_at_the_turn_limit_leaves_the_next_prompt_to_the_target() -> None:
    # autogen test_tool_call_loop_with_handoff (max_tool_iterations=1: one model call, the
    # handoff stands) and test_swarm_pause_and_resume (the next task goes to the target)
    ran: list[str] = []
    other, other_fm = scripted("other_agent", ["other answers"])
    agent, agent_fm = scripted(
        "test_agent",
        [calls(("mock_tool_function", {}), ("transfer_to_other_agent", {}))],
        tools=[named_tool("mock_tool_function", ran)],
        handoffs=[other],
        max_turns=1,
    )
    reasons: list[str] = []
    agent.subscribe(lambda e, s: reasons.append(e.reason) if isinstance(e, AgentEndEvent) else None)

    await agent.prompt("Test handoff in loop")

    assert reasons == ["max_turns"] and ran == ["mock_tool_function"]
    assert (agent_fm.call_count, other_fm.call_count) == (1, 0)
    assert agent.state.active_agent == "other_agent"
    assert transcript_problems(agent.state.messages) == []

    reply = await agent.prompt("new task")

    assert reply.agent == "other_agent" and reply.text == "other answers"
    assert agent_fm.call_count == 1


async def test_a_ring_of_three_agents_hands_over_in_order_until_the_bound() -> None:
    # autogen test_swarm_handoff: first → second → third → first ..., bounded here by
    # max_handoffs (autogen by MaxMessageTermination)
    order = {"first": "second", "second": "third", "third": "first"}

    def onward(name: str) -> Any:
        def respond(context: Context) -> AssistantMessage:
            last = context.messages[-1]
            if isinstance(last, ToolResultMessage) and last.is_error:
                return faux_message(f"{name} stops here")
            return faux_message(faux_tool_call(f"transfer_to_{order[name]}", {}))

        return respond

    agents = {name: scripted(name, [onward(name)] * 10)[0] for name in order}
    for name, target in order.items():
        agents[name].handoffs = [Handoff(agents[target])]
    agents["first"].max_handoffs = 4

    reply = await agents["first"].prompt("task")

    done = [text for name, error, text in results(agents["first"].state.messages) if not error]
    assert len(done) == 4
    assert [m.agent for m in agents["first"].state.messages if isinstance(m, AssistantMessage)] == [
        "first",
        "second",
        "third",
        "first",
        "second",
        "second",
    ]
    assert reply.text == "second stops here"
    refused = [text for _, error, text in results(agents["first"].state.messages) if error]
    assert len(refused) == 1 and "max_handoffs=4 reached" in refused[0]


async def test_a_transfer_to_an_agent_that_is_no_target_is_an_error_and_the_agent_goes_on() -> None:
    # llama_index test_invalid_handoff ("Agent invalid_agent not found")
    other, other_fm = scripted("other", ["never"])
    agent1, _ = scripted(
        "agent1",
        [
            calls(("transfer_to_invalid_agent", {"reason": "Because reasons"})),
            "guess im stuck here",
        ],
        handoffs=[other],
    )

    reply = await agent1.prompt("test")

    assert reply.text == "guess im stuck here" and reply.agent == "agent1"
    [(_, is_error, text)] = results(agent1.state.messages)
    assert is_error and 'Tool "transfer_to_invalid_agent" not found' in text
    assert "transfer_to_other" in text and other_fm.call_count == 0
    assert agent1.state.active_agent == "agent1"


async def test_each_call_of_an_agent_tool_starts_from_a_fresh_transcript() -> None:
    # autogen test_agent_tool_state keeps the sub-agent's state between calls (a choice
    # there); each call here is a fresh copy, so the second call does not read the first
    helper, helper_fm = scripted("helper", ["first answer", "second answer"])
    lead, _ = scripted(
        "lead",
        [
            calls(("helper", {"input": "Test task"})),
            calls(("helper", {"input": "Another task"})),
            "both done",
        ],
        tools=[helper.as_tool()],
    )

    reply = await lead.prompt("go")

    assert reply.text == "both done"
    assert [text for _, _, text in results(lead.state.messages)] == [
        "first answer",
        "second answer",
    ]
    asked = [[text_of(m.content) for m in c.messages] for c in helper_fm.contexts]
    assert asked == [["Test task"], ["Another task"]]
    assert helper.state.messages == []  # the agent given as a tool is not run itself


@pytest.mark.parametrize("how", ["abort", "cancel"])
async def test_a_team_stopped_while_the_target_speaks_goes_on_with_the_target(how: str) -> None:
    # autogen test_round_robin_group_chat_cancellation: cancelled mid-run, the team still
    # runs again and finishes
    billing_fm = FauxModel(["a long answer " * 40, "billing again"], delay_s=0.02, chunk_size=2)
    billing = Agent(
        "You are billing.", billing_fm.model, stream_fn=billing_fm.stream_fn, name="billing"
    )
    router, router_fm = scripted("router", [calls(("transfer_to_billing", {}))], handoffs=[billing])
    speaking = asyncio.Event()
    router.subscribe(
        lambda e, s: (
            speaking.set() if e.type == "message_update" and e.message.agent == "billing" else None
        )
    )
    run = asyncio.create_task(router.prompt("help"))
    await asyncio.wait_for(speaking.wait(), 10)  # the target is streaming its answer
    if how == "abort":
        router.abort()
        stopped = await run
        assert stopped.stop_reason == "aborted" and stopped.agent == "billing"
    else:
        run.cancel()
        with pytest.raises(asyncio.CancelledError):
            await run
    assert not router.state.active_run and router.state.active_agent == "billing"
    assert transcript_problems(router.state.messages) == []

    reply = await router.prompt("are you there?")

    assert reply.agent == "billing" and reply.text == "billing again"
    assert router_fm.call_count == 1
    assert transcript_problems(router.state.messages) == []


async def test_a_reopened_session_answers_with_the_agent_it_was_handed_to(tmp_path: Path) -> None:
    # autogen test_swarm_handoff_state: a team loaded from saved state has the same
    # current speaker; here the session file holds it
    path = tmp_path / "s.db"
    with SqliteSessionStore(path) as store:
        billing, _ = scripted("billing", ["billing here"])
        router, _ = scripted(
            "router",
            [calls(("transfer_to_billing", {}))],
            handoffs=[billing],
            session_store=store,
            session_id="s",
        )
        await router.prompt("help")
        await router.close()

    with SqliteSessionStore(path) as store:
        billing, billing_fm = scripted("billing", ["billing again"])
        again, again_fm = scripted(
            "router", ["never"], handoffs=[billing], session_store=store, session_id="s"
        )
        assert again.state.active_agent == "billing"
        reply = await again.prompt("more")
        await again.close()

    assert reply.agent == "billing" and reply.text == "billing again"
    assert (billing_fm.call_count, again_fm.call_count) == (1, 0)


async def test_a_terminating_tool_beside_a_transfer_does_not_end_the_run() -> None:
    # llama_index test_aggregate_tool_results_return_direct_handoff_does_not_stop: the
    # handoff goes on; here a batch ends the run only when every result terminates
    finish = AgentTool(
        "finish",
        "finish",
        "Finish.",
        SCHEMA,
        lambda *a: AgentToolResult(content="final", terminate=True),
    )
    billing, billing_fm = scripted("billing", ["billing here"])
    router, _ = scripted(
        "router",
        [calls(("finish", {}), ("transfer_to_billing", {}))],
        tools=[finish],
        handoffs=[billing],
    )

    reply = await router.prompt("go")

    assert (reply.agent, reply.text, reply.stop_reason) == ("billing", "billing here", "stop")
    assert billing_fm.call_count == 1
    assert [(n, e) for n, e, _ in results(router.state.messages)] == [
        ("finish", False),
        ("transfer_to_billing", False),
    ]


async def test_a_target_whose_model_call_raises_fails_the_run_and_the_team_goes_on() -> None:
    # autogen test_round_robin_group_chat_with_exception_raised_from_agent: the error
    # reaches the caller, and the team still runs afterwards
    billing_fm = FauxModel(["billing recovered"])
    attempts: list[int] = []

    def flaky(model: Any, context: Any, options: Any) -> Any:
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("billing backend down")
        return billing_fm.stream_fn(model, context, options)

    billing = Agent("You are billing.", billing_fm.model, stream_fn=flaky, name="billing")
    router, router_fm = scripted("router", [calls(("transfer_to_billing", {}))], handoffs=[billing])

    with pytest.raises(AgentRunError, match="ConnectionError: billing backend down") as caught:
        await router.prompt("help")

    assert caught.value.message.agent == "billing"
    assert router.state.active_agent == "billing" and not router.state.active_run
    assert transcript_problems(router.state.messages) == []

    reply = await router.prompt("again")

    assert (reply.agent, reply.text) == ("billing", "billing recovered")
    assert router_fm.call_count == 1
