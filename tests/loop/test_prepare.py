"""DESIGN R-4.4: prepare — lookup, prepare_arguments, schema validation, validate_arguments,
before_tool_call (prepareToolCall)."""

from __future__ import annotations

from typing import Any

from tests.loop._kit import MODEL, call, make_tool, message, run_batch, texts
from yiemagent import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ImmediateOutcome,
    PreparedToolCall,
    prepare_tool_call,
    prepare_tool_call_arguments,
    validate_tool_arguments,
)

NUMBER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"n": {"type": "integer"}, "note": {"type": "string"}},
    "required": ["n"],
}


def echo_tool(name: str = "echo", **kwargs: Any) -> Any:
    async def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return repr(sorted(args.items()))

    return make_tool(name, execute, schema=NUMBER_SCHEMA, **kwargs)


async def test_r4_4_unknown_tool_names_it_and_lists_the_available_ones() -> None:
    batch, rec, _ = await run_batch([make_tool("b"), make_tool("a")], call("nope"))
    assert texts(batch) == ['Tool "nope" not found. Available tools: b, a']
    assert batch.messages[0].is_error
    assert rec.of("tool_execution_end")[0].is_error


async def test_r4_4_unknown_tool_with_no_tools_at_all() -> None:
    batch, _, _ = await run_batch([], call("nope"))
    assert texts(batch) == ['Tool "nope" not found. Available tools: none']


async def test_r4_4_prepare_arguments_runs_before_validation() -> None:
    seen: list[Any] = []

    def prepare(raw: Any) -> Any:
        seen.append(raw)
        return {"n": int(raw["count"])}

    batch, _, _ = await run_batch(
        [echo_tool(prepare_arguments=prepare)], call("echo", {"count": "7"})
    )
    assert seen == [{"count": "7"}]
    assert texts(batch) == ["[('n', 7)]"]
    assert not batch.messages[0].is_error


async def test_r4_4_schema_repairs_then_validation_error_lists_path_and_echoes_args() -> None:
    tools = [echo_tool()]
    ok, _, _ = await run_batch(tools, call("echo", {"n": "5", "note": None}))
    assert texts(ok) == ["[('n', 5)]"]  # numeric string coerced, null optional dropped
    bad, _, _ = await run_batch(tools, call("echo", {"n": "five"}))
    text = texts(bad)[0]
    assert bad.messages[0].is_error
    assert 'Invalid arguments for tool "echo"' in text
    assert "n" in text and "five" in text  # the path and the arguments received


async def test_r4_4_tools_own_validator_runs_after_schema_and_its_text_reaches_the_model() -> None:
    seen: list[dict[str, Any]] = []

    def validate(args: dict[str, Any]) -> str | None:
        seen.append(args)
        return "n must be even" if args["n"] % 2 else None

    tool = echo_tool(validate_arguments=validate)
    batch, _, _ = await run_batch([tool], call("echo", {"n": "3"}, id="x"))
    assert seen == [{"n": 3}]  # saw the coerced, schema-valid args
    assert batch.messages[0].is_error and "n must be even" in texts(batch)[0]
    batch, _, _ = await run_batch([tool], call("echo", {"n": 4}))
    assert texts(batch) == ["[('n', 4)]"]


async def test_r4_4_before_hook_sees_validated_args_and_may_change_them() -> None:
    contexts: list[BeforeToolCallContext] = []

    def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> None:
        contexts.append(ctx)
        ctx.args["n"] = 99  # not validated again
        ctx.args["extra"] = "x"

    batch, _, msg = await run_batch(
        [echo_tool()], call("echo", {"n": "1"}), before_tool_call=before
    )
    assert contexts[0].tool_call is msg.tool_calls[0]
    assert contexts[0].assistant_message is msg
    assert texts(batch) == ["[('extra', 'x'), ('n', 99)]"]


async def test_r4_4_async_before_hook_blocks_with_reason_and_terminate() -> None:
    ran: list[str] = []

    async def execute(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        ran.append(tool_call_id)
        return "ran"

    async def before(ctx: BeforeToolCallContext, signal: AbortSignal) -> BeforeToolCallResult:
        return BeforeToolCallResult(block=True, reason="not on Sundays", terminate=True)

    batch, rec, _ = await run_batch([make_tool("t", execute)], call("t"), before_tool_call=before)
    assert ran == []
    assert texts(batch) == ["not on Sundays"]
    assert batch.messages[0].is_error
    assert batch.terminate  # the block carried terminate
    assert rec.of("tool_execution_end")[0].result.terminate


async def test_r4_4_block_without_reason_uses_the_default_text() -> None:
    batch, _, _ = await run_batch(
        [make_tool("t")],
        call("t"),
        before_tool_call=lambda ctx, s: BeforeToolCallResult(block=True),
    )
    assert texts(batch) == ["Tool execution was blocked"]
    assert not batch.terminate


async def test_r4_4_before_hook_returning_no_block_runs_the_tool() -> None:
    batch, _, _ = await run_batch(
        [make_tool("t")], call("t"), before_tool_call=lambda ctx, s: BeforeToolCallResult()
    )
    assert texts(batch) == ["ok t"]


async def test_r4_4_abort_during_before_hook_gives_operation_aborted() -> None:
    signal = AbortSignal()

    def before(ctx: BeforeToolCallContext, s: AbortSignal) -> None:
        assert s is signal
        signal.abort("user")

    batch, _, _ = await run_batch(
        [make_tool("t")], call("t"), signal=signal, before_tool_call=before
    )
    assert texts(batch) == ["Operation aborted"]
    assert batch.messages[0].is_error


async def test_r4_4_exceptions_in_prepare_steps_become_error_results() -> None:
    def bad_prepare(raw: Any) -> Any:
        raise ValueError("cannot prepare this")

    def bad_validate(args: Any) -> str | None:
        raise RuntimeError("validator crashed")

    def bad_before(ctx: Any, s: Any) -> None:
        raise KeyError("hook")

    tools = [
        make_tool("p", prepare_arguments=bad_prepare),
        make_tool("v", validate_arguments=bad_validate),
        make_tool("h"),
    ]
    batch, _, _ = await run_batch(tools, call("p"), call("v"))
    assert texts(batch) == ["cannot prepare this", "validator crashed"]
    batch, _, _ = await run_batch(tools, call("h"), before_tool_call=bad_before)
    assert texts(batch) == ["KeyError: 'hook'"]
    assert all(m.is_error for m in batch.messages)


async def test_r4_4_prepare_tool_call_public_api() -> None:
    tool = echo_tool()
    ctx = AgentContext(tools=[tool])
    config = AgentLoopConfig(model=MODEL)
    tc = call("echo", {"n": "2"})
    prepared = await prepare_tool_call(ctx, message(tc), tc, config, AbortSignal())
    assert isinstance(prepared, PreparedToolCall)
    assert prepared.tool is tool and prepared.tool_call is tc and prepared.args == {"n": 2}
    assert tc.arguments == {"n": "2"}  # the model's arguments are not rewritten
    missing = await prepare_tool_call(ctx, message(), call("x"), config, AbortSignal())
    assert isinstance(missing, ImmediateOutcome) and missing.is_error
    assert prepare_tool_call_arguments(tool, tc) is tc  # no hook: the call itself
    assert validate_tool_arguments(tool, {"n": "8"}) == {"n": 8}
