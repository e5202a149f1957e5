"""One agent's run as autogen-agentchat (test_assistant_agent.py's tool-loop, validation,
error-recovery and state cases; test_termination_condition.py), llama_index
(agent/workflow: test_return_direct_e2e.py, test_multi_agent_workflow.py) and agno
(tests/unit/agent/test_tool_error_events.py) check theirs, through `Agent` on the faux
provider. Ours differs by choice where llama_index asks the model again after an empty
answer (docs/agent.md, "Prompts (R-6.3)")."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentEndEvent,
    AgentTool,
    AgentToolResult,
    ConfigError,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolResultMessage,
    TurnContext,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import AgentEvent, AssistantMessage, Usage, UserMessage, text_of

PARAM: dict[str, Any] = {
    "type": "object",
    "properties": {"param": {"type": "string"}},
    "required": ["param"],
}


def agent_of(fm: FauxModel, *tools: Any, **kwargs: Any) -> tuple[Agent[Any], list[AgentEvent]]:
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=list(tools), **kwargs)
    events: list[AgentEvent] = []
    agent.subscribe(lambda e, s: events.append(e))
    return agent, events


def reasons(events: list[AgentEvent]) -> list[str]:
    return [e.reason for e in events if isinstance(e, AgentEndEvent)]


def results(agent: Agent[Any]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


def failing_tool(ran: list[str], *, parallel: bool) -> AgentTool:
    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        ran.append(args["param"])
        if args["param"] == "fail":
            raise ValueError("Tool failure")
        return f"Success: {args['param']}"

    return AgentTool("failing_tool", "failing_tool", "d", PARAM, execute, parallel=parallel)


async def test_max_turns_stops_an_endless_tool_loop_after_that_many_model_calls() -> None:
    # autogen test_tool_call_loop_max_iterations (15 replies queued, max 5)
    ran: list[str] = []
    replies = [
        faux_message(faux_tool_call("failing_tool", {"param": f"call_{i}"})) for i in range(15)
    ]
    fm = FauxModel(replies)
    agent, events = agent_of(fm, failing_tool(ran, parallel=False), max_turns=5)

    await agent.prompt("Test max iterations")

    assert fm.call_count == 5 and reasons(events) == ["max_turns"]
    assert ran == [f"call_{i}" for i in range(5)]
    assert [error for _, error, _ in results(agent)] == [False] * 5  # every call answered


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "3"])
def test_a_max_turns_that_allows_no_turn_is_refused_at_construction(bad: Any) -> None:
    # autogen test_tool_call_config_validation ("must be greater than or equal to 1, got 0")
    fm = FauxModel([])
    with pytest.raises(
        ConfigError, match=rf"max_turns must be a whole number >= 1 or None, not {bad!r}"
    ):
        Agent(model=fm.model, stream_fn=fm.stream_fn, max_turns=bad)


def test_two_tools_of_one_name_are_refused_and_one_tool_twice_is_one() -> None:
    # autogen test_tool_names_must_be_unique refuses [mock, duplicate, mock]; ours refuses
    # the duplicate (two different tools) and keeps a tool listed twice once
    @tool
    def mock_tool_function(param: str) -> str:
        """Mock."""
        return param

    def duplicate(param: str) -> str:
        return param

    other = tool(duplicate, name="mock_tool_function")
    fm = FauxModel([])
    with pytest.raises(ConfigError, match="two different tools named 'mock_tool_function'"):
        Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[mock_tool_function, other])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[mock_tool_function] * 2)
    assert [t.name for t in agent.state.tools] == ["mock_tool_function"]


@pytest.mark.parametrize("parallel", [True, False], ids=["parallel", "sequential"])
async def test_one_failing_call_among_three_leaves_the_others_and_their_order(
    parallel: bool,
) -> None:
    # autogen test_error_recovery_in_complex_workflow
    ran: list[str] = []
    fm = FauxModel(
        [
            faux_message(
                *(
                    faux_tool_call("failing_tool", {"param": p})
                    for p in ["success", "fail", "success2"]
                )
            ),
            "recovered",
        ]
    )
    agent, events = agent_of(fm, failing_tool(ran, parallel=parallel))

    reply = await agent.prompt("Test error recovery")

    assert text_of(reply.content) == "recovered" and reasons(events) == ["stop"]
    assert sorted(ran) == ["fail", "success", "success2"]
    assert results(agent) == [
        ("failing_tool", False, "Success: success"),
        ("failing_tool", True, "Tool failure"),
        ("failing_tool", False, "Success: success2"),
    ]
    # the model reads all three, in the order it asked
    assert [r for r in fm.contexts[1].messages if isinstance(r, ToolResultMessage)] == [
        m for m in agent.state.messages if isinstance(m, ToolResultMessage)
    ]


async def test_the_second_prompt_reads_the_first_exchange() -> None:
    # autogen test_state_persistence_across_interactions
    fm = FauxModel(["First response", "Second response, remembering context"])
    agent, _ = agent_of(fm, system_prompt="Remember previous conversations")

    first = await agent.prompt("First task")
    second = await agent.prompt("Second task, referring to first")

    assert text_of(first.content) == "First response"
    assert text_of(second.content) == "Second response, remembering context"
    seen = fm.contexts[1].messages
    assert [type(m).__name__ for m in seen] == ["UserMessage", "AssistantMessage", "UserMessage"]
    assert [text_of(m.content) for m in seen if isinstance(m, UserMessage)] == [
        "First task",
        "Second task, referring to first",
    ]
    assert fm.contexts[1].system_prompt == "Remember previous conversations"


async def test_a_terminating_tool_that_fails_lets_the_model_retry_then_ends_the_run() -> None:
    # llama_index test_return_direct_e2e: an error from a return_direct tool is not the
    # answer; the retried call's result is
    attempts: list[dict[str, Any]] = []

    def return_direct_tool(
        call_id: str, args: dict[str, Any], signal: Any, on_update: Any
    ) -> AgentToolResult:
        attempts.append(args)
        if not args.get("previously_failed"):
            raise RuntimeError("Tool Failed, run again with `previously_failed=True` to success")
        return AgentToolResult(content="Tool Run is Success", terminate=True)

    schema = {"type": "object", "properties": {"previously_failed": {"type": "boolean"}}}
    fm = FauxModel(
        [
            faux_message(faux_tool_call("return_direct_tool", {})),
            faux_message(faux_tool_call("return_direct_tool", {"previously_failed": True})),
            "never asked",
        ]
    )
    agent, events = agent_of(
        fm, AgentTool("return_direct_tool", "rd", "d", schema, return_direct_tool)
    )

    reply = await agent.prompt("Run the return_direct_tool(False)")

    assert reasons(events) == ["terminate"] and fm.call_count == 2
    assert [a.get("previously_failed", False) for a in attempts] == [False, True]
    assert results(agent) == [
        (
            "return_direct_tool",
            True,
            "Tool Failed, run again with `previously_failed=True` to success",
        ),
        ("return_direct_tool", False, "Tool Run is Success"),
    ]
    assert reply.stop_reason == "tool_use_terminated"
    assert text_of(reply.content).endswith("Tool Run is Success")


async def test_an_empty_answer_ends_the_run_as_it_is() -> None:
    # llama_index test_workflow_execution_empty asks again with "FAILURE: Your previous
    # response was empty"; ours returns it (docs/agent.md)
    fm = FauxModel(["", "never asked"])
    agent, events = agent_of(fm)

    reply = await agent.prompt("Can you add 5 and 3?")

    assert text_of(reply.content) == "" and reply.stop_reason == "stop"
    assert reasons(events) == ["stop"] and fm.call_count == 1


async def test_a_listener_asks_again_after_an_empty_answer() -> None:
    # the retry llama_index makes, written by the caller as docs/agent.md shows
    fm = FauxModel(["", "8"])
    agent, _ = agent_of(fm)

    def ask_again(event: AgentEvent, signal: Any) -> None:
        message = getattr(event, "message", None)
        empty = isinstance(message, AssistantMessage) and not (
            text_of(message.content) or message.tool_calls
        )
        if event.type == "message_end" and empty:
            agent.follow_up("FAILURE: Your previous response was empty.")

    agent.subscribe(ask_again)
    reply = await agent.prompt("Can you add 5 and 3?")

    assert text_of(reply.content) == "8" and fm.call_count == 2
    assert text_of(fm.contexts[1].messages[-1].content) == (
        "FAILURE: Your previous response was empty."
    )


async def test_a_failing_tool_has_an_end_event_carrying_the_error() -> None:
    # agno test_agent_yields_tool_call_error_event; crewAI's test_tool_error_does_not_emit
    # _finished_event differs: here every start has its end, the error on it
    ran: list[str] = []
    fm = FauxModel([faux_message(faux_tool_call("failing_tool", {"param": "fail"})), "ok"])
    agent, events = agent_of(fm, failing_tool(ran, parallel=False))

    await agent.prompt("go")

    tool_events = [
        e for e in events if isinstance(e, ToolExecutionStartEvent | ToolExecutionEndEvent)
    ]
    assert [type(e).__name__ for e in tool_events] == [
        "ToolExecutionStartEvent",
        "ToolExecutionEndEvent",
    ]
    start, end = tool_events
    assert start.tool_call_id == end.tool_call_id and start.args == {"param": "fail"}
    assert isinstance(end, ToolExecutionEndEvent) and end.is_error
    assert text_of(end.result.content) == "Tool failure"


async def test_a_stop_rule_on_a_tool_s_name_ends_the_run_after_that_turn() -> None:
    # autogen test_function_call_termination: the turn that ran "test_function" ends the
    # run, one that ran "another_function" does not
    def named(name: str) -> AgentTool:
        return AgentTool(name, name, "d", {"type": "object"}, lambda i, a, s, u: name)

    def ran_test_function(turn: TurnContext) -> bool:
        return any(r.tool_name == "test_function" for r in turn.tool_results)

    fm = FauxModel(
        [
            faux_message(faux_tool_call("another_function", {})),
            faux_message(faux_tool_call("test_function", {})),
            "never asked",
        ]
    )
    agent, events = agent_of(
        fm,
        named("another_function"),
        named("test_function"),
        should_stop_after_turn=ran_test_function,
    )

    await agent.prompt("Hello")

    assert reasons(events) == ["should_stop"] and fm.call_count == 2
    assert [name for name, _, _ in results(agent)] == ["another_function", "test_function"]


def reply_with_usage(message: AssistantMessage, prompt: int, completion: int) -> AssistantMessage:
    message.usage = Usage(input=prompt, output=completion, total_tokens=prompt + completion)
    return message


async def test_a_token_limit_is_reached_at_exactly_that_many_tokens() -> None:
    # autogen test_token_usage_termination: 5 + 5 tokens reach max_total_token=10
    fm = FauxModel(
        [
            reply_with_usage(faux_message(faux_tool_call("noop", {})), 5, 5),
            reply_with_usage(faux_message("never asked"), 1, 1),
        ]
    )
    noop = AgentTool("noop", "noop", "d", {"type": "object"}, lambda i, a, s, u: "done")
    agent, events = agent_of(fm, noop, usage_limits=UsageLimits(max_total_tokens=10))

    with pytest.raises(UsageLimitExceeded, match="max_total_tokens=10"):
        await agent.prompt("Hello")

    assert reasons(events) == ["usage_limit"] and fm.call_count == 1
    # the reply that reached it runs none of its calls, each answered with why
    assert results(agent) == [
        ("noop", True, "not executed: usage limit reached: max_total_tokens=10 (used 10 tokens)")
    ]


async def test_a_run_under_its_token_limit_goes_on() -> None:
    # autogen test_token_usage_termination: 1 + 1 and 1 + 1 stay under 10
    fm = FauxModel(
        [
            reply_with_usage(faux_message(faux_tool_call("noop", {})), 1, 1),
            reply_with_usage(faux_message("World"), 1, 1),
        ]
    )
    noop = AgentTool("noop", "noop", "d", {"type": "object"}, lambda i, a, s, u: "done")
    agent, events = agent_of(fm, noop, usage_limits=UsageLimits(max_total_tokens=10))

    reply = await agent.prompt("Hello")

    assert text_of(reply.content) == "World" and reasons(events) == ["stop"]
