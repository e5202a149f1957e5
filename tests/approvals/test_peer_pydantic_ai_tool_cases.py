"""pydantic-ai's approval cases from tests/test_tools.py (test_unapproved_tool_invalid_args_
retry, test_parallel_tool_return_with_deferred) on the Agent (docs/approvals.md): a call
of a tool that needs approval whose arguments are invalid is answered with the validation
error at once, never held (there is nothing valid to approve); `requires_approval` sees the
arguments as validated; a call held beside calls that ran is answered once approved, its
result after theirs."""

from __future__ import annotations

from typing import Any

from yiemagent import Agent, AgentTool, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import transcript_problems

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"amount": {"type": "integer"}},
    "required": ["amount"],
}


def pay_tool(ran: list[Any], asked: list[Any], **options: Any) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(args["amount"])
        return f"paid {args['amount']}"

    def needs(args: Any) -> bool:
        asked.append(args)
        return bool(args["amount"] > 100)

    options.setdefault("requires_approval", needs)
    return AgentTool("pay", "pay", "pays", SCHEMA, execute, parallel=True, **options)


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


async def test_invalid_arguments_are_answered_at_once_not_held() -> None:
    ran: list[Any] = []
    asked: list[Any] = []
    fm = FauxModel(
        [
            faux_message(faux_tool_call("pay", {"amount": "lots"})),
            faux_message(faux_tool_call("pay", {"amount": 5})),
            "paid",
        ]
    )
    agent = Agent(
        model=fm.model, stream_fn=fm.stream_fn, tools=[pay_tool(ran, asked, requires_approval=True)]
    )

    await agent.prompt("pay")

    # the invalid call went back to the model at once; only the valid one waits
    (invalid,) = results_of(agent)
    assert invalid.is_error and "'lots' is not of type 'integer'" in text_of(invalid.content)
    assert fm.call_count == 2 and ran == []
    assert [p.arguments for p in agent.pending_approvals] == [{"amount": 5}]


async def test_requires_approval_sees_the_validated_arguments() -> None:
    ran: list[Any] = []
    asked: list[Any] = []
    fm = FauxModel([faux_message(faux_tool_call("pay", {"amount": "7"})), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[pay_tool(ran, asked)])

    assert (await agent.prompt("pay")).text == "ok"

    assert asked == [{"amount": 7}] and ran == [7]


async def test_a_held_call_beside_calls_that_ran_is_answered_once_approved() -> None:
    ran: list[Any] = []
    asked: list[Any] = []
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("pay", {"amount": 1}, id="a"),
                faux_tool_call("pay", {"amount": 500}, id="b"),
                faux_tool_call("pay", {"amount": 2}, id="c"),
            ),
            "all done",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[pay_tool(ran, asked)])

    await agent.prompt("pay three")
    assert ran == [1, 2] and [p.tool_call_id for p in agent.pending_approvals] == ["b"]
    agent.approve("b")
    reply = await agent.resume()

    assert reply.text == "all done" and ran == [1, 2, 500]
    # in the order produced (docs/approvals.md); providers get them in call order
    assert [r.tool_call_id for r in results_of(agent)] == ["a", "c", "b"]
    assert [text_of(r.content) for r in results_of(agent)] == ["paid 1", "paid 2", "paid 500"]
    assert transcript_problems(agent.state.messages) == []
