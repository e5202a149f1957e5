"""The cases langchain-ai/langgraph checks of its prebuilt agent (libs/prebuilt/tests:
test_tool_node.py, test_tool_node_validation_error_filtering.py, test_on_tool_call.py,
test_react_agent.py), on our Agent: each call of a batch answered by id in call order,
what a tool returns as the model reads it, invalid arguments and raising tools fed back,
one tool's error text rewritten, the parameters the framework fills in kept out of a
validation error, a hook changing one call of a batch or raising, parallel calls that
really overlap, a call that waits for a person next to one that does not, a tool that
ends the run with its result, and progress a tool writes (test_tool_node_stream_writer).

Where ours differs by choice: a tool's exception is always an error result the model
reads (langgraph's `handle_tool_errors=False` re-raises it to the caller; here no tool
problem raises, R-4.1, docs/tools.md "When a call fails"); a call that needs a person is
held by `requires_approval` before it runs (langgraph's `interrupt()` inside the tool
reruns the tool from its start on resume); and a batch ends the run only when every
result asks to (langgraph's `return_direct` on one tool of the batch ends it, R-4.10)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from yiemagent import (
    AfterToolCallResult,
    Agent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def results(agent: Agent[Any]) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def answered(agent: Agent[Any]) -> list[tuple[str, bool, str]]:
    """(call id, is_error, text) of each tool result, in transcript order."""
    return [(m.tool_call_id, m.is_error, text_of(m.content)) for m in results(agent)]


def tool1(some_val: int, some_other_val: str) -> str:
    """Tool 1 docstring."""
    if some_val == 0:
        raise ValueError("Test error")
    return f"{some_val} - {some_other_val}"


async def tool2(some_val: int, some_other_val: str) -> str:
    """Tool 2 docstring."""
    if some_val == 0:
        raise LookupError("Test error")
    return f"tool2: {some_val} - {some_other_val}"


def one_call(name: str, args: dict[str, Any], id: str) -> Any:
    return faux_tool_call(name, args, id=id)


async def test_two_calls_of_one_tool_are_answered_by_id_in_call_order() -> None:
    calls = [
        one_call("tool1", {"some_val": 1, "some_other_val": "foo"}, "some 0"),
        one_call("tool1", {"some_val": 2, "some_other_val": "bar"}, "some 1"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[tool1])
    await agent.prompt("hi?")
    assert answered(agent) == [("some 0", False, "1 - foo"), ("some 1", False, "2 - bar")]
    assert [m.tool_name for m in results(agent)] == ["tool1", "tool1"]


async def test_a_list_of_dicts_a_tool_returns_reaches_the_model_as_its_json() -> None:
    async def tool3(some_val: int, some_other_val: str) -> list[dict[str, Any]]:
        """Tool 3 docstring."""
        return [{"key_1": some_val, "key_2": "foo"}, {"key_1": some_other_val, "key_2": "baz"}]

    fm = FauxModel(
        [
            faux_message(one_call("tool3", {"some_val": 2, "some_other_val": "bar"}, "some 2")),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[tool3])
    await agent.prompt("hi?")
    ((call_id, is_error, text),) = answered(agent)
    assert (call_id, is_error) == ("some 2", False)
    assert json.loads(text) == [{"key_1": 2, "key_2": "foo"}, {"key_1": "bar", "key_2": "baz"}]
    sent = fm.contexts[1].messages[-1]
    assert isinstance(sent, ToolResultMessage) and text_of(sent.content) == text


async def test_text_in_any_script_a_tool_returns_is_sent_unescaped() -> None:
    def get_day_list(days: list[str]) -> list[str]:
        """choose days"""
        return days

    data = ["星期一", "水曜日", "목요일", "Friday"]
    fm = FauxModel([faux_message(one_call("get_day_list", {"days": data}, "test_id")), "done"])
    agent = faux_agent(fm, tools=[get_day_list])
    await agent.prompt("which days?")
    ((_, is_error, text),) = answered(agent)
    assert not is_error
    assert json.loads(text) == data
    assert "星期一" in text and "\\u" not in text  # as json.dumps(ensure_ascii=False) writes it


async def test_an_unknown_tool_beside_a_known_one_is_answered_and_the_known_one_runs() -> None:
    calls = [
        one_call("tool1", {"some_val": 1, "some_other_val": "foo"}, "some 0"),
        one_call("tool2", {"some_val": 1, "some_other_val": "foo"}, "some 1"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[tool1])
    reply = await agent.prompt("hi?")
    assert answered(agent) == [
        ("some 0", False, "1 - foo"),
        ("some 1", True, 'Tool "tool2" not found. Available tools: tool1'),
    ]
    assert reply.text == "done"


async def test_invalid_arguments_name_the_tool_each_missing_field_and_what_was_received() -> None:
    fm = FauxModel(
        [faux_message(one_call("tool1", {"invalid": 0, "args": "foo"}, "some id")), "done"]
    )
    agent = faux_agent(fm, tools=[tool1])
    await agent.prompt("hi?")
    ((call_id, is_error, text),) = answered(agent)
    assert call_id == "some id" and is_error
    assert text.startswith('Invalid arguments for tool "tool1":')
    assert "'some_val' is a required property" in text
    assert "'some_other_val' is a required property" in text
    assert 'Received: {"invalid": 0, "args": "foo"}' in text


async def test_every_failing_call_of_a_batch_is_its_own_error_paired_by_id() -> None:
    async def tool3(some_val: int, some_other_val: str) -> str:
        """Tool 3 docstring."""
        return "never run"

    calls = [
        one_call("tool1", {"some_val": 0, "some_other_val": "foo"}, "some id"),
        one_call("tool2", {"some_val": 0, "some_other_val": "bar"}, "some other id"),
        one_call("tool3", {"some_val": 0}, "another id"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[tool1, tool2, tool3])
    reply = await agent.prompt("hi?")

    got = answered(agent)
    assert [(i, e) for i, e, _ in got] == [
        ("some id", True),
        ("some other id", True),
        ("another id", True),
    ]
    assert got[0][2] == got[1][2] == "Test error"
    assert "'some_other_val' is a required property" in got[2][2]
    assert reply.text == "done"  # the errors went to the model, which answered


async def test_an_after_hook_rewrites_the_error_text_of_one_tool_only() -> None:
    def tool5(some_val: int) -> str:
        """Tool 5 docstring."""
        raise RuntimeError("Test error")

    def handle_tool5_errors(ctx: Any, signal: Any) -> AfterToolCallResult | None:
        if ctx.tool_call.name == "tool5" and ctx.is_error:
            return AfterToolCallResult(content=[TextContent("foo")])
        return None

    calls = [
        one_call("tool5", {"some_val": 0}, "some 0"),
        one_call("tool1", {"some_val": 0, "some_other_val": "x"}, "some 1"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[tool5, tool1], after_tool_call=handle_tool5_errors)
    await agent.prompt("hi?")
    assert answered(agent) == [("some 0", True, "foo"), ("some 1", True, "Test error")]


async def test_parameters_the_framework_fills_in_are_kept_out_of_a_validation_error() -> None:
    def my_tool(value1: int, value2: str, tool_call_id: str, signal: Any, on_update: Any) -> str:
        """Tool with both model and injected arguments.

        Args:
            value1: First value.
            value2: Second value.
        """
        return f"value1={value1}, value2={value2}"

    fm = FauxModel(
        [
            faux_message(one_call("my_tool", {"value1": "not_an_int", "value2": 456}, "call_1")),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[my_tool])
    await agent.prompt("hi?")
    ((_, is_error, text),) = answered(agent)
    assert is_error
    assert "$.value1: 'not_an_int' is not of type 'integer'" in text
    assert "$.value2: 456 is not of type 'string'" in text
    for injected in ("tool_call_id", "signal", "on_update"):
        assert injected not in text
    offered = fm.contexts[0].tools[0].input_schema
    assert set(offered["properties"]) == {"value1", "value2"}


async def test_a_before_hook_changes_the_arguments_of_one_call_of_a_batch() -> None:
    def double_the_second(ctx: Any, signal: Any) -> None:
        if ctx.tool_call.id == "b":
            ctx.args["some_val"] *= 2

    calls = [
        one_call("tool1", {"some_val": 1, "some_other_val": "x"}, "a"),
        one_call("tool1", {"some_val": 5, "some_other_val": "y"}, "b"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[tool1], before_tool_call=double_the_second)
    await agent.prompt("hi?")
    assert answered(agent) == [("a", False, "1 - x"), ("b", False, "10 - y")]
    call = next(m for m in agent.state.messages if isinstance(m, AssistantMessage)).tool_calls[1]
    assert call.arguments == {"some_val": 5, "some_other_val": "y"}  # the model's, as sent


async def test_a_before_hook_that_raises_is_that_calls_error_and_the_tool_never_runs() -> None:
    ran: list[int] = []

    def counted(some_val: int) -> str:
        """Counts its runs."""
        ran.append(some_val)
        return "ran"

    def refuse_big(ctx: Any, signal: Any) -> None:
        if ctx.args["some_val"] > 10:
            raise PermissionError("some_val too big for this handler")

    calls = [one_call("counted", {"some_val": 1}, "a"), one_call("counted", {"some_val": 99}, "b")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[counted], before_tool_call=refuse_big)
    reply = await agent.prompt("hi?")
    assert ran == [1]
    assert answered(agent) == [
        ("a", False, "ran"),
        ("b", True, "some_val too big for this handler"),
    ]
    assert reply.text == "done"


async def test_the_calls_of_one_message_run_at_the_same_time() -> None:
    both_started = asyncio.Barrier(2)

    @tool(parallel=True)
    async def get_weather(location: str) -> str:
        """Use this tool to get the weather."""
        await asyncio.wait_for(both_started.wait(), timeout=10)  # only if the other one runs
        return f"It's sunny in {location}!"

    calls = [one_call("get_weather", {"location": c}, c) for c in ("sf", "nyc")]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[get_weather])
    await agent.prompt("weather in sf and nyc")
    assert answered(agent) == [
        ("sf", False, "It's sunny in sf!"),
        ("nyc", False, "It's sunny in nyc!"),
    ]


async def test_a_call_waiting_for_a_person_holds_the_run_and_its_neighbour_runs_once() -> None:
    counts = {"get_weather": 0, "human_assistance": 0}

    def get_weather(location: str) -> str:
        """Use this tool to get the weather."""
        counts["get_weather"] += 1
        return "It's sunny!"

    @tool(requires_approval=True)
    def human_assistance(query: str) -> str:
        """Request assistance from a human."""
        counts["human_assistance"] += 1
        return "Hello"

    calls = [
        one_call("get_weather", {"location": "sf"}, "1"),
        one_call("human_assistance", {"query": "request help"}, "2"),
    ]
    fm = FauxModel([faux_message(*calls), "all done"])
    agent = faux_agent(fm, tools=[human_assistance, get_weather])
    await agent.prompt("Get user assistance and also check the weather")

    assert [p.tool_call_id for p in agent.pending_approvals] == ["2"]
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]
    assert counts == {"get_weather": 1, "human_assistance": 0}

    agent.approve("2")
    reply = await agent.resume()
    assert reply.text == "all done"
    assert counts == {"get_weather": 1, "human_assistance": 1}
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    assert sorted(m.tool_call_id for m in results(agent)) == ["1", "2"]


def direct(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> Any:
    return AgentToolResult(content=f"Direct result: {args['input']}", terminate=True)


async def test_a_tool_ending_the_run_returns_its_result_without_another_model_call() -> None:
    schema = {"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]}
    tool_direct = AgentTool("tool_return_direct", "Direct", "returns directly", schema, direct)

    def tool_normal(input: str) -> str:
        """A normal tool."""
        return f"Normal result: {input}"

    fm = FauxModel(
        [faux_message(one_call("tool_return_direct", {"input": "Test direct"}, "1")), "never"]
    )
    agent = faux_agent(fm, tools=[tool_direct, tool_normal])
    reply = await agent.prompt("Test direct")
    assert fm.call_count == 1
    assert "Direct result: Test direct" in reply.text
    assert [m.role for m in agent.state.messages] == ["user", "assistant", "toolResult"]

    both = [
        one_call("tool_return_direct", {"input": "Test both direct"}, "3"),
        one_call("tool_normal", {"input": "Test both normal"}, "4"),
    ]
    fm = FauxModel([faux_message(*both), "answered"])
    agent = faux_agent(fm, tools=[tool_direct, tool_normal])
    reply = await agent.prompt("Test both")
    assert fm.call_count == 2 and reply.text == "answered"  # not every result ended the run


async def test_progress_a_tool_writes_reaches_listeners_in_order_before_its_result() -> None:
    late = threading.Event()

    def streaming_tool(n: int, on_update: Any) -> str:
        """Writes progress as it works."""
        for i in range(n):
            on_update(f"custom {i}")

        def after_return() -> None:
            time.sleep(0.05)
            on_update("too late")
            late.set()

        threading.Thread(target=after_return).start()
        return "done"

    fm = FauxModel([faux_message(one_call("streaming_tool", {"n": 200}, "w")), "ok"])
    agent = faux_agent(fm, tools=[streaming_tool])
    seen: list[str] = []

    def record(event: Any) -> None:
        if event.type == "tool_execution_update":
            seen.append(text_of(event.partial_result.content))
        elif event.type == "tool_execution_end":
            seen.append("end")

    agent.subscribe(record)
    await agent.prompt("go")
    assert await asyncio.to_thread(late.wait, 10)
    assert seen == [f"custom {i}" for i in range(200)] + ["end"]
