"""The seeds' structs built positionally, in the seeds' field order (seed 000 §3, §11, §13,
§18; seed 002 "Helper Types"; seed 004), with DESIGN §3's Python names."""

from __future__ import annotations

from typing import Any

from yiemagent import (
    AbortSignal,
    AfterToolCallContext,
    AfterToolCallResult,
    AgentContext,
    AgentEndEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    BeforeToolCallContext,
    BeforeToolCallResult,
    ExecutedOutcome,
    FinalizedOutcome,
    ImmediateOutcome,
    PreparedToolCall,
    TextContent,
    ToolCall,
    ToolCallBatch,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
    ToolResultMessage,
    TurnContext,
    TurnEndEvent,
    UserMessage,
    create_error_tool_result,
    create_tool_result_message,
    should_terminate,
)

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"city": {"type": "string"}}}


def execute(tool_call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
    return "ok"


def test_agent_tool_fields_in_the_seeds_order_and_defaults() -> None:
    """000 §3: name, label, description, inputSchema, execute, prepareArguments,
    validateRequiredArgs, parallelToolExecute (default false)."""
    prepare = dict
    tool = AgentTool("getWeather", "Weather Lookup", "Fetch weather.", SCHEMA, execute, prepare)
    assert (tool.name, tool.label, tool.description) == (
        "getWeather",
        "Weather Lookup",
        "Fetch weather.",
    )
    assert tool.input_schema == SCHEMA and tool.execute is execute
    assert tool.prepare_arguments is prepare and tool.validate_arguments is None
    assert tool.parallel is False


def test_results_messages_and_outcomes_in_the_seeds_order() -> None:
    """000 §3 agentToolResult(content, details, usage, terminate); §11 toolResultMessage
    (toolCallId, toolName, content, details, usage, addedToolNames, isError, timestamp);
    004's outcomes and batch; 000 §12 createErrorToolResult."""
    result = AgentToolResult([TextContent("Sunny")], {"source": "test"}, None, True)
    assert (result.details, result.usage, result.terminate) == ({"source": "test"}, None, True)
    assert AgentToolResult([TextContent("x")]).details == {}
    assert AgentToolResult([TextContent("x")]).terminate is False

    message = ToolResultMessage(
        "call_1", "getWeather", [TextContent("Sunny")], {}, None, ["x"], True, 1_700_000_000_000
    )
    assert (message.role, message.tool_call_id, message.tool_name) == (
        "toolResult",
        "call_1",
        "getWeather",
    )
    assert (message.added_tool_names, message.is_error, message.timestamp) == (
        ["x"],
        True,
        1_700_000_000_000,
    )

    call = ToolCall("call_1", "getWeather", {"city": "Tokyo"})
    tool = AgentTool("getWeather", "Weather", "Fetch weather.", SCHEMA, execute)
    prepared = PreparedToolCall(tool, call, {"city": "Tokyo"})
    assert (prepared.tool, prepared.tool_call, prepared.args) == (tool, call, {"city": "Tokyo"})
    assert ImmediateOutcome(result, True).is_error is True
    assert ExecutedOutcome(result, False).result is result
    finalized = FinalizedOutcome(call, result, False)
    assert (finalized.tool_call, finalized.result, finalized.is_error) == (call, result, False)
    batch = ToolCallBatch([message], True)
    assert (batch.messages, batch.terminate) == ([message], True)

    error = create_error_tool_result("boom")
    assert error.content == [TextContent("boom")] and error.details == {}
    assert should_terminate([]) is False and should_terminate([finalized]) is True
    made = create_tool_result_message(finalized)
    assert (made.tool_call_id, made.tool_name, made.content) == (
        "call_1",
        "getWeather",
        [TextContent("Sunny")],
    )


def test_contexts_hook_results_and_events_in_the_seeds_order() -> None:
    """000 §18 agentContext(systemPrompt, messages, tools), before/afterToolCallContext;
    002 BeforeToolCallResult(block, reason), AfterToolCallResult(content, details, is_error,
    usage, terminate), PrepareNextTurnContext(message, tool_results, context, new_messages);
    000 §13 the three tool events; 002's TurnEndEvent(message, tool_results)."""
    user = UserMessage("hi")
    context = AgentContext("You are a helpful assistant.", [user], [])
    assert (context.system_prompt, context.messages, context.tools) == (
        "You are a helpful assistant.",
        [user],
        [],
    )
    call = ToolCall("call_1", "getWeather", {"city": "Tokyo"})
    assistant = AssistantMessage([call], stop_reason="toolUse")
    before = BeforeToolCallContext(assistant, call, {"city": "Tokyo"}, context)
    assert (before.assistant_message, before.tool_call, before.args, before.context) == (
        assistant,
        call,
        {"city": "Tokyo"},
        context,
    )
    result = AgentToolResult([TextContent("Sunny")])
    after = AfterToolCallContext(assistant, call, {"city": "Tokyo"}, result, False, context)
    assert (after.result, after.is_error) == (result, False)

    blocked = BeforeToolCallResult(True, "not allowed")
    assert (blocked.block, blocked.reason) == (True, "not allowed")
    patch = AfterToolCallResult([TextContent("masked")], {"d": 1}, False, None, True)
    assert (patch.content, patch.details, patch.is_error, patch.usage, patch.terminate) == (
        [TextContent("masked")],
        {"d": 1},
        False,
        None,
        True,
    )
    turn = TurnContext(assistant, [], context, [user, assistant])
    assert (turn.message, turn.tool_results, turn.context, turn.new_messages) == (
        assistant,
        [],
        context,
        [user, assistant],
    )

    start = ToolExecutionStartEvent("call_1", "getWeather", {"city": "Tokyo"})
    half = AgentToolResult([TextContent("half")])
    update = ToolExecutionUpdateEvent("call_1", "getWeather", {"city": "Tokyo"}, half)
    end = ToolExecutionEndEvent("call_1", "getWeather", result, False)
    assert [e.type for e in (start, update, end)] == [
        "tool_execution_start",
        "tool_execution_update",
        "tool_execution_end",
    ]
    assert (start.tool_call_id, start.tool_name, start.args) == (
        "call_1",
        "getWeather",
        {"city": "Tokyo"},
    )
    assert update.partial_result is half and (end.result, end.is_error) == (result, False)
    assert TurnEndEvent(assistant, []).tool_results == []
    assert AgentEndEvent([user]).messages == [user]
    signal = AbortSignal()
    assert signal.aborted is False
    signal.abort()
    assert signal.aborted is True
