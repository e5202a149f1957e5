"""What counts against `UsageLimits` (DESIGN §13), the cases other frameworks' suites check:
a reply whose own tokens pass a limit runs none of its tool calls (each is still answered),
and only calls that ran count as tool calls (an unknown tool's error result does not)."""

from __future__ import annotations

from yiemagent import AgentEndEvent, ToolResultMessage, UsageLimits
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

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
