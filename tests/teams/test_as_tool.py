"""`Agent.as_tool` (DESIGN §17): a sub-agent's run as one tool call of its parent — its
answer, its events nested live in the parent's, parallel calls that share nothing, usage
and limits that add up, abort, and failures that name the agent."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import (
    AbortSignal,
    Agent,
    AgentEvent,
    AssistantMessage,
    ConfigError,
    MessageEndEvent,
    NestedAgentEvent,
    PreparedToolCall,
    ToolCall,
    ToolExecutionStartEvent,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
    UserMessage,
    event_to_dict,
    execute_prepared_tool_call,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import Context, TextContent, Usage

from ..approvals._kit import transcript_problems
from ._kit import answer, calls, scripted, slow_tool


def record(agent: Agent[Any]) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    agent.subscribe(lambda event, signal: events.append(event))
    return events


async def test_the_answer_is_the_sub_runs_text_and_its_events_nest_in_order() -> None:
    researcher, _ = scripted("researcher", ["Paris is the capital."])
    lead, fm = scripted(
        "lead", [calls(("researcher", {"input": "capital of France?"})), "It is Paris."]
    )
    lead.tool_store.register(researcher.as_tool(description="Looks facts up."))
    events = record(lead)

    reply = await lead.prompt("What is the capital of France?")

    assert reply.text == "It is Paris." and reply.agent == "lead"
    result = lead.state.messages[2]
    assert isinstance(result, ToolResultMessage) and not result.is_error
    assert result.content[0].text == "Paris is the capital."  # type: ignore[union-attr]
    assert result.details == {"agent": "researcher", "agent_path": ["lead", "researcher"]}
    assert fm.contexts[0].tools[0].description == "Looks facts up."
    call_id = result.tool_call_id
    kinds = [e.type for e in events]
    start = kinds.index("tool_execution_start")
    end = kinds.index("tool_execution_end")
    nested = [e for e in events if isinstance(e, NestedAgentEvent)]
    assert all(start < events.index(e) < end for e in nested)  # live, inside the call
    assert {(e.agent_path, e.tool_call_id) for e in nested} == {(("lead", "researcher"), call_id)}
    inner = [e.event.type for e in nested]
    assert inner[:4] == ["agent_start", "turn_start", "message_start", "message_end"]
    assert inner[-3:] == ["message_end", "turn_end", "agent_end"]
    sub_answer = [e.event for e in nested if e.event.type == "message_end"][-1]
    assert sub_answer.message.agent == "researcher"  # type: ignore[union-attr]
    assert json.dumps(event_to_dict(nested[0]))  # JSON-ready like every event


async def test_two_parallel_calls_overlap_and_neither_sees_the_others_messages() -> None:
    log: list[tuple[str, str, float]] = []

    def respond(context: Context) -> AssistantMessage:
        last = context.messages[-1]
        if isinstance(last, UserMessage):
            return faux_message(faux_tool_call("lookup", {"n": 1}))
        question = next(m for m in context.messages if isinstance(m, UserMessage))
        return faux_message(f"answer to {question.content[0].text}")  # type: ignore[union-attr]

    sub_fm = FauxModel([respond] * 4)
    researcher = Agent(
        "You research.", sub_fm.model, stream_fn=sub_fm.stream_fn, name="researcher",
        tools=[slow_tool("lookup", log, delay_s=0.4)],
    )  # fmt: skip
    lead, _ = scripted(
        "lead",
        [
            calls(("researcher", {"input": "q-one"}), ("researcher", {"input": "q-two"})),
            "both done",
        ],
        tools=[researcher.as_tool()],
    )

    await lead.prompt("ask twice")

    starts = [t for _, what, t in log if what == "start"]
    ends = [t for _, what, t in log if what == "end"]
    assert len(starts) == 2 and max(starts) < min(ends)  # the two slow tools overlapped
    results = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)]
    assert sorted(r.content[0].text for r in results) == [  # type: ignore[union-attr]
        "answer to q-one",
        "answer to q-two",
    ]
    for context in sub_fm.contexts:  # each sub-run saw only its own question and calls
        asked = [m.content[0].text for m in context.messages if isinstance(m, UserMessage)]  # type: ignore[union-attr]
        assert len(asked) == 1
        own_calls = {
            c.id for m in context.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
        }
        assert all(
            m.tool_call_id in own_calls
            for m in context.messages
            if isinstance(m, ToolResultMessage)
        )
    assert researcher.state.messages == []  # the configuration's own agent ran nothing


async def test_a_failing_sub_run_is_an_error_result_naming_the_agent() -> None:
    broken, _ = scripted("broken", [])  # no responses: its first model call fails
    lead, _ = scripted(
        "lead", [calls(("broken", {"input": "help"})), "I will answer myself."],
        tools=[broken.as_tool()],
    )  # fmt: skip

    reply = await lead.prompt("go")

    assert reply.text == "I will answer myself."
    result = lead.state.messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert result.content[0].text.startswith("agent 'broken' failed: ")  # type: ignore[union-attr]


async def test_usage_goes_to_the_result_and_a_limit_only_the_sum_exceeds_ends_the_run() -> None:
    # each alone stays under 1000 tokens; the parent and its sub-run together do not
    researcher, _ = scripted("researcher", [answer("found", Usage(input=600, output=100))])
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"}), usage=Usage(input=300, output=50)), "never"],
        tools=[researcher.as_tool()],
        usage_limits=UsageLimits(max_total_tokens=1000),
    )
    events = record(lead)

    with pytest.raises(UsageLimitExceeded, match="max_total_tokens=1000 \\(used 1050 tokens"):
        await lead.prompt("go")

    result = next(m for m in lead.state.messages if isinstance(m, ToolResultMessage))
    assert result.usage is not None and (result.usage.input, result.usage.output) == (600, 100)
    assert events[-1].type == "agent_end" and events[-1].reason == "usage_limit"
    assert transcript_problems(lead.state.messages) == []


async def test_the_sub_run_gets_only_what_the_parents_limits_leave() -> None:
    researcher, sub_fm = scripted(
        "researcher",
        [calls(("lookup", {"n": 1}), usage=Usage(input=300)), "never reached"],
        tools=[slow_tool("lookup", [], delay_s=0)],
    )
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"}), usage=Usage(input=500)), "never"],
        tools=[researcher.as_tool()],
        usage_limits=UsageLimits(max_input_tokens=700),
    )

    with pytest.raises(UsageLimitExceeded):
        await lead.prompt("go")

    result = next(m for m in lead.state.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "max_input_tokens=200 (used 300" in result.content[0].text  # type: ignore[union-attr]
    assert sub_fm.call_count == 1  # its budget (700 - 500) was gone after one model call


@pytest.mark.timeout(60)
async def test_parallel_sub_runs_share_the_parents_budget_as_they_spend_it() -> None:
    """Two sub-runs started together each saw the parent's whole remaining budget, so
    together they could spend twice it: each now sees the other's spending live."""

    def researcher_turn(context: Context) -> AssistantMessage:
        return calls(("lookup", {"n": 1}), usage=Usage(input=300))  # it never stops itself

    researcher, sub_fm = scripted(
        "researcher", [researcher_turn] * 20, tools=[slow_tool("lookup", [], delay_s=0.05)]
    )
    both = calls(("researcher", {"input": "a"}), ("researcher", {"input": "b"}))
    both.usage = Usage(input=100)
    lead, _ = scripted(
        "lead",
        [both, "never"],
        tools=[researcher.as_tool()],
        usage_limits=UsageLimits(max_input_tokens=1100),
    )

    with pytest.raises(UsageLimitExceeded):
        await lead.prompt("go")

    # 100 + 2 x 300 = 700, then 1300 stops both after two calls each; each alone with the
    # 1000 left at its start would have made four calls.
    assert sub_fm.call_count == 4
    results = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2 and all(r.is_error for r in results)
    for result in results:
        assert result.usage is not None and result.usage.input == 600
        text = result.content[0].text  # type: ignore[union-attr]
        assert "max_input_tokens=1100 (used 1300 input tokens)" in text
    assert transcript_problems(lead.state.messages) == []


async def test_a_sub_run_cut_off_by_its_timeout_still_counts_in_the_parents_limits() -> None:
    """What a sub-run cut off by its call's timeout had spent by then (seen live, then on
    the timed-out result) still counts, so the parent stops at its limit instead of going
    on."""
    researcher, _ = scripted(
        "researcher",
        [calls(("lookup", {"n": 1}), usage=Usage(input=850)), "never"],
        tools=[slow_tool("lookup", [], delay_s=30)],
    )
    lead, lead_fm = scripted(
        "lead",
        [
            calls(("researcher", {"input": "x"}), usage=Usage(input=100)),
            calls(("note", {"n": 1}), usage=Usage(input=100)),
            "went on",
        ],
        tools=[researcher.as_tool(), slow_tool("note", [], delay_s=0)],
        usage_limits=UsageLimits(max_input_tokens=1000),
        tool_timeout_s=0.5,
    )

    with pytest.raises(UsageLimitExceeded, match=r"max_input_tokens=1000 \(used 1050"):
        await lead.prompt("go")

    result = next(m for m in lead.state.messages if isinstance(m, ToolResultMessage))
    assert result.is_error and "timed out" in result.content[0].text  # type: ignore[union-attr]
    assert lead_fm.call_count == 2


async def test_the_parents_tool_call_cap_counts_the_sub_runs_calls() -> None:
    """`max_tool_calls` capped only the parent's own calls: a sub-agent ran as many as it
    liked. The sub-run's calls now count against it, live."""
    log: list[tuple[str, str, float]] = []

    def researcher_turn(context: Context) -> AssistantMessage:
        return calls(("lookup", {"n": 1}))  # it never stops itself

    researcher, _ = scripted(
        "researcher", [researcher_turn] * 10, tools=[slow_tool("lookup", log, delay_s=0)]
    )
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "x"})), "done"],
        tools=[researcher.as_tool()],
        usage_limits=UsageLimits(max_tool_calls=3),
    )

    reply = await lead.prompt("go")

    assert [what for _, what, _ in log].count("start") == 2  # 1 for the lead, 2 inside
    result = next(m for m in lead.state.messages if isinstance(m, ToolResultMessage))
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "max_tool_calls=3 (used 3 tool calls)" in text
    assert reply.text == "done"  # the cap stops tool calls, not the lead's answer
    assert transcript_problems(lead.state.messages) == []


@pytest.mark.parametrize("width", [2, 4, 8])
async def test_parallel_sub_runs_share_the_parents_tool_call_cap(width: int) -> None:
    """`width` sub-runs started in one batch, each calling tools without end: together
    they run only what the parent's `max_tool_calls` leaves, not that much each."""
    log: list[tuple[str, str, float]] = []

    def researcher_turn(context: Context) -> AssistantMessage:
        return calls(("lookup", {"n": 1}))

    researcher, _ = scripted(
        "researcher", [researcher_turn] * 100, tools=[slow_tool("lookup", log, delay_s=0.01)]
    )
    asks = [("researcher", {"input": f"part {i}"}) for i in range(width)]
    lead, _ = scripted(
        "lead",
        [calls(*asks), "done"],
        tools=[researcher.as_tool()],
        usage_limits=UsageLimits(max_tool_calls=width + 1),
    )

    reply = await lead.prompt("go")

    inner = [what for _, what, _ in log].count("start")
    assert width + inner == width + 1  # the lead's calls, then one left for all of them
    assert reply.text == "done"
    assert transcript_problems(lead.state.messages) == []


async def test_a_run_that_outlives_the_call_it_started_in_has_its_own_limits_only() -> None:
    """A tool that starts another agent's run in the background (`send`) and returns: once
    the call is over, that run is no longer held to the caller's limits (here already
    reached by the caller's own spending)."""
    log: list[tuple[str, str, float]] = []
    bg_fm = FauxModel([calls(("note", {"n": 1}), usage=Usage(input=5)), "noted"], delay_s=0.05)
    background = Agent(
        "bg",
        bg_fm.model,
        stream_fn=bg_fm.stream_fn,
        tools=[slow_tool("note", log, delay_s=0)],
        usage_limits=UsageLimits(max_input_tokens=10_000),
    )

    async def kick(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        background.send("take a note")
        return "started"

    from yiemagent import AgentTool

    lead, _ = scripted(
        "lead",
        [calls(("kick", {}), usage=Usage(input=50)), answer("done", Usage(input=60))],
        tools=[AgentTool("kick", "kick", "starts it", {"type": "object"}, kick)],
        usage_limits=UsageLimits(max_input_tokens=100),
    )
    assert (await lead.prompt("go")).text == "done"  # 110 tokens: the lead's limit is reached

    assert (await asyncio.wait_for(background.take_response(), 10)).text == "noted"
    assert [what for _, what, _ in log] == ["start", "end"]  # its call was not refused


async def test_an_abort_during_a_sub_runs_tool_returns_fast_with_every_call_answered() -> None:
    started = asyncio.Event()

    async def stuck(call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any) -> str:
        started.set()
        await asyncio.sleep(60)  # ignores the abort: the pipeline abandons it after its grace
        return "never"

    from yiemagent import AgentTool

    researcher, _ = scripted(
        "researcher",
        [calls(("stuck", {"n": 1}))],
        tools=[AgentTool("stuck", "stuck", "hangs", {"type": "object"}, stuck)],
    )
    lead, _ = scripted(
        "lead", [calls(("researcher", {"input": "x"}))], tools=[researcher.as_tool()]
    )
    events = record(lead)

    task = asyncio.create_task(lead.prompt("go"))
    await asyncio.wait_for(started.wait(), 30)
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    lead.abort()
    reply = await asyncio.wait_for(task, 30)
    elapsed = loop.time() - t0

    assert elapsed < 2.0, elapsed
    assert reply.stop_reason == "aborted"
    assert transcript_problems(lead.state.messages) == []
    result = next(m for m in lead.state.messages if isinstance(m, ToolResultMessage))
    assert result.is_error
    nested = [e.event for e in events if isinstance(e, NestedAgentEvent)]
    started_ids = [e.tool_call_id for e in nested if e.type == "tool_execution_start"]
    ended_ids = [e.tool_call_id for e in nested if e.type == "tool_execution_end"]
    sub_results = [
        e.message
        for e in nested
        if e.type == "message_end" and isinstance(e.message, ToolResultMessage)
    ]
    assert started_ids and started_ids == ended_ids
    assert [r.tool_call_id for r in sub_results] == started_ids  # the sub-run answered its call
    assert nested[-1].type == "agent_end"


async def test_a_call_whose_signal_is_already_aborted_starts_no_sub_run() -> None:
    """`abort()` of an idle agent does nothing, so a sub-run started after the parent's
    abort would run to its end: the call is refused before the sub-agent starts."""
    researcher, fm = scripted("researcher", [answer("found")])
    tool = researcher.as_tool()
    signal = AbortSignal()
    signal.abort("the user stopped")
    call = ToolCall("c1", "researcher", {"input": "x"})

    outcome = await execute_prepared_tool_call(PreparedToolCall(tool, call, {"input": "x"}), signal)

    assert fm.call_count == 0
    assert outcome.is_error
    assert outcome.result.content[0].text == "agent 'researcher' was aborted"  # type: ignore[union-attr]
    assert outcome.result.details == {"agent": "researcher", "agent_path": ["researcher"]}


async def test_events_of_deeper_levels_carry_the_whole_path() -> None:
    inner, _ = scripted("inner", ["deep answer"])
    mid, _ = scripted(
        "mid", [calls(("inner", {"input": "go deeper"})), "mid answer"], tools=[inner.as_tool()]
    )
    lead, _ = scripted(
        "lead", [calls(("mid", {"input": "go"})), "top answer"], tools=[mid.as_tool()]
    )
    events = record(lead)

    assert (await lead.prompt("start")).text == "top answer"

    nested = [e for e in events if isinstance(e, NestedAgentEvent)]
    paths = {e.agent_path for e in nested}
    assert paths == {("lead", "mid"), ("lead", "mid", "inner")}
    assert all(not isinstance(e.event, NestedAgentEvent) for e in nested)
    mid_call = next(
        e.event.tool_call_id
        for e in nested
        if e.agent_path == ("lead", "mid") and e.event.type == "tool_execution_start"
    )
    assert {e.tool_call_id for e in nested if e.agent_path[-1] == "inner"} == {mid_call}
    lead_call = next(
        e.tool_call_id for e in events if isinstance(e, ToolExecutionStartEvent)
    )  # the lead's call of mid
    assert {e.tool_call_path for e in nested} == {(lead_call,), (lead_call, mid_call)}
    assert all(len(e.tool_call_path) == len(e.agent_path) - 1 for e in nested)
    inner_end = [i for i, e in enumerate(nested) if e.agent_path[-1] == "inner"][-1]
    mid_tool_end = next(
        i for i, e in enumerate(nested)
        if e.agent_path == ("lead", "mid") and e.event.type == "tool_execution_end"
    )  # fmt: skip
    assert inner_end < mid_tool_end  # in the order they happened


async def test_after_a_handoff_inside_a_sub_run_its_events_name_the_target() -> None:
    """openai-agents' test_agent_as_tool_streaming_updates_agent_on_handoff: a sub-agent
    that hands off inside its run streams on as the target. Here the target's events kept
    the path of the agent that handed over, ("lead", "front"), while the events of the
    agent it then called said ("lead", "back", "deep"): two names for one speaker."""
    deep, _ = scripted("deep", ["from deep"])
    back, _ = scripted(
        "back", [calls(("deep", {"input": "x"})), "from back"], tools=[deep.as_tool()]
    )
    front, _ = scripted("front", [calls(("transfer_to_back", {}))], handoffs=[back])
    lead, _ = scripted("lead", [calls(("front", {"input": "q"})), "done"], tools=[front.as_tool()])
    events = record(lead)

    assert (await lead.prompt("go")).text == "done"

    nested = [e for e in events if isinstance(e, NestedAgentEvent)]
    written = [
        (e.agent_path, e.event.message.agent)
        for e in nested
        if isinstance(e.event, MessageEndEvent) and isinstance(e.event.message, AssistantMessage)
    ]
    assert written == [
        (("lead", "front"), "front"),
        (("lead", "back"), "back"),
        (("lead", "back", "deep"), "deep"),
        (("lead", "back"), "back"),
    ]
    tools = [(e.agent_path, e.event.tool_name) for e in nested
             if e.event.type == "tool_execution_start"]  # fmt: skip
    assert tools == [(("lead", "front"), "transfer_to_back"), (("lead", "back"), "deep")]
    assert nested[0].event.type == "agent_start" and nested[0].agent_path == ("lead", "front")


async def test_output_mode_answers_with_the_validated_output_as_json() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    finder, _ = scripted("finder", ['{"city": "Paris"}'], output_type=schema)
    lead, _ = scripted(
        "lead", [calls(("find", {"input": "where?"})), "done"],
        tools=[finder.as_tool("find", output="output")],
    )  # fmt: skip

    await lead.prompt("go")

    result = lead.state.messages[2]
    assert isinstance(result, ToolResultMessage) and not result.is_error
    assert json.loads(result.content[0].text) == {"city": "Paris"}  # type: ignore[union-attr]


async def test_text_mode_answers_with_the_output_when_the_sub_run_wrote_no_text() -> None:
    """An agent with an output type answers through its output tool, with no text: the
    default `as_tool()` told the parent "(agent finder gave an empty answer)" and threw the
    validated value away."""
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    finder, _ = scripted("finder", [calls(("final_result", {"city": "Oslo"}))], output_type=schema)
    lead, _ = scripted(
        "lead", [calls(("finder", {"input": "where?"})), "done"], tools=[finder.as_tool()]
    )

    await lead.prompt("go")

    result = lead.state.messages[2]
    assert isinstance(result, ToolResultMessage) and not result.is_error
    assert json.loads(result.content[0].text) == {"city": "Oslo"}  # type: ignore[union-attr]


async def test_a_sub_run_stopped_by_its_max_turns_is_an_error_naming_the_limit() -> None:
    """A sub-agent that still calls tools when its `max_turns` runs out has not answered:
    the parent was told "(agent looper gave an empty answer)", not an error, and took it
    for the sub-agent's finished work."""
    looper, fm = scripted(
        "looper",
        [faux_message(faux_text("checking"), faux_tool_call("lookup", {"n": 1}))] * 5,
        tools=[slow_tool("lookup", [], delay_s=0)],
        max_turns=2,
    )
    lead, _ = scripted(
        "lead", [calls(("looper", {"input": "go"})), "done"], tools=[looper.as_tool()]
    )

    assert (await lead.prompt("go")).text == "done"

    result = lead.state.messages[2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert result.content[0].text.startswith(  # type: ignore[union-attr]
        "agent 'looper' stopped at its max_turns (2) before it answered"
    )
    assert fm.call_count == 2
    assert transcript_problems(lead.state.messages) == []


async def test_two_agents_of_one_name_are_refused_unless_their_tools_are_renamed() -> None:
    """openai-agents' test_agent_as_tool_rejects_distinct_agents_with_the_same_name and
    ..._collision_allows_explicit_override: two different agents whose tools would share a
    name are refused at construction, naming it; given names of their own, each call
    reaches its own agent."""
    first, _ = scripted("helper", ["from the first"])
    second, _ = scripted("helper", ["from the second"])
    with pytest.raises(ConfigError, match="two different tools named 'helper'"):
        scripted("lead", [], tools=[first.as_tool(), second.as_tool()])
    lead, _ = scripted(
        "lead",
        [calls(("first", {"input": "a"}), ("second", {"input": "b"})), "done"],
        tools=[first.as_tool(name="first"), second.as_tool(name="second")],
    )
    await lead.prompt("ask both")
    results = [m for m in lead.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.content) for r in results] == [
        ("first", [TextContent("from the first")]),
        ("second", [TextContent("from the second")]),
    ]


def test_bad_names_and_options_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="invalid agent name 'two words'"):
        Agent(name="two words")
    plain, _ = scripted("plain", [])
    with pytest.raises(ConfigError, match="needs an output type"):
        plain.as_tool(output="output")
    with pytest.raises(ConfigError, match="must be 'text' or 'output'"):
        plain.as_tool(output="json")
    with pytest.raises(ConfigError, match="invalid tool name"):
        plain.as_tool(name="a/b")


@settings(max_examples=30, deadline=None)
@given(
    lead_in=st.integers(1, 500),
    mid_in=st.lists(st.integers(1, 500), min_size=2, max_size=2),
    leaf_in=st.lists(st.integers(1, 500), min_size=1, max_size=4),
)
def test_each_token_of_nested_runs_counts_once_in_the_outermost_limit(
    lead_in: int, mid_in: list[int], leaf_in: list[int]
) -> None:
    """lead -> mid -> leaf, limits on the lead only: spending counted live at every level
    and again from each result's usage is never counted twice. The lead's caps are the
    exact totals (tokens, tool calls), so they are reached only after the last call."""
    total = lead_in + sum(mid_in) + sum(leaf_in)
    calls_made = 2 + len(leaf_in) - 1  # lead -> mid, mid -> leaf, the leaf's lookups

    async def scenario() -> None:
        leaf_script: list[Any] = [calls(("lookup", {"n": 1}), usage=Usage(input=n))
                                  for n in leaf_in[:-1]]  # fmt: skip
        leaf_script.append(answer("leaf done", Usage(input=leaf_in[-1])))
        leaf, _ = scripted("leaf", leaf_script, tools=[slow_tool("lookup", [], delay_s=0)])
        mid, _ = scripted(
            "mid",
            [calls(("leaf", {"input": "x"}), usage=Usage(input=mid_in[0])),
             answer("mid done", Usage(input=mid_in[1]))],
            tools=[leaf.as_tool()],
        )  # fmt: skip
        lead, _ = scripted(
            "lead",
            [calls(("mid", {"input": "x"}), usage=Usage(input=lead_in)), "never"],
            tools=[mid.as_tool()],
            usage_limits=UsageLimits(max_input_tokens=total, max_tool_calls=calls_made),
        )
        with pytest.raises(UsageLimitExceeded) as caught:
            await lead.prompt("go")
        assert f"max_input_tokens={total} (used {total} input tokens)" in str(caught.value)
        result = next(m for m in lead.state.messages if isinstance(m, ToolResultMessage))
        assert not result.is_error and result.content[0].text == "mid done"  # type: ignore[union-attr]

    asyncio.run(scenario())
