"""openai-agents' run-step cases (tests/test_run_step_execution.py,
test_run_step_processing.py, test_cancel_streaming.py, test_run_error_details.py,
test_call_model_input_filter.py) on the Agent (R-4.1, R-4.9, R-5.4, R-6.3, R-6.5).

Where yiemagent differs by choice: a call of an unknown tool is an error result the model
reads (openai-agents raises `ModelBehaviorError`); a tool that raises, or returns a value
that is no result, is an error result for its call while its siblings run on
(openai-agents cancels the siblings and raises); `call_model_input_filter` is
`transform_context`, which changes what the model is sent and never the transcript."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from yiemagent import (
    AgentEndEvent,
    AgentRunError,
    AgentTool,
    AssistantMessage,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.ai.transform import transform_messages
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def counting_tool(name: str, log: list[Any], *, parallel: bool = True) -> AgentTool:
    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        log.append((name, args))
        return f"{name}:{args.get('n')}"

    return AgentTool(name, name, f"the {name} tool", SCHEMA, execute, parallel=parallel)


async def test_an_empty_response_is_the_final_answer() -> None:
    fm = FauxModel([faux_message()])
    agent = faux_agent(fm)

    reply = await agent.prompt("hi")

    assert reply.stop_reason == "stop" and reply.content == []
    assert fm.call_count == 1


async def test_text_beside_a_tool_call_is_not_final_the_model_is_called_again() -> None:
    log: list[Any] = []
    fm = FauxModel(
        [faux_message(faux_text("let me look"), faux_tool_call("probe", {"n": 1})), "done"]
    )
    agent = faux_agent(fm, tools=[counting_tool("probe", log)])

    reply = await agent.prompt("hi")

    assert reply.text == "done" and fm.call_count == 2 and log == [("probe", {"n": 1})]
    first = next(m for m in agent.state.messages if isinstance(m, AssistantMessage))
    assert first.text == "let me look"  # the text before the call stays in the transcript


async def test_arguments_holding_lists_and_objects_reach_the_tool_whole() -> None:
    seen: list[Any] = []

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        seen.append(args)
        return "ok"

    schema = {"type": "object", "properties": {"tags": {"type": "array"}, "meta": {}}}
    tool = AgentTool("tag", "tag", "tags", schema, execute)
    args = {"tags": ["a", {"b": [1, 2]}], "meta": {"k": {"x": None}}}
    fm = FauxModel([faux_message(faux_tool_call("tag", args)), "ok"])

    await faux_agent(fm, tools=[tool]).prompt("tag it")

    assert seen == [args]


async def test_every_call_starts_at_once_by_default() -> None:
    running = 0
    peak = 0
    release = asyncio.Event()

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if peak == 4:
            release.set()
        await asyncio.wait_for(release.wait(), 5)
        running -= 1
        return str(args["n"])

    tool = AgentTool("w", "w", "waits", SCHEMA, execute, parallel=True)
    fm = FauxModel([faux_message(*(faux_tool_call("w", {"n": i}) for i in range(4))), "ok"])
    agent = faux_agent(fm, tools=[tool])

    await agent.prompt("go")

    assert peak == 4
    assert [text_of(r.content) for r in results_of(agent)] == ["0", "1", "2", "3"]


async def test_a_concurrency_cap_limits_running_calls_and_keeps_the_results_in_order() -> None:
    running = 0
    peak = 0
    finished: list[int] = []

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05 * (4 - args["n"]))  # later calls finish first
        running -= 1
        finished.append(args["n"])
        return str(args["n"])

    tool = AgentTool("w", "w", "waits", SCHEMA, execute, parallel=True)
    fm = FauxModel([faux_message(*(faux_tool_call("w", {"n": i}) for i in range(4))), "ok"])
    agent = faux_agent(fm, tools=[tool], max_parallel_tools=2)

    await agent.prompt("go")

    assert peak == 2
    assert finished != [0, 1, 2, 3]  # they did not finish in source order ...
    assert [text_of(r.content) for r in results_of(agent)] == ["0", "1", "2", "3"]  # ... yet


async def test_a_failing_call_under_a_cap_leaves_the_queued_calls_to_run() -> None:
    ran: list[int] = []

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        if args["n"] == 0:
            raise RuntimeError("first one breaks")
        ran.append(args["n"])
        return "fine"

    tool = AgentTool("w", "w", "works", SCHEMA, execute, parallel=True)
    fm = FauxModel([faux_message(*(faux_tool_call("w", {"n": i}) for i in range(3))), "ok"])
    agent = faux_agent(fm, tools=[tool], max_parallel_tools=1)

    reply = await agent.prompt("go")

    assert reply.text == "ok" and sorted(ran) == [1, 2]
    results = results_of(agent)
    assert [r.is_error for r in results] == [True, False, False]
    assert "first one breaks" in text_of(results[0].content)


async def test_a_tool_returning_an_exception_object_is_an_error_for_that_call_only() -> None:
    def broken(call_id: str, args: Any, signal: Any, on_update: Any) -> Any:
        return ValueError("returned, not raised")

    tools = [AgentTool("bad", "bad", "bad", SCHEMA, broken), counting_tool("good", [])]
    fm = FauxModel(
        [
            faux_message(faux_tool_call("bad", {"n": 1}), faux_tool_call("good", {"n": 2})),
            "ok",
        ]
    )
    agent = faux_agent(fm, tools=tools)

    await agent.prompt("go")

    bad, good = results_of(agent)
    assert bad.is_error and "ValueError" in text_of(bad.content)
    assert not good.is_error and text_of(good.content) == "good:2"


async def test_an_unknown_tool_and_a_known_one_in_one_reply_are_both_answered() -> None:
    log: list[Any] = []
    fm = FauxModel(
        [
            faux_message(faux_tool_call("nope", {}), faux_tool_call("probe", {"n": 3})),
            "ok",
        ]
    )
    agent = faux_agent(fm, tools=[counting_tool("probe", log)])

    reply = await agent.prompt("go")

    assert reply.text == "ok" and log == [("probe", {"n": 3})]
    missing, found = results_of(agent)
    assert missing.is_error and 'Tool "nope" not found' in text_of(missing.content)
    assert "probe" in text_of(missing.content)  # the model learns what it may call
    assert not found.is_error


async def test_a_contextvar_a_tool_sets_reaches_its_after_tool_call_hook() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    seen: list[str] = []

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        marker.set(f"set by {call_id}")
        return "ok"

    def after(ctx: Any, signal: Any) -> None:
        seen.append(marker.get())

    tool = AgentTool("mark", "mark", "marks", SCHEMA, execute)
    fm = FauxModel([faux_message(faux_tool_call("mark", {}, id="c1")), "ok"])

    await faux_agent(fm, tools=[tool], after_tool_call=after).prompt("go")

    # a tool's context is its own: what it sets stays in it (asyncio copies the context
    # for each task), so the hook sees the run's value, as the caller would
    assert seen == ["unset"]


async def test_abort_twice_and_abort_while_idle_are_harmless() -> None:
    fm = FauxModel(["a slow answer in many chunks", "next"], delay_s=0.02, chunk_size=2)
    agent = faux_agent(fm)
    agent.abort()  # idle: nothing to abort, and the next run is not born aborted
    waiter = EventWaiter(agent)

    run = asyncio.ensure_future(agent.prompt("go"))
    await waiter.wait_for("message_update")
    agent.abort()
    agent.abort()
    reply = await run

    assert reply.stop_reason == "aborted"
    ends = [e for e in waiter.events if isinstance(e, AgentEndEvent)]
    assert [e.reason for e in ends] == ["aborted"]
    assert waiter.events[-1] is ends[0]  # nothing follows the end
    assert (await agent.prompt("again")).text == "next"


async def test_a_run_error_carries_the_messages_the_run_added() -> None:
    log: list[Any] = []
    fm = FauxModel([faux_message(faux_tool_call("probe", {"n": 1}))])  # then none left
    agent = faux_agent(fm, tools=[counting_tool("probe", log)])

    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("go")

    kinds = [type(m).__name__ for m in raised.value.new_messages]
    assert kinds == ["UserMessage", "AssistantMessage", "ToolResultMessage", "AssistantMessage"]
    assert raised.value.message.stop_reason == "error"
    assert "No more faux responses" in str(raised.value)
    assert log == [("probe", {"n": 1})]


async def test_a_model_input_filter_changes_what_is_sent_not_the_transcript() -> None:
    def only_last_user(messages: list[Any], signal: Any) -> list[Any]:
        return [m for m in messages if isinstance(m, UserMessage)][-1:]

    async def async_filter(messages: list[Any], signal: Any) -> list[Any]:
        await asyncio.sleep(0)
        return only_last_user(messages, signal)

    for transform in (only_last_user, async_filter):
        fm = FauxModel(["one", "two"])
        agent = faux_agent(fm, transform_context=transform)
        await agent.prompt("first")
        await agent.prompt("second")

        sent = [[text_of(m.content) for m in c.messages] for c in fm.contexts]
        assert sent == [["first"], ["second"]]
        assert len(agent.state.messages) == 4  # the whole conversation is kept


async def test_a_model_input_filter_returning_no_list_ends_the_run_with_a_clear_error() -> None:
    fm = FauxModel(["never"])
    agent = faux_agent(fm, transform_context=lambda messages, signal: "not a list")

    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("go")

    assert fm.call_count == 0
    assert "transform_context" in str(raised.value)


async def test_a_call_answered_twice_by_a_filter_is_sent_with_its_first_result() -> None:
    def add_a_second_answer(messages: list[Any], signal: Any) -> list[Any]:
        extra = [
            ToolResultMessage(m.tool_call_id, m.tool_name, [TextContent("second")])
            for m in messages
            if isinstance(m, ToolResultMessage)
        ]
        return [*messages, *extra]

    tool = AgentTool("probe", "probe", "probes", SCHEMA, lambda *a: "first")
    fm = FauxModel([faux_message(faux_tool_call("probe", {"n": 1})), "ok"])
    agent = faux_agent(fm, tools=[tool], transform_context=add_a_second_answer)

    await agent.prompt("go")

    sent = transform_messages(fm.contexts[1].messages, fm.model)
    assert [(m.role, text_of(m.content)) for m in sent[1:]] == [
        ("assistant", ""),
        ("toolResult", "first"),
    ]
    assert len(results_of(agent)) == 1  # the transcript never held the second
