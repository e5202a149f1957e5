"""openai-agents' agent-as-tool, handoff and guardrail cases not pinned before
(tests/test_agent_as_tool.py, test_handoff_tool.py, test_handoff_history_duplication.py,
test_guardrails.py) on yiemagent's teams (DESIGN §17).

Where yiemagent differs by choice: an agent tool's input is `{"input": text}` (no input
builder or structured input); a handoff has no `on_handoff` callback or input type, only an
optional `reason` (listeners see the transfer as a tool call); guardrails report their
verdict only when they trip (`GuardrailTripped`), not a list of results."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import (
    AgentTool,
    GuardrailContext,
    GuardrailResult,
    GuardrailTripped,
    Handoff,
    NestedAgentEvent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import faux_message, faux_text, faux_tool_call
from yiemagent.types import text_of

from ..approvals._kit import transcript_problems
from ._kit import calls, scripted


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_each_call_of_an_agent_tool_answers_from_its_own_run_only() -> None:
    helper, helper_fm = scripted("helper", ["first answer", "second answer"])
    boss, _ = scripted(
        "boss",
        [
            calls(("helper", {"input": "question one"})),
            calls(("helper", {"input": "question two"})),
            "done",
        ],
        tools=[helper.as_tool()],
    )

    await boss.prompt("go")

    assert [text_of(r.content) for r in results_of(boss)] == ["first answer", "second answer"]
    sent = [[text_of(m.content) for m in c.messages] for c in helper_fm.contexts]
    assert sent == [["question one"], ["question two"]]  # the second run never saw the first


@pytest.mark.parametrize("arguments", [{}, {"input": 7}, {"question": "x"}])
async def test_an_agent_tool_called_without_its_input_never_starts_the_sub_run(
    arguments: dict[str, Any],
) -> None:
    helper, helper_fm = scripted("helper", ["never"])
    boss, _ = scripted("boss", [calls(("helper", arguments)), "ok"], tools=[helper.as_tool()])

    assert (await boss.prompt("go")).text == "ok"

    assert helper_fm.call_count == 0
    (result,) = results_of(boss)
    assert result.is_error and "input" in text_of(result.content)


async def test_a_listener_failing_on_nested_events_does_not_fail_the_call() -> None:
    helper, _ = scripted("helper", ["sub answer"])
    boss, _ = scripted("boss", [calls(("helper", {"input": "q"})), "ok"], tools=[helper.as_tool()])
    seen: list[str] = []

    def fragile(event: Any, signal: Any) -> None:
        if isinstance(event, NestedAgentEvent):
            seen.append(event.event.type)
            raise RuntimeError("listener broke")

    boss.subscribe(fragile)

    assert (await boss.prompt("go")).text == "ok"

    (result,) = results_of(boss)
    assert not result.is_error and text_of(result.content) == "sub answer"
    assert seen[0] == "agent_start" and seen[-1] == "agent_end"


async def test_nested_events_all_arrive_before_the_calls_end() -> None:
    helper, _ = scripted("helper", ["sub answer"])
    boss, _ = scripted("boss", [calls(("helper", {"input": "q"})), "ok"], tools=[helper.as_tool()])
    order: list[str] = []

    async def slow_listener(event: Any, signal: Any) -> None:
        if isinstance(event, NestedAgentEvent):
            await asyncio.sleep(0.001)  # a listener slower than the sub-run
            order.append(f"nested:{event.event.type}")
        elif event.type == "tool_execution_end":
            order.append("tool_end")

    boss.subscribe(slow_listener)
    await boss.prompt("go")

    assert order.index("nested:agent_end") < order.index("tool_end")


async def test_a_transfer_whose_reason_is_no_text_is_refused_and_nobody_takes_over() -> None:
    target, target_fm = scripted("target", ["never"])
    entry, _ = scripted(
        "entry",
        [calls(("transfer_to_target", {"reason": 5})), "I stay"],
        handoffs=[target],
    )

    reply = await entry.prompt("one")

    assert reply.text == "I stay" and reply.agent == "entry"
    assert target_fm.call_count == 0 and entry.state.active_agent == "entry"
    (result,) = results_of(entry)
    assert result.is_error and "reason" in text_of(result.content)


async def test_a_summarising_filter_shows_the_target_one_message_and_keeps_the_rest() -> None:
    def summarise(messages: list[Any]) -> list[Any]:
        lines = [f"{m.role}: {text_of(m.content)}" for m in messages if m.role != "toolResult"]
        return [UserMessage("Conversation so far:\n" + "\n".join(lines))]

    target, target_fm = scripted("target", ["answered"])
    entry, _ = scripted(
        "entry",
        ["hello", calls(("transfer_to_target", {}))],
        handoffs=[Handoff(target, input_filter=summarise)],
    )
    await entry.prompt("first")
    await entry.prompt("second")

    (seen,) = target_fm.contexts[0].messages
    assert text_of(seen.content).startswith("Conversation so far:\nuser: first\nassistant: hello")
    assert [m.role for m in entry.state.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    assert transcript_problems(entry.state.messages) == []


async def test_sync_and_async_input_guardrails_both_trip_with_their_message() -> None:
    def sync_guard(context: GuardrailContext) -> GuardrailResult:
        return GuardrailResult(tripped=True, message="sync says no")

    async def async_guard(context: GuardrailContext) -> GuardrailResult:
        await asyncio.sleep(0)
        return GuardrailResult(tripped=True, message="async says no")

    for guard, text in ((sync_guard, "sync says no"), (async_guard, "async says no")):
        agent, _ = scripted("a", ["hello"], input_guardrails=[guard])
        with pytest.raises(GuardrailTripped, match=text) as caught:
            await agent.prompt("hi")
        assert guard.__name__ in str(caught.value)
        assert not any(text_of(m.content) == "hello" for m in agent.state.messages)


async def test_a_guardrail_sees_the_prompt_it_checks() -> None:
    seen: list[str] = []

    def guard(context: GuardrailContext) -> None:
        seen.append(context.input)

    agent, _ = scripted("a", ["hello", "again"], input_guardrails=[guard])
    await agent.prompt("first question")
    await agent.prompt("second question")

    assert seen == ["first question", "second question"]


async def test_an_output_guardrail_that_passes_lets_the_run_end_normally() -> None:
    checked: list[str] = []

    async def guard(context: GuardrailContext) -> bool:
        checked.append(context.text)
        return False

    agent, fm = scripted("a", ["the answer"], output_guardrails=[guard])

    assert (await agent.prompt("hi")).text == "the answer"
    assert checked == ["the answer"] and fm.call_count == 1


async def test_cancelling_the_parents_prompt_ends_the_sub_run_with_every_call_answered() -> None:
    started = asyncio.Event()
    sub_signals: list[Any] = []

    async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        sub_signals.append(signal)
        started.set()
        await asyncio.sleep(30)
        return "never"

    tool = AgentTool("slow", "slow", "waits", {"type": "object", "properties": {}}, slow)
    helper, _ = scripted("helper", [calls(("slow", {})), "never asked"], tools=[tool])
    boss, _ = scripted(
        "boss", [calls(("helper", {"input": "q"})), "fresh answer"], tools=[helper.as_tool()]
    )

    run = asyncio.ensure_future(boss.prompt("go"))
    await asyncio.wait_for(started.wait(), 5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(run, 5)  # promptly, not after the sub-run's 30 s

    assert sub_signals[0].aborted
    (result,) = results_of(boss)
    assert result.is_error
    assert transcript_problems(boss.state.messages) == []
    assert (await boss.prompt("again")).text == "fresh answer"  # the agent is reusable


async def test_a_second_agent_goes_on_from_the_firsts_messages_without_changing_them() -> None:
    # pydantic-ai's programmatic hand-off (docs/multi-agent-applications): the second
    # agent is given the first one's message history and continues the conversation.
    tool = AgentTool(
        "find", "find", "finds", {"type": "object", "properties": {}}, lambda *a: "a flight"
    )
    finder, _ = scripted("finder", [calls(("find", {})), "found a flight"], tools=[tool])
    await finder.prompt("find me a flight")
    before = list(finder.state.messages)

    seller, seller_fm = scripted("seller", ["seat 12A"], messages=finder.state.messages)
    reply = await seller.prompt("now pick a seat")

    assert reply.text == "seat 12A" and reply.agent == "seller"
    seen = [m.role for m in seller_fm.contexts[0].messages]
    assert seen == ["user", "assistant", "toolResult", "assistant", "user"]
    assert finder.state.messages == before  # the first agent's transcript is its own
    assert transcript_problems(seller.state.messages) == []


async def test_a_sub_run_ending_in_an_empty_answer_says_so_not_an_earlier_text() -> None:
    tool = AgentTool("find", "find", "finds", {"type": "object", "properties": {}}, lambda *a: "x")
    thinking_aloud = faux_message(faux_text("I will look"), faux_tool_call("find", {}))
    helper, _ = scripted("helper", [thinking_aloud, faux_message()], tools=[tool])
    boss, _ = scripted("boss", [calls(("helper", {"input": "q"})), "ok"], tools=[helper.as_tool()])

    await boss.prompt("go")

    (result,) = results_of(boss)
    assert (result.is_error, text_of(result.content)) == (
        False,
        "(agent helper gave an empty answer)",
    )
