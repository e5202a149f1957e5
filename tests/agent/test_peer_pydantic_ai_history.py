"""pydantic-ai's history-processor, tool-timeout and tool-call-limit cases
(tests/test_history_processor.py, test_tools.py, test_usage_limits.py) on the Agent.

A history processor is `transform_context(messages, signal)` (R-5.2): it shapes what each
model call is sent, the transcript keeps every message. Where yiemagent differs by choice:
one hook, not a list (compose them in it); a call over its time limit is an error result the
model reads, with no retry budget that ends the run (docs/tools.md); a tool-call cap lets
the calls up to the cap run and answers the rest (pydantic-ai refuses the whole batch that
would pass it; docs/observability.md)."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable
from typing import Any

import pytest

from yiemagent import (
    AgentRunError,
    AgentTool,
    AssistantMessage,
    ConfigError,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import faux_agent

SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def texts(messages: list[Any]) -> list[str]:
    return [f"{m.role}:{text_of(m.content)}" for m in messages]


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_a_plain_function_returning_a_coroutine_is_awaited() -> None:
    async def keep_last(messages: list[Any]) -> list[Any]:
        return messages[-1:]

    def processor(messages: list[Any], signal: Any) -> Awaitable[list[Any]]:
        return keep_last(messages)

    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm, transform_context=processor)
    await agent.prompt("first")
    await agent.prompt("second")

    assert [texts(c.messages) for c in fm.contexts] == [["user:first"], ["user:second"]]


async def test_a_callable_object_with_an_async_call_is_awaited() -> None:
    class DropAnswers:
        async def __call__(self, messages: list[Any], signal: Any) -> list[Any]:
            return [m for m in messages if not isinstance(m, AssistantMessage)]

    fm = FauxModel(["one", "two"])
    agent = faux_agent(fm, transform_context=DropAnswers())
    await agent.prompt("first")
    await agent.prompt("second")

    assert texts(fm.contexts[1].messages) == ["user:first", "user:second"]
    assert len(agent.state.messages) == 4


async def test_two_processors_composed_apply_in_order() -> None:
    def only_users(messages: list[Any]) -> list[Any]:
        return [m for m in messages if isinstance(m, UserMessage)]

    def last_two(messages: list[Any]) -> list[Any]:
        return messages[-2:]

    fm = FauxModel(["a", "b", "c"])
    agent = faux_agent(fm, transform_context=lambda ms, signal: last_two(only_users(ms)))
    for prompt in ("one", "two", "three"):
        await agent.prompt(prompt)

    assert texts(fm.contexts[2].messages) == ["user:two", "user:three"]


async def test_a_processor_runs_before_every_model_call_of_a_tool_loop() -> None:
    seen: list[list[str]] = []

    def keep_recent(messages: list[Any], signal: Any) -> list[Any]:
        seen.append([m.role for m in messages])
        # a truncation that keeps the question and the newest exchange
        return [messages[0], *messages[-2:]] if len(messages) > 3 else messages

    tool = AgentTool("probe", "probe", "probes", SCHEMA, lambda *a: "probed")
    calling = faux_message(faux_tool_call("probe", {}))
    fm = FauxModel([calling, calling, "done"])
    agent = faux_agent(fm, tools=[tool], transform_context=keep_recent)

    reply = await agent.prompt("go")

    assert reply.text == "done" and len(seen) == 3
    assert [len(c.messages) for c in fm.contexts] == [1, 3, 3]
    roles = [m.role for m in agent.state.messages]
    assert roles == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]


async def test_a_processor_that_reorders_messages_is_sent_as_it_returns_them() -> None:
    fm = FauxModel(["a", "b"])
    agent = faux_agent(fm, transform_context=lambda ms, signal: list(reversed(ms)))
    await agent.prompt("first")
    await agent.prompt("second")

    assert texts(fm.contexts[1].messages) == ["user:second", "assistant:a", "user:first"]
    assert texts(agent.state.messages) == [
        "user:first",
        "assistant:a",
        "user:second",
        "assistant:b",
    ]


async def test_a_processor_that_leaves_nothing_ends_the_run_with_a_clear_error() -> None:
    fm = FauxModel(["never"])
    agent = faux_agent(fm, transform_context=lambda ms, signal: [])

    with pytest.raises(AgentRunError, match="transform_context"):
        await agent.prompt("go")

    assert fm.call_count == 0
    assert texts(agent.state.messages)[0] == "user:go"  # the prompt is kept


async def test_a_tool_over_the_agents_time_limit_is_an_error_result_with_the_limit() -> None:
    async def slow(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(5)
        return "late"

    def slow_sync(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        deadline = time.monotonic() + 5
        while not signal.aborted and time.monotonic() < deadline:
            time.sleep(0.01)  # a plain function's thread is left to finish: it ends soon
        return "late"

    tools = [
        AgentTool("slow", "slow", "slow", SCHEMA, slow),
        AgentTool("slow_sync", "slow_sync", "slow", SCHEMA, slow_sync),
    ]
    fm = FauxModel(
        [faux_message(faux_tool_call("slow", {}), faux_tool_call("slow_sync", {})), "went on"]
    )
    agent = faux_agent(fm, tools=tools, tool_timeout_s=0.1)

    reply = await agent.prompt("go")

    assert reply.text == "went on"
    assert [(r.is_error, text_of(r.content)) for r in results_of(agent)] == [
        (True, "Tool slow timed out after 0.1 s"),
        (True, "Tool slow_sync timed out after 0.1 s"),
    ]


async def test_a_tools_own_time_limit_overrides_the_agents() -> None:
    async def takes_a_while(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        await asyncio.sleep(0.3)
        return "finished"

    tool = AgentTool("patient", "patient", "waits", SCHEMA, takes_a_while, timeout_s=10)
    fm = FauxModel([faux_message(faux_tool_call("patient", {})), "ok"])
    agent = faux_agent(fm, tools=[tool], tool_timeout_s=0.05)

    await agent.prompt("go")

    (result,) = results_of(agent)
    assert (result.is_error, text_of(result.content)) == (False, "finished")


@pytest.mark.parametrize("bad", [0, -1, float("nan")])
def test_a_time_limit_that_is_no_positive_number_is_refused(bad: float) -> None:
    with pytest.raises(ConfigError, match="timeout_s"):
        AgentTool("t", "t", "t", SCHEMA, lambda *a: "ok", timeout_s=bad)


async def test_a_tool_call_cap_runs_the_calls_up_to_it_and_answers_the_rest() -> None:
    ran: list[str] = []

    def named(name: str) -> AgentTool:
        async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            await asyncio.sleep(0.01)
            ran.append(name)
            return f"result {name}"

        return AgentTool(name, name, name, SCHEMA, execute, parallel=True)

    first = faux_message(*(faux_tool_call(n, {}) for n in "abcab"))
    second = faux_message(*(faux_tool_call(n, {}) for n in "cab"))
    fm = FauxModel([first, second, "never asked"])
    agent = faux_agent(
        fm, tools=[named(n) for n in "abc"], usage_limits=UsageLimits(max_tool_calls=6)
    )

    with pytest.raises(UsageLimitExceeded, match=r"max_tool_calls=6 \(used 6 tool calls\)"):
        await agent.prompt("use tools")

    assert len(ran) == 6 and fm.call_count == 2
    results = results_of(agent)
    assert len(results) == 8  # every call answered
    assert [r.is_error for r in results[5:]] == [False, True, True]


@pytest.mark.parametrize(
    ("limits", "model_calls", "said"),
    [
        (UsageLimits(max_tool_calls=0), 1, "max_tool_calls=0 (used 0 tool calls)"),
        (UsageLimits(max_total_tokens=0), 0, "max_total_tokens=0 (used 0 tokens)"),
        (UsageLimits(max_input_tokens=0), 0, "max_input_tokens=0 (used 0 input tokens)"),
    ],
)
async def test_an_explicit_zero_limit_is_a_limit_not_no_limit(
    limits: UsageLimits, model_calls: int, said: str
) -> None:
    ran: list[str] = []
    tool = AgentTool("t", "t", "t", SCHEMA, lambda *a: ran.append("t") or "ok")
    fm = FauxModel([faux_message(faux_tool_call("t", {})), "answer"])
    agent = faux_agent(fm, tools=[tool], usage_limits=limits)

    with pytest.raises(UsageLimitExceeded, match=re.escape(said)):
        await agent.prompt("go")

    assert fm.call_count == model_calls and ran == []
