"""openai-agents' tool guardrails (tests/test_tool_guardrails.py) on the Agent: a tool input
guardrail is `before_tool_call`, a tool output guardrail `after_tool_call` (R-4.4, R-4.6).

"allow" is returning `None`; "reject_content" is `BeforeToolCallResult(block=True,
reason=...)` before the call and `AfterToolCallResult(content=...)` after it; the model
reads the message and the run goes on. "raise_exception" has no twin by choice: a hook that
raises answers that call with the error text (R-4.1) and the run goes on; to end the run
the hook returns `terminate=True` with its verdict."""

from __future__ import annotations

import asyncio
import re
from typing import Any

from yiemagent import (
    AfterToolCallResult,
    AgentEndEvent,
    AgentTool,
    AgentToolResult,
    BeforeToolCallResult,
    TextContent,
    ToolResultMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}}
SSN = re.compile(r"\d{3}-\d{2}-\d{4}")


def echo(ran: list[str]) -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(args["text"])
        return f"stored {args['text']}"

    return AgentTool("store", "store", "stores a text", SCHEMA, execute)


def lookup() -> AgentTool:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "name: Ann, ssn: 123-45-6789"

    return AgentTool("lookup", "lookup", "finds a person", SCHEMA, execute)


def results_of(agent: Any) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


def no_passwords(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
    if "password" in ctx.args.get("text", ""):
        return BeforeToolCallResult(block=True, reason="Tool call blocked: contains a password")
    return None


async def async_no_passwords(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
    await asyncio.sleep(0)
    return no_passwords(ctx, signal)


def redact_ssn(ctx: Any, signal: Any) -> AfterToolCallResult | None:
    text = text_of(ctx.result.content)
    if SSN.search(text):
        return AfterToolCallResult(content=[TextContent("Output blocked: it held an SSN")])
    return None


async def async_redact_ssn(ctx: Any, signal: Any) -> AfterToolCallResult | None:
    await asyncio.sleep(0)
    return redact_ssn(ctx, signal)


async def test_an_input_guardrail_blocks_a_call_and_lets_a_clean_one_run() -> None:
    for hook in (no_passwords, async_no_passwords):
        ran: list[str] = []
        fm = FauxModel(
            [
                faux_message(
                    faux_tool_call("store", {"text": "my password is hunter2"}),
                    faux_tool_call("store", {"text": "hello"}),
                ),
                "ok",
            ]
        )
        agent = faux_agent(fm, tools=[echo(ran)], before_tool_call=hook)

        reply = await agent.prompt("store these")

        assert reply.text == "ok" and ran == ["hello"]
        blocked, clean = results_of(agent)
        assert blocked.is_error
        assert text_of(blocked.content) == "Tool call blocked: contains a password"
        assert not clean.is_error
        # the model read the verdict on its next call
        sent = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
        assert text_of(sent[0].content) == "Tool call blocked: contains a password"


async def test_an_output_guardrail_replaces_what_the_model_and_transcript_get() -> None:
    for hook in (redact_ssn, async_redact_ssn):
        fm = FauxModel([faux_message(faux_tool_call("lookup", {"text": "Ann"})), "ok"])
        agent = faux_agent(fm, tools=[lookup()], after_tool_call=hook)

        await agent.prompt("who is Ann?")

        (result,) = results_of(agent)
        assert text_of(result.content) == "Output blocked: it held an SSN"
        for context in fm.contexts:
            for message in context.messages:
                assert not SSN.search(text_of(getattr(message, "content", [])))


async def test_an_output_guardrail_may_mark_the_replaced_result_an_error() -> None:
    def reject(ctx: Any, signal: Any) -> AfterToolCallResult:
        return AfterToolCallResult(content=[TextContent("rejected")], is_error=True)

    fm = FauxModel([faux_message(faux_tool_call("lookup", {"text": "Ann"})), "ok"])
    agent = faux_agent(fm, tools=[lookup()], after_tool_call=reject)
    waiter = EventWaiter(agent)

    await agent.prompt("who is Ann?")

    (result,) = results_of(agent)
    assert result.is_error and text_of(result.content) == "rejected"
    (end,) = [e for e in waiter.events if e.type == "tool_execution_end"]
    assert end.is_error  # listeners see the guarded verdict, not the tool's raw one


async def test_a_raising_input_guardrail_answers_its_call_and_the_run_goes_on() -> None:
    ran: list[str] = []

    def broken(ctx: Any, signal: Any) -> None:
        raise ValueError("guardrail crashed")

    fm = FauxModel([faux_message(faux_tool_call("store", {"text": "x"})), "went on"])
    agent = faux_agent(fm, tools=[echo(ran)], before_tool_call=broken)

    reply = await agent.prompt("go")

    assert reply.text == "went on" and ran == []
    (result,) = results_of(agent)
    assert result.is_error and "guardrail crashed" in text_of(result.content)


async def test_a_raising_output_guardrail_answers_its_call_with_the_error() -> None:
    ran: list[str] = []

    def broken(ctx: Any, signal: Any) -> None:
        raise ValueError("output check crashed")

    fm = FauxModel([faux_message(faux_tool_call("store", {"text": "x"})), "went on"])
    agent = faux_agent(fm, tools=[echo(ran)], after_tool_call=broken)

    reply = await agent.prompt("go")

    assert reply.text == "went on" and ran == ["x"]  # the tool ran; its result is withheld
    (result,) = results_of(agent)
    assert result.is_error and "output check crashed" in text_of(result.content)
    assert "stored" not in text_of(result.content)


async def test_a_tripwire_on_the_second_turn_ends_the_run_and_keeps_the_first() -> None:
    ran: list[str] = []
    verdicts: list[str] = []

    def allow_then_stop(ctx: Any, signal: Any) -> BeforeToolCallResult | None:
        verdicts.append("allow" if not verdicts else "stop")
        if len(verdicts) == 2:
            return BeforeToolCallResult(block=True, reason="second turn refused", terminate=True)
        return None

    fm = FauxModel(
        [
            faux_message(faux_tool_call("store", {"text": "one"})),
            faux_message(faux_tool_call("store", {"text": "two"})),
            "never asked",
        ]
    )
    agent = faux_agent(fm, tools=[echo(ran)], before_tool_call=allow_then_stop)
    waiter = EventWaiter(agent)

    reply = await agent.prompt("go")

    assert ran == ["one"] and fm.call_count == 2
    assert reply.stop_reason == "tool_use_terminated"
    assert "second turn refused" in reply.text
    first, second = results_of(agent)
    assert (first.is_error, text_of(first.content)) == (False, "stored one")
    assert (second.is_error, text_of(second.content)) == (True, "second turn refused")
    ends = [e for e in waiter.events if isinstance(e, AgentEndEvent)]
    assert [e.reason for e in ends] == ["terminate"]


async def test_an_output_guardrail_sees_the_args_and_the_tools_own_details() -> None:
    seen: list[Any] = []

    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("ok")], details={"rows": 3})

    def after(ctx: Any, signal: Any) -> None:
        seen.append((ctx.tool_call.name, ctx.args, ctx.result.details, ctx.is_error))

    tool = AgentTool("query", "query", "queries", SCHEMA, execute)
    fm = FauxModel([faux_message(faux_tool_call("query", {"text": "q"})), "ok"])

    await faux_agent(fm, tools=[tool], after_tool_call=after).prompt("go")

    assert seen == [("query", {"text": "q"}, {"rows": 3}, False)]
