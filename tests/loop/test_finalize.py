"""DESIGN R-4.6 (after_tool_call), R-4.7 (error results), R-4.10 (should_terminate),
R-4.11 (create_tool_result_message); seed 000 §8.3, §10, §11, §12."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.loop._kit import call, make_tool, run_batch, texts
from yiemagent import (
    AbortSignal,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentToolResult,
    FinalizedOutcome,
    TextContent,
    Usage,
    create_error_tool_result,
    create_tool_result_message,
    should_terminate,
)


async def test_r4_6_after_hook_replaces_only_the_fields_it_sets() -> None:
    usage = Usage(input=3)
    original = AgentToolResult(
        [TextContent("secret=42")], details={"raw": 1}, added_tool_names=["n"]
    )
    contexts: list[AfterToolCallContext] = []

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return original

    async def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult:
        contexts.append(ctx)
        return AfterToolCallResult(content=[TextContent("secret=***")], usage=usage)

    batch, rec, msg = await run_batch(
        [make_tool("t", execute)], call("t", {"a": 1}), after_tool_call=after
    )
    result = batch.messages[0]
    assert result.content == [TextContent("secret=***")]
    assert result.details == {"raw": 1} and result.usage is usage
    assert result.added_tool_names == ["n"] and not result.is_error
    assert original.content == [TextContent("secret=42")]  # the tool's object is untouched
    ctx = contexts[0]
    assert ctx.result is original and not ctx.is_error and ctx.args == {"a": 1}
    assert ctx.assistant_message is msg and ctx.tool_call is msg.tool_calls[0]
    assert rec.of("tool_execution_end")[0].result.content == [TextContent("secret=***")]


async def test_r4_6_after_hook_can_flip_is_error_and_terminate() -> None:
    async def fails(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise ValueError("flaky")

    def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult | None:
        if ctx.is_error:
            return AfterToolCallResult(
                content=[TextContent("recovered")], is_error=False, terminate=True
            )
        return AfterToolCallResult(is_error=True, details={"why": "policy"})

    batch, _, _ = await run_batch([make_tool("f", fails)], call("f"), after_tool_call=after)
    assert texts(batch) == ["recovered"] and not batch.messages[0].is_error
    assert batch.terminate
    batch, _, _ = await run_batch([make_tool("ok")], call("ok"), after_tool_call=after)
    assert batch.messages[0].is_error and batch.messages[0].details == {"why": "policy"}
    assert texts(batch) == ["ok ok"]


async def test_r4_6_after_hook_raising_gives_an_error_result_with_its_text() -> None:
    def after(ctx: AfterToolCallContext, signal: AbortSignal) -> None:
        raise RuntimeError("hook broke")

    batch, rec, _ = await run_batch([make_tool("t")], call("t"), after_tool_call=after)
    assert texts(batch) == ["hook broke"] and batch.messages[0].is_error
    assert rec.of("tool_execution_end")[0].is_error


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (5, "content=5 (int)"),
        (b"ok", "content=b'ok' (bytes)"),
        (TextContent("ok"), "content=TextContent(text='ok', type='text') (TextContent)"),
        ([TextContent("ok"), {"type": "text"}], "content holding {'type': 'text'} (dict)"),
    ],
)
async def test_r4_6_after_hook_content_of_another_type_is_named_in_the_error(
    content: Any, said: str
) -> None:
    # content=5 became the error result "'int' object is not iterable", and b"ok" the
    # content [111, 107]: the text must say which hook returned what, and what it takes.
    def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult:
        return AfterToolCallResult(content=content)

    batch, _, _ = await run_batch([make_tool("t")], call("t"), after_tool_call=after)
    assert batch.messages[0].is_error
    assert texts(batch) == [
        f"after_tool_call returned AfterToolCallResult with {said}; content is a str or a "
        "list of TextContent, ImageContent and str"
    ]


async def test_r4_6_after_hook_content_as_a_tuple_of_texts_is_taken() -> None:
    def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult:
        return AfterToolCallResult(content=("one", TextContent("two")))  # type: ignore[arg-type]

    batch, _, _ = await run_batch([make_tool("t")], call("t"), after_tool_call=after)
    assert not batch.messages[0].is_error and texts(batch) == ["onetwo"]


async def test_r4_6_a_raising_after_hook_keeps_what_the_call_spent() -> None:
    """The tool's usage (a sub-agent's tokens) stays on the error result: the run's usage
    totals and limits must still count what the call spent."""
    spent = Usage(input=700, output=20)

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("done")], usage=spent)

    def after(ctx: AfterToolCallContext, signal: AbortSignal) -> None:
        raise RuntimeError("hook broke")

    batch, _, _ = await run_batch([make_tool("t", execute)], call("t"), after_tool_call=after)
    [message] = batch.messages
    assert message.is_error and texts(batch) == ["hook broke"]
    assert message.usage == spent


async def test_r4_6_after_hook_is_not_called_for_immediate_outcomes() -> None:
    calls: list[str] = []
    batch, _, _ = await run_batch(
        [make_tool("t")], call("missing"), after_tool_call=lambda ctx, s: calls.append("x")
    )
    assert calls == [] and batch.messages[0].is_error


async def test_r4_7_error_results_are_one_text_block_and_never_empty() -> None:
    result = create_error_tool_result("boom")
    assert result.content == [TextContent("boom")] and result.details == {}
    assert create_error_tool_result("").content == [TextContent("Tool call failed")]

    def after(ctx: AfterToolCallContext, signal: AbortSignal) -> AfterToolCallResult:
        return AfterToolCallResult(content=[], is_error=True)

    batch, _, _ = await run_batch([make_tool("t")], call("t"), after_tool_call=after)
    assert texts(batch) == ["Tool t failed"]


def test_r4_10_should_terminate_only_when_all_results_ask() -> None:
    tc = call("t")

    def outcome(terminate: bool) -> FinalizedOutcome:
        return FinalizedOutcome(tc, AgentToolResult([TextContent("x")], terminate=terminate), False)

    assert not should_terminate([])
    assert should_terminate([outcome(True)])
    assert should_terminate([outcome(True), outcome(True)])
    assert not should_terminate([outcome(True), outcome(False)])


async def test_r4_10_batch_terminate_needs_every_call() -> None:
    async def done(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        return AgentToolResult([TextContent("submitted")], terminate=True)

    tools = [make_tool("submit", done), make_tool("other")]
    both, _, _ = await run_batch(tools, call("submit", id="1"), call("submit", id="2"))
    assert both.terminate
    mixed, _, _ = await run_batch(tools, call("submit"), call("other"))
    assert not mixed.terminate


def test_r4_11_create_tool_result_message_copies_every_field() -> None:
    usage = Usage(output=2)
    tc = call("t", id="c1")
    result = AgentToolResult(
        [TextContent("hi")], details={"d": 1}, usage=usage, added_tool_names=["new"]
    )
    before = time.time_ns() // 1_000_000
    msg = create_tool_result_message(FinalizedOutcome(tc, result, True))
    assert msg.role == "toolResult"
    assert (msg.tool_call_id, msg.tool_name) == ("c1", "t")
    assert msg.content == [TextContent("hi")] and msg.details == {"d": 1}
    assert msg.usage is usage and msg.added_tool_names == ["new"] and msg.is_error
    assert before <= msg.timestamp <= time.time_ns() // 1_000_000
    none_content = AgentToolResult(None, {})  # type: ignore[arg-type]
    assert create_tool_result_message(FinalizedOutcome(tc, none_content, False)).content == []
