"""What counts against `UsageLimits` (DESIGN §13), the cases other frameworks' suites check:
a reply whose own tokens pass a limit runs none of its tool calls (each is still answered),
only calls that ran count as tool calls (an unknown tool's error result does not), and the
output tool is the run's answer, never a tool call the cap refuses."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import (
    Agent,
    AgentEndEvent,
    AgentTool,
    BeforeToolCallResult,
    ToolResultMessage,
    UsageLimits,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import OutputSpec

from .test_usage_limits import SPENT, assert_stopped_by_limit, run, spending_tool


async def test_a_reply_over_the_token_limit_runs_none_of_its_calls() -> None:
    ran: list[int] = []
    reply = faux_message(faux_tool_call("spend", {"n": 0}), faux_tool_call("spend", {"n": 1}))
    reply.usage = SPENT  # 900 tokens in this one reply
    fm = FauxModel([reply, "never asked"])

    events, context = await run(fm, [spending_tool(ran)], UsageLimits(max_total_tokens=800))

    assert ran == [] and fm.call_count == 1
    assert_stopped_by_limit(events, context, "max_total_tokens=800 (used 900")
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    assert len(results) == 2 and all(r.is_error for r in results)


async def test_calls_of_unknown_tools_do_not_count_as_tool_calls() -> None:
    ran: list[int] = []
    fm = FauxModel(
        [
            faux_message(faux_tool_call("nope", {})),
            faux_message(faux_tool_call("nope", {})),
            faux_message(faux_tool_call("spend", {"n": 1})),
            "the answer",
        ]
    )

    events, _ = await run(fm, [spending_tool(ran)], UsageLimits(max_tool_calls=1))

    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "stop"
    assert ran == [1] and fm.call_count == 4


@pytest.mark.parametrize("never_ran", ["invalid arguments", "blocked by before_tool_call"])
async def test_calls_that_never_ran_do_not_count_as_tool_calls(never_ran: str) -> None:
    # pydantic-ai counts only calls that ran; a call the model must correct, or a hook
    # refused, leaves the budget to the corrected call
    ran: list[int] = []
    first = {"n": "one"} if never_ran == "invalid arguments" else {"n": 0}

    def block_zero(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        return BeforeToolCallResult(block=True) if ctx.args["n"] == 0 else None

    fm = FauxModel(
        [
            faux_message(faux_tool_call("spend", first)),
            faux_message(faux_tool_call("spend", {"n": 1})),
            "the answer",
        ]
    )

    events, _ = await run(
        fm, [spending_tool(ran)], UsageLimits(max_tool_calls=1), before_tool_call=block_zero
    )

    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "stop"
    assert ran == [1] and fm.call_count == 3


async def test_a_call_that_ran_and_raised_counts_as_a_tool_call() -> None:
    # It ran (its side effects happened): unlike pydantic-ai's ModelRetry, it is spent.
    ran: list[int] = []

    def flaky(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(args["n"])
        if len(ran) == 1:
            raise RuntimeError("temporary failure, please retry")
        return "ok"

    tool = AgentTool("spend", "spend", "spends", {"type": "object"}, flaky)
    calling = faux_message(faux_tool_call("spend", {"n": 1}))
    fm = FauxModel([calling, calling, "never asked"])

    events, context = await run(fm, [tool], UsageLimits(max_tool_calls=1))

    assert ran == [1] and fm.call_count == 2
    assert_stopped_by_limit(events, context, "max_tool_calls=1 (used 1 tool calls)")


class Answer(BaseModel):
    result: str


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_the_output_tool_is_an_answer_not_a_tool_call(mode: str) -> None:
    # a run that spent its last tool call may still answer, whichever way the answer comes
    ran: list[int] = []
    final: Any = (
        faux_message(faux_tool_call("final_result", {"result": "success"}))
        if mode == "tool"
        else faux_message(faux_text('{"result": "success"}'))
    )
    fm = FauxModel([faux_message(faux_tool_call("spend", {"n": 1})), final])
    agent = Agent(
        "sys",
        fm.model,
        stream_fn=fm.stream_fn,
        tools=[spending_tool(ran)],
        usage_limits=UsageLimits(max_tool_calls=1),
        output_type=OutputSpec(Answer, mode=mode),
    )

    reply = await agent.prompt("test")

    assert reply.output == Answer(result="success") and ran == [1]


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_an_answer_over_the_token_limit_stands_whichever_way_it_comes(mode: str) -> None:
    # the limits are checked before a model call and after tools ran: an answer, text or
    # output tool, ends the run as it came, and never turns into a usage-limit error
    final = (
        faux_message(faux_tool_call("final_result", {"result": "success"}))
        if mode == "tool"
        else faux_message(faux_text('{"result": "success"}'))
    )
    final.usage = SPENT
    fm = FauxModel([final])
    agent = Agent(
        "sys",
        fm.model,
        stream_fn=fm.stream_fn,
        usage_limits=UsageLimits(max_total_tokens=800),
        output_type=OutputSpec(Answer, mode=mode),
    )

    reply = await agent.prompt("test")

    assert reply.output == Answer(result="success") and fm.call_count == 1
