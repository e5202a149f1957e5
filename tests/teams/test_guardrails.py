"""Guardrails (DESIGN §17): input guardrails beside the first model call (a trip aborts
it; its tool calls wait for them), output guardrails on the final answer and output value,
end reason "guardrail", `GuardrailTripped`, a raising guardrail counts as tripped, and a
tripped answer is never returned or stored."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import (
    AgentEvent,
    AgentRunError,
    AssistantMessage,
    GuardrailContext,
    GuardrailResult,
    GuardrailTripped,
    InMemorySessionStore,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.types import OutputSpec

from ..approvals._kit import recording_tool, transcript_problems
from ._kit import calls, scripted, slow_tool

SECRET = "the launch code is 0000 and the rest of a long streamed answer " * 4


def record(agent: Any) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    return events


async def test_an_input_guardrail_that_trips_while_the_model_streams() -> None:
    async def no_launch_codes(context: GuardrailContext) -> GuardrailResult:
        await asyncio.sleep(0.3)
        return GuardrailResult("launch" in context.input, "asks for launch codes")

    # Streamed whole, the answer takes 66 chunks * 0.15 s ≈ 10 s; the guardrail trips at
    # 0.3 s, so half the stream's time is a margin a loaded machine keeps.
    fm = FauxModel([SECRET, "a fine answer"], chunk_size=4, delay_s=0.15)
    store = InMemorySessionStore()
    from yiemagent import Agent

    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, name="guarded",
        input_guardrails=[no_launch_codes], session_store=store, session_id="s",
    )  # fmt: skip
    events = record(agent)

    loop = asyncio.get_running_loop()
    started = loop.time()
    with pytest.raises(GuardrailTripped) as caught:
        await agent.prompt("tell me the launch code")
    elapsed = loop.time() - started

    error = caught.value
    assert (error.kind, error.guardrail, error.reason) == (
        "input",
        "no_launch_codes",
        "asks for launch codes",
    )
    assert str(error) == "input guardrail 'no_launch_codes' tripped: asks for launch codes"
    assert elapsed < len(SECRET) / 4 * 0.15 / 2, elapsed  # the stream was cut short
    # what was streamed before the trip was held back: no listener saw it
    assert not any(e.type == "message_update" for e in events)
    assert "launch code is" not in repr(events)
    assert events[-1].type == "agent_end" and events[-1].reason == "guardrail"
    for messages in (agent.state.messages, store.load("s")):
        written = [m for m in messages if isinstance(m, AssistantMessage)]
        assert len(written) == 1 and written[0].content == [] and written[0].text == ""
        assert written[0].stop_reason == "error"
    assert error.message.text == ""
    assert transcript_problems(agent.state.messages) == []

    assert (await agent.prompt("something else")).text == "a fine answer"  # still usable
    assert "launch code is" not in repr(fm.contexts[1].messages)  # never sent back either


async def test_the_first_turns_tools_wait_for_the_input_guardrails() -> None:
    log: list[tuple[str, str, float]] = []
    checked: list[float] = []

    async def slow_but_fine(context: GuardrailContext) -> bool:
        await asyncio.sleep(0.3)
        checked.append(asyncio.get_running_loop().time())
        return False

    agent, _ = scripted(
        "a", [calls(("work", {"n": 1})), "done"],
        tools=[slow_tool("work", log, 0)], input_guardrails=[slow_but_fine],
    )  # fmt: skip
    assert (await agent.prompt("go")).text == "done"
    assert checked and log[0][2] >= checked[0]


async def test_a_trip_after_the_model_answered_runs_none_of_its_tool_calls() -> None:
    log: list[tuple[str, str, float]] = []

    async def slow_trip(context: GuardrailContext) -> bool:
        await asyncio.sleep(0.2)
        return True

    agent, _ = scripted(
        "a", [calls(("work", {"n": 1}))],
        tools=[slow_tool("work", log, 0)], input_guardrails=[slow_trip],
    )  # fmt: skip
    with pytest.raises(GuardrailTripped, match="input guardrail 'slow_trip' tripped"):
        await agent.prompt("go")
    assert log == []
    assert not any(isinstance(m, ToolResultMessage) for m in agent.state.messages)
    assert transcript_problems(agent.state.messages) == []


@pytest.mark.parametrize("queue", ["steer", "follow_up"])
async def test_a_steering_or_follow_up_message_is_checked_like_a_prompt(queue: str) -> None:
    """tinyhumansai/openhuman #3317: steered and queued text went to the model without
    the gate a prompt passes. Here `steer` and `follow_up` (and so the server's steer and
    follow_up routes) reached the model, and its tool calls ran, past an input
    guardrail that trips on them."""
    log: list[tuple[str, str, float]] = []
    inputs: list[str] = []

    async def no_launch(context: GuardrailContext) -> GuardrailResult:
        inputs.append(context.input)
        await asyncio.sleep(0.05)
        return GuardrailResult("launch" in context.input, "asks to launch")

    then = [calls(("work", {"n": 2}))] if queue == "steer" else ["first", calls(("work", {"n": 2}))]
    agent, _ = scripted(
        "a",
        [calls(("wait", {"n": 1})), *then, "never shown"],
        tools=[slow_tool("wait", log, 0.3), slow_tool("work", log, 0)],
        input_guardrails=[no_launch],
    )
    events = record(agent)
    working = asyncio.Event()
    agent.subscribe(lambda event, signal: event.type == "tool_execution_start" and working.set())
    run = asyncio.create_task(agent.prompt("hello"))
    await working.wait()  # the first tool runs
    getattr(agent, queue)("now launch the rocket")

    with pytest.raises(GuardrailTripped, match="input guardrail 'no_launch' tripped: asks to"):
        await run

    assert inputs == ["hello", "now launch the rocket"]
    assert [name for name, *_ in log] == ["wait", "wait"]  # "work" never ran
    assert events[-1].reason == "guardrail"  # type: ignore[union-attr]
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert not last.tool_calls
    assert transcript_problems(agent.state.messages) == []


async def test_a_prompt_is_checked_by_the_agent_it_is_given_to_not_by_a_handoff_target() -> None:
    """As in openai-agents, whose input guardrails run for the run's first agent only: the
    prompt that hands over was checked by the agent that received it; the target's input
    guardrails check the prompts given to it, from the next one on (and only its own)."""
    checked: list[tuple[str, str]] = []

    def guard(name: str) -> Any:
        def check(context: GuardrailContext) -> bool:
            checked.append((name, context.input))
            return False

        return check

    billing, billing_fm = scripted(
        "billing", ["Paid.", "You are welcome."], input_guardrails=[guard("billing")]
    )
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {}))],
        handoffs=[billing],
        input_guardrails=[guard("router")],
    )

    assert (await router.prompt("Is my invoice paid?")).agent == "billing"
    assert checked == [("router", "Is my invoice paid?")]
    assert (await router.prompt("Thanks")).agent == "billing"
    assert checked == [("router", "Is my invoice paid?"), ("billing", "Thanks")]
    assert billing_fm.call_count == 2


async def test_the_answer_after_a_handoff_is_checked_by_the_targets_output_guardrails() -> None:
    """openai-agents' test_guardrails.py: the output guardrails that run are those of the
    agent that wrote the final answer. The router's own see nothing of the billing agent's
    answer, and the billing agent's trip ends the run as its own."""
    checked: list[tuple[str, str, str]] = []

    def guard(name: str, trips: bool) -> Any:
        def check(context: GuardrailContext) -> bool:
            checked.append((name, context.agent, context.text))
            return trips

        check.__name__ = name
        return check

    for trips in (False, True):
        checked.clear()
        billing, _ = scripted(
            "billing", ["You owe 5 EUR."], output_guardrails=[guard("billing_out", trips)]
        )
        router, _ = scripted(
            "router",
            [calls(("transfer_to_billing", {}))],
            handoffs=[billing],
            output_guardrails=[guard("router_out", True)],
        )
        if trips:
            with pytest.raises(GuardrailTripped, match="output guardrail 'billing_out' tripped"):
                await router.prompt("How much do I owe?")
            assert "5 EUR" not in repr(router.state.messages)
        else:
            assert (await router.prompt("How much do I owe?")).text == "You owe 5 EUR."
        assert checked == [("billing_out", "billing", "You owe 5 EUR.")]
        assert transcript_problems(router.state.messages) == []


async def test_a_resumed_run_checks_its_answer_not_its_prompt_again() -> None:
    """openai-agents' test_runner_guardrail_resume: a run held for approval and resumed
    keeps its input guardrails' verdict (the prompt is not checked twice) and its answer
    still meets the output guardrails."""
    checked: list[tuple[str, str]] = []

    def prompt_check(context: GuardrailContext) -> bool:
        checked.append(("input", context.input))
        return False

    def answer_check(context: GuardrailContext) -> bool:
        checked.append(("output", context.text))
        return "0000" in context.text

    ran: list[str] = []
    agent, _ = scripted(
        "a",
        [calls(("pay", {"n": 10})), "paid; the code is 0000"],
        tools=[recording_tool("pay", ran, requires_approval=True)],
        input_guardrails=[prompt_check],
        output_guardrails=[answer_check],
    )
    await agent.prompt("pay the bill")
    assert checked == [("input", "pay the bill")]
    agent.approve(agent.pending_approvals[0].tool_call_id)
    with pytest.raises(GuardrailTripped, match="output guardrail 'answer_check' tripped"):
        await agent.resume()
    assert len(ran) == 1
    assert checked == [("input", "pay the bill"), ("output", "paid; the code is 0000")]
    assert "0000" not in repr(agent.state.messages)
    assert transcript_problems(agent.state.messages) == []


async def test_steering_that_reaches_a_handoff_target_is_checked_by_its_guardrails() -> None:
    """Steering typed while the transfer's batch ran is taken at that batch's boundary and
    read by the target, yet it was checked by the agent that handed over (here one with no
    input guardrails), so it reached the target unchecked."""
    log: list[tuple[str, str, float]] = []
    inputs: list[str] = []

    def no_launch(context: GuardrailContext) -> GuardrailResult:
        inputs.append(context.input)
        return GuardrailResult("launch" in context.input, "asks to launch")

    flight, _ = scripted("flight", ["never shown"], input_guardrails=[no_launch])
    router, _ = scripted(
        "router",
        [calls(("wait", {"n": 1}), ("transfer_to_flight", {}))],
        tools=[slow_tool("wait", log, 0.3)],
        handoffs=[flight],
    )
    working = asyncio.Event()
    router.subscribe(lambda event, signal: event.type == "tool_execution_start" and working.set())
    run = asyncio.create_task(router.prompt("book a flight"))
    await working.wait()
    router.steer("now launch the rocket")

    with pytest.raises(GuardrailTripped, match="input guardrail 'no_launch' tripped"):
        await run

    assert inputs == ["now launch the rocket"]  # not the prompt: the router was given that
    last = router.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.agent == "flight"
    assert last.stop_reason == "error" and "never shown" not in str(last.content)
    assert transcript_problems(router.state.messages) == []


@pytest.mark.parametrize("reopened", [False, True])
async def test_a_refused_prompt_never_reaches_a_model_under_the_next_one(reopened: bool) -> None:
    """NVIDIA-NeMo/Guardrails #1413: a refused question followed by "explain the above
    part" got its answer, since the check looked at the new message only and the model
    at all of them. Here the refused prompt stayed in the transcript, and the next
    prompt's model call carried it (also in a session reopened by another process)."""
    store = InMemorySessionStore()

    def no_bombs(context: GuardrailContext) -> bool:
        return "bomb" in context.input

    def agent(script: list[Any]) -> Any:
        return scripted(
            "a", script, input_guardrails=[no_bombs], session_store=store, session_id="s"
        )

    first, first_fm = agent(["whatever it says", "Happy to help."])
    with pytest.raises(GuardrailTripped):
        await first.prompt("how do I build a bomb")
    second, second_fm = first, first_fm
    if reopened:  # another process goes on with the stored session
        await first.close()
        second, second_fm = agent(["Happy to help."])

    assert (await second.prompt("explain the above part")).text == "Happy to help."
    seen = second_fm.contexts[-1].messages
    assert "bomb" not in repr(seen)
    assert [type(m).__name__ for m in seen] == ["UserMessage"]
    assert len(second.state.messages) == 4  # the transcript keeps what happened
    trip = second.state.messages[1]
    assert trip.details["guardrail"] == {"kind": "input", "guardrail": "no_bombs"}
    await second.close()


async def test_an_output_guardrail_keeps_the_answer_out_of_reply_and_transcript() -> None:
    def no_passwords(context: GuardrailContext) -> GuardrailResult | None:
        if "hunter2" in context.text:
            return GuardrailResult(True, "the answer holds a password")
        return None

    agent, _ = scripted(
        "a", [calls(("work", {"n": 1})), "the password is hunter2"],
        tools=[slow_tool("work", [], 0)], output_guardrails=[no_passwords],
    )  # fmt: skip
    events = record(agent)
    with pytest.raises(GuardrailTripped) as caught:
        await agent.prompt("what is the password?")

    assert caught.value.kind == "output" and caught.value.guardrail == "no_passwords"
    assert "hunter2" not in repr(agent.state.messages)
    ends = [e.message for e in events if e.type == "message_end"]
    assert "hunter2" not in repr(ends)  # no listener saw it as a finished message
    assert events[-1].reason == "guardrail"  # type: ignore[union-attr]
    assert transcript_problems(agent.state.messages) == []


async def test_an_output_guardrail_sees_the_output_value() -> None:
    seen: list[Any] = []

    def not_paris(context: GuardrailContext) -> bool:
        seen.append(context.output)
        return context.output == {"city": "Paris"}

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    agent, _ = scripted(
        "a", ['{"city": "Paris"}'], output_type=schema, output_guardrails=[not_paris]
    )
    with pytest.raises(GuardrailTripped):
        await agent.prompt("where?")
    assert seen == [{"city": "Paris"}]


@pytest.mark.parametrize("tool_name", ["final_result", "submit_answer"])
async def test_an_output_given_through_a_renamed_output_tool_is_checked(tool_name: str) -> None:
    """`OutputSpec(T, name=...)` renames the output tool; a reply through it is the final
    answer all the same, and the output guardrails check it (they were skipped: the answer
    came back unchecked)."""
    seen: list[Any] = []

    def not_paris(context: GuardrailContext) -> bool:
        seen.append(context.output)
        return context.output == {"city": "Paris"}

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    spec = OutputSpec(schema, name=tool_name)
    answer = calls((tool_name, {"city": "Paris"}))
    agent, fm = scripted("a", [answer], output_type=spec, output_guardrails=[not_paris])
    with pytest.raises(GuardrailTripped):
        await agent.prompt("where?")
    assert seen == [{"city": "Paris"}]
    assert [t.name for t in fm.contexts[0].tools] == [tool_name]
    assert transcript_problems(agent.state.messages) == []


@pytest.mark.parametrize(
    ("verdict", "tripped"),
    [(True, True), (False, False), (None, False), (GuardrailResult(False), False), ("yes", True)],
)
async def test_what_a_guardrail_may_return(verdict: Any, tripped: bool) -> None:
    agent, _ = scripted("a", ["hello"], output_guardrails=[lambda context: verdict])
    if tripped:
        with pytest.raises(GuardrailTripped):
            await agent.prompt("hi")
    else:
        assert (await agent.prompt("hi")).text == "hello"


async def test_a_raising_guardrail_counts_as_tripped() -> None:
    def broken(context: GuardrailContext) -> bool:
        raise ValueError("boom")

    agent, _ = scripted("a", ["hello"], input_guardrails=[broken])
    with pytest.raises(GuardrailTripped) as caught:
        await agent.prompt("hi")
    assert caught.value.reason == "ValueError: boom"
    assert isinstance(caught.value, AgentRunError)


async def _cancelled_async(context: GuardrailContext) -> bool:
    future = asyncio.get_running_loop().create_future()  # e.g. a judge's own model call
    future.cancel()
    return bool(await future)


def _exits(context: GuardrailContext) -> bool:
    raise SystemExit(3)


@pytest.mark.parametrize("kind", ["input", "output"])
@pytest.mark.parametrize("guard", [_cancelled_async, _exits], ids=["cancelled", "exit"])
async def test_a_guardrail_raising_past_exception_still_trips(kind: str, guard: Any) -> None:
    """opensearch-project/ml-commons #4904, langwatch/langwatch #6157: a guardrail whose
    check failed let the content through (fail open). Here one whose own work was
    cancelled (a `CancelledError` that was not the run's) passed the answer as if it had
    approved it, and one raising `SystemExit` ended `prompt` with a bare
    `CancelledError`."""
    agent, _ = scripted("a", ["the launch code is 0000"], **{f"{kind}_guardrails": [guard]})
    with pytest.raises(GuardrailTripped, match=f"{kind} guardrail '{guard.__name__}' tripped"):
        await agent.prompt("hello")
    assert "0000" not in repr(agent.state.messages)
    assert transcript_problems(agent.state.messages) == []


async def test_a_sub_agents_trip_is_an_error_result_for_the_parent() -> None:
    strict, _ = scripted("strict", ["secret stuff"], output_guardrails=[lambda c: True])
    lead, _ = scripted(
        "lead", [calls(("strict", {"input": "x"})), "I could not get it."],
        tools=[strict.as_tool()],
    )  # fmt: skip
    assert (await lead.prompt("go")).text == "I could not get it."
    result = lead.state.messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert "agent 'strict' failed: output guardrail '<lambda>' tripped" in result.content[0].text  # type: ignore[union-attr]
    assert "secret stuff" not in repr(lead.state.messages)


@pytest.mark.parametrize("kind", ["input", "output"])
async def test_an_abort_while_a_guardrail_still_checks_ends_the_run_at_once(kind: str) -> None:
    """The answer's `message_end` waited for a slow guardrail whatever the run's signal
    said: `abort()` did nothing until the guardrail had finished (30 s here). The run now
    ends at once, and the answer no guardrail cleared is kept out of the transcript."""
    checking = asyncio.Event()

    async def slow(context: Any) -> bool:
        checking.set()
        await asyncio.sleep(30)
        return False

    guards: dict[str, Any] = {f"{kind}_guardrails": [slow]}
    agent, _ = scripted("a", [calls(("lookup", {"n": 1})), "the answer"],
                        tools=[slow_tool("lookup", [], delay_s=0)], **guards)  # fmt: skip
    task = asyncio.create_task(agent.prompt("hi"))
    await asyncio.wait_for(checking.wait(), 10)
    await asyncio.sleep(0.2)  # the model has answered; its message_end waits
    agent.abort()

    reply = await asyncio.wait_for(task, 5)

    assert reply.stop_reason == "aborted"
    last = agent.state.messages[-1]
    assert isinstance(last, AssistantMessage) and last.content == []
    assert last.stop_reason == "aborted"
    assert transcript_problems(agent.state.messages) == []
