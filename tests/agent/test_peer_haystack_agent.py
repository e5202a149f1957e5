"""Runs as haystack checks its Agent (test/components/agents/test_agent.py: exit
conditions, max steps, runtime tools, token usage; test_agent_hooks.py: hooks before the
model, before and after tools, on exit, and a hook that stops the run), on the faux
provider.

haystack's names map to ours: an exit condition is a tool whose result has
`terminate=True`, `max_agent_steps` is `max_turns`, a `before_llm` hook is
`transform_context`, `after_tool` is `after_tool_call`, `on_exit` with `continue_run` is
a `follow_up` given when the model would stop, and `stop_run` is `should_stop_after_turn`.
Where ours differs it is by choice: a batch ends the run only when every result asks to
(haystack: when any exit tool succeeded; docs/agent.md, **Terminate**), an empty answer is
the answer (haystack asks again; docs/agent.md), and a `before_tool_call` that stops a call
answers it as blocked where haystack's hook may take the call out of the transcript
(docs/agent.md, "Runs, as peers check them"). `max_turns` bounds each round, and a
follow-up opens a new one, so a hook that always continues is bounded by
`should_stop_after_turn` (haystack's `max_agent_steps` bounds them together)."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    AfterToolCallResult,
    AgentEndEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallResult,
    MessageInputError,
    TextContent,
    ToolResultMessage,
    TurnContext,
    Usage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import faux_agent, make_tool

WEATHER = '{"weather": "mostly sunny", "temperature": 7}'


def weather_tool(*, terminate: bool = False, fail: bool = False) -> Any:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        if fail:
            raise RuntimeError("boom")
        return AgentToolResult(content=[TextContent(WEATHER)], terminate=terminate)

    return make_tool("weather_tool", execute, parallel=True)


def search_tool(*, terminate: bool = False) -> Any:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult(content=[TextContent("found")], terminate=terminate)

    return make_tool("search", execute, parallel=True)


def ends_of(agent: Any) -> list[str]:
    reasons: list[str] = []
    agent.subscribe(
        lambda e, _s: reasons.append(e.reason) if isinstance(e, AgentEndEvent) else None
    )
    return reasons


def weather_call() -> AssistantMessage:
    return faux_message(faux_tool_call("weather_tool", {"location": "Berlin"}))


def results(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_an_exit_tool_ends_the_run_after_one_step() -> None:
    # test_exit_condition_exits: the tool's result is the last message
    fm = FauxModel([weather_call(), "never asked"])
    agent = faux_agent(fm, tools=[weather_tool(terminate=True)])
    reasons = ends_of(agent)
    reply = await agent.prompt("Hello")
    assert fm.call_count == 1 and reasons == ["terminate"]
    assert reply.stop_reason == "tool_use_terminated" and WEATHER in reply.text
    assert text_of(agent.state.messages[-1].content) == WEATHER


async def test_an_exit_tool_given_to_one_run_ends_that_run() -> None:
    # test_exit_condition_on_tool_provided_at_runtime
    fm = FauxModel([weather_call(), "never asked"])
    agent = faux_agent(fm, max_turns=5)
    reasons = ends_of(agent)
    await agent.prompt("Weather in Berlin?", tools=[weather_tool(terminate=True)])
    assert fm.call_count == 1 and reasons == ["terminate"]


async def test_an_exit_tool_that_failed_does_not_end_the_run() -> None:
    # test_check_exit_conditions_parallel_calls_with_errored_exit_tool
    fm = FauxModel([weather_call(), "It failed, sorry."])
    agent = faux_agent(fm, tools=[weather_tool(terminate=True, fail=True)])
    reasons = ends_of(agent)
    reply = await agent.prompt("Weather?")
    assert fm.call_count == 2 and reasons == ["stop"] and reply.text == "It failed, sorry."
    assert results(agent)[0].is_error and text_of(results(agent)[0].content) == "boom"


async def test_an_exit_tool_beside_another_call_ends_only_when_both_ask() -> None:
    # test_check_exit_conditions_parallel_tool_calls: haystack exits on the exit tool
    # alone; here the model reads the other result first (decision)
    both = faux_message(
        faux_tool_call("weather_tool", {"location": "Berlin"}),
        faux_tool_call("search", {"q": "weather Berlin"}),
    )
    fm = FauxModel([both, "Sunny, and found."])
    agent = faux_agent(fm, tools=[weather_tool(terminate=True), search_tool()])
    assert (await agent.prompt("go")).text == "Sunny, and found."
    fm = FauxModel([both, "never asked"])
    agent = faux_agent(fm, tools=[weather_tool(terminate=True), search_tool(terminate=True)])
    reasons = ends_of(agent)
    reply = await agent.prompt("go")
    assert fm.call_count == 1 and reasons == ["terminate"]
    assert reply.text == f"Tool execution completed.\n\n{WEATHER}\n\nfound"  # in call order


async def test_max_turns_ends_a_model_that_keeps_calling() -> None:
    # test_max_steps_exit: the bound is the number of model calls
    fm = FauxModel([weather_call() for _ in range(5)])
    agent = faux_agent(fm, tools=[weather_tool()], max_turns=2)
    reasons = ends_of(agent)
    await agent.prompt("Weather in Berlin?")
    assert fm.call_count == 2 and reasons == ["max_turns"]
    assert len(results(agent)) == 2  # every call answered


async def test_a_text_answer_ends_the_run_with_reason_stop() -> None:
    # test_text_exit
    fm = FauxModel(["Berlin is sunny."])
    agent = faux_agent(fm, tools=[weather_tool()])
    reasons = ends_of(agent)
    assert (await agent.prompt("Weather in Berlin?")).text == "Berlin is sunny."
    assert reasons == ["stop"]


async def test_usage_of_every_step_is_on_its_message() -> None:
    # test_run_populates_token_usage_and_tool_call_counts
    spent = Usage(input=10, output=4, total_tokens=14)
    call = weather_call()
    call.usage = spent
    answer = AssistantMessage(
        [TextContent("sunny")], usage=Usage(input=20, output=2, total_tokens=22)
    )
    fm = FauxModel([call, answer])
    agent = faux_agent(fm, tools=[weather_tool()])
    await agent.prompt("go")
    replies = [m for m in agent.state.messages if isinstance(m, AssistantMessage)]
    assert sum(m.usage.total_tokens for m in replies) == 36
    assert [r.tool_name for r in results(agent)] == ["weather_tool"]


async def test_a_hook_before_each_model_call_rewrites_what_it_reads() -> None:
    # before_llm: a system note injected for the model, once per call, the transcript kept
    seen: list[int] = []

    def inject(messages: list[Any], signal: Any) -> list[Any]:
        seen.append(len(messages))
        return [*messages, UserMessage("INJECTED")]

    fm = FauxModel([weather_call(), "done"])
    agent = faux_agent(fm, tools=[weather_tool()], transform_context=inject)
    await agent.prompt("hi")
    assert seen == [1, 3]  # before each of the two calls
    for context in fm.contexts:
        assert text_of(context.messages[-1].content) == "INJECTED"
    assert not [m for m in agent.state.messages if text_of(getattr(m, "content", [])) == "INJECTED"]


async def test_a_hook_after_tools_rewrites_results_before_the_next_call() -> None:
    # test_rewrites_tool_results_before_next_llm_call: the next call and the transcript
    # both hold the rewritten result
    def offload(ctx: Any, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(content=[TextContent("OFFLOADED")])

    fm = FauxModel([weather_call(), "done"])
    agent = faux_agent(fm, tools=[weather_tool()], after_tool_call=offload)
    await agent.prompt("hi")
    sent = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert [text_of(m.content) for m in sent] == ["OFFLOADED"]
    assert [text_of(m.content) for m in results(agent)] == ["OFFLOADED"]


async def test_rewriting_an_exit_tools_result_still_ends_the_run() -> None:
    # test_rewriting_results_does_not_change_exit_matching
    def offload(ctx: Any, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(content=[TextContent("OFFLOADED")])

    fm = FauxModel([weather_call(), "never asked"])
    agent = faux_agent(fm, tools=[weather_tool(terminate=True)], after_tool_call=offload)
    reasons = ends_of(agent)
    await agent.prompt("hi")
    assert fm.call_count == 1 and reasons == ["terminate"]
    assert [text_of(m.content) for m in results(agent)] == ["OFFLOADED"]


async def test_a_hook_that_stops_after_the_tools_skips_the_next_call() -> None:
    # test_mid_step_stop_skips_the_next_call: the tool ran, its result is the last message
    def over_budget(turn: TurnContext) -> bool:
        return bool(turn.tool_results)

    fm = FauxModel([weather_call(), "never asked"])
    agent = faux_agent(fm, tools=[weather_tool()], should_stop_after_turn=over_budget)
    reasons = ends_of(agent)
    await agent.prompt("hi")
    assert fm.call_count == 1 and reasons == ["should_stop"]
    assert isinstance(agent.state.messages[-1], ToolResultMessage)


async def test_an_exit_hook_makes_the_model_call_a_mandatory_tool() -> None:
    # test_mandatory_tool_forces_extra_step: an answer without `save` gets a follow-up
    saved: list[str] = []

    def save(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        saved.append(call_id)
        return "saved"

    fm = FauxModel(["Done", faux_message(faux_tool_call("save", {"content": "x"})), "All finished"])
    agent = faux_agent(fm, tools=[make_tool("save", save)])

    def require_save(event: Any, signal: Any) -> None:
        message = getattr(event, "message", None)
        answered = isinstance(message, AssistantMessage) and not message.tool_calls
        if event.type == "message_end" and answered and not saved:
            agent.follow_up("You must call save before finishing.")

    agent.subscribe(require_save)
    reply = await agent.prompt("hi")
    assert fm.call_count == 3 and len(saved) == 1 and reply.text == "All finished"


async def test_an_exit_hook_may_push_back_on_an_exit_tool() -> None:
    # test_critique_on_tool_based_exit: terminate skips the model call, not a follow-up
    answered: list[str] = []

    def final_answer(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        answered.append(args["answer"])
        return AgentToolResult(content=[TextContent(args["answer"])], terminate=True)

    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_answer", {"answer": "short"})),
            faux_message(faux_tool_call("final_answer", {"answer": "longer"})),
        ]
    )
    agent = faux_agent(fm, tools=[make_tool("final_answer", final_answer)])

    def critique(event: Any, signal: Any) -> None:
        if event.type == "turn_end" and len(answered) == 1:
            agent.follow_up("Please expand.")

    agent.subscribe(critique)
    reply = await agent.prompt("q")
    assert fm.call_count == 2 and answered == ["short", "longer"]
    assert reply.text.endswith("longer")


async def test_a_turn_bound_ends_an_exit_hook_that_always_continues() -> None:
    # test_max_agent_steps_bounds_always_cancel_hook: max_turns bounds each round, and a
    # follow-up opens a new one (docs/agent.md, Queues), so the bound across them is
    # should_stop_after_turn's
    fm = FauxModel(["text"] * 6)
    turns: list[int] = []

    def three_turns(turn: TurnContext) -> bool:
        turns.append(1)
        return len(turns) >= 3

    agent = faux_agent(fm, max_turns=3, should_stop_after_turn=three_turns)
    agent.subscribe(lambda e, _s: agent.follow_up("keep going") if e.type == "turn_end" else None)
    reasons = ends_of(agent)
    await agent.prompt("hi")
    assert fm.call_count == 3 and reasons == ["should_stop"]


async def test_a_before_tool_hook_that_stops_a_call_answers_it() -> None:
    # test_skips_tool_execution_when_hook_leaves_last_message_without_tool_calls:
    # haystack drops the call; here it stays, answered as blocked
    ran: list[str] = []

    def save(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(call_id)
        return "saved"

    def skip(ctx: Any, signal: Any) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="Skipping tool execution.")

    fm = FauxModel([faux_message(faux_tool_call("save", {"content": "x"})), "done"])
    agent = faux_agent(fm, tools=[make_tool("save", save)], before_tool_call=skip)
    reply = await agent.prompt("hi")
    assert ran == [] and fm.call_count == 2 and reply.text == "done"
    [blocked] = results(agent)
    assert blocked.is_error and text_of(blocked.content) == "Skipping tool execution."


async def test_a_before_tool_hook_changes_the_arguments_the_tool_gets() -> None:
    # test_rereads_last_state_message_after_hook; the transcript keeps what the model wrote
    got: list[Any] = []

    def save(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        got.append(dict(args))
        return "saved"

    def change(ctx: Any, signal: Any) -> None:
        ctx.args["content"] = "changed"

    fm = FauxModel([faux_message(faux_tool_call("save", {"content": "original"})), "done"])
    agent = faux_agent(fm, tools=[make_tool("save", save)], before_tool_call=change)
    await agent.prompt("hi")
    assert got == [{"content": "changed"}]
    [call] = [
        c for m in agent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert call.arguments == {"content": "original"}


async def test_the_system_prompt_is_what_the_model_reads_first() -> None:
    # test_run_with_system_prompt
    fm = FauxModel(["sunny"])
    agent = faux_agent(fm, system_prompt="This is a system prompt.", tools=[weather_tool()])
    await agent.prompt("What is the weather in Berlin?")
    assert fm.contexts[0].system_prompt == "This is a system prompt."
    assert [type(m) for m in fm.contexts[0].messages] == [UserMessage]


async def test_a_prompt_of_no_messages_is_refused_before_any_call() -> None:
    # test_run_no_messages: haystack returns no messages; here it is one clear error
    fm = FauxModel(["never asked"])
    agent = faux_agent(fm)
    with pytest.raises(MessageInputError, match="at least one message"):
        await agent.prompt([])
    assert fm.call_count == 0 and agent.state.messages == []


async def test_a_runs_own_tools_are_offered_beside_the_agents() -> None:
    # test_run_with_tools_run_param: haystack's run tools replace the agent's; here they
    # are added for that run (docs/teams.md, "A run's own tools")
    fm = FauxModel([weather_call(), "sunny", "later"])
    agent = faux_agent(fm, tools=[search_tool()])
    await agent.prompt("Weather in Berlin?", tools=[weather_tool()])
    assert [t.name for t in fm.contexts[0].tools] == ["search", "weather_tool"]
    assert not results(agent)[0].is_error
    await agent.prompt("and then?")
    assert [t.name for t in fm.contexts[2].tools] == ["search"]


async def test_held_calls_rejected_or_approved_with_changed_arguments() -> None:
    # test_multiple_hooks_each_targeting_a_different_tool (human in the loop): foo is
    # rejected, bar and baz approved with the person's arguments. haystack's "modify" is a
    # before_tool_call that changes an approved call's arguments here (docs/approvals.md:
    # a decision is yes or no)
    ran: list[tuple[str, Any]] = []

    def echo(name: str) -> Any:
        def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            ran.append((name, args["x"]))
            return f'{{"echoed": {args["x"]}}}'

        schema = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        return AgentTool(name, name, f"Echo tool {name}.", schema, execute, requires_approval=True)

    changed = {"bar": 99, "baz": 77}

    def modify(ctx: Any, signal: Any) -> None:
        if ctx.approved and ctx.tool_call.name in changed:
            ctx.args["x"] = changed[ctx.tool_call.name]

    batch = faux_message(
        faux_tool_call("foo", {"x": 1}),
        faux_tool_call("bar", {"x": 2}),
        faux_tool_call("baz", {"x": 3}),
    )
    fm = FauxModel([batch, "done"])
    agent = faux_agent(fm, tools=[echo("foo"), echo("bar"), echo("baz")], before_tool_call=modify)
    reasons = ends_of(agent)
    await agent.prompt("go")
    assert reasons == ["awaiting_approval"] and ran == []
    foo, bar, baz = agent.pending_approvals
    agent.reject(foo.tool_call_id, "not foo")
    agent.approve(bar.tool_call_id)
    agent.approve(baz.tool_call_id)
    assert (await agent.resume()).text == "done"
    assert sorted(ran) == [("bar", 99), ("baz", 77)]
    sent = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    assert [(m.tool_name, m.is_error, text_of(m.content)) for m in sent] == [
        ("foo", True, "Tool call rejected by the user: not foo"),
        ("bar", False, '{"echoed": 99}'),
        ("baz", False, '{"echoed": 77}'),
    ]
