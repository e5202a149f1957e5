"""yiemagent: an agent core for LLM agents that call tools.

This module is the public list: the user's concepts (the `Agent`, tools and tool stores,
messages and content, events, models, errors, session stores, limits, batches) and the seeds'
public functions. Helpers and constants stay in their packages (`yiemagent.types.text_of`,
`yiemagent.tools.MAX_CODE_CHARS`, ...).

The list is written once, as the `TYPE_CHECKING` imports below: type checkers and readers see
plain imports, and at run time `__getattr__` reads the same block to load a name from its
package on first use (the mechanism of scientific-python's `lazy_loader.attach_stub`). So
`import yiemagent` imports nothing else, no provider SDK and no model runtime (DESIGN §22).
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from yiemagent.agent import (
        Agent as Agent,
        AgentRunError as AgentRunError,
        Guardrail as Guardrail,
        GuardrailContext as GuardrailContext,
        GuardrailResult as GuardrailResult,
        GuardrailTripped as GuardrailTripped,
        Handoff as Handoff,
        UsageLimitExceeded as UsageLimitExceeded,
        format_openai_messages as format_openai_messages,
        user_message_from_openai as user_message_from_openai,
    )
    from yiemagent.ai import (
        FallbackModel as FallbackModel,
        complete as complete,
        get_model as get_model,
        stream as stream,
    )
    from yiemagent.batch import run_batch as run_batch, run_batch_async as run_batch_async
    from yiemagent.errors import (
        AgentBusyError as AgentBusyError,
        ApprovalPendingError as ApprovalPendingError,
        BatchError as BatchError,
        ConfigError as ConfigError,
        MCPConnectionError as MCPConnectionError,
        MessageInputError as MessageInputError,
        ProviderError as ProviderError,
        SessionBusyError as SessionBusyError,
        SessionCorruptError as SessionCorruptError,
        SessionStoreClosedError as SessionStoreClosedError,
        ToolLoadError as ToolLoadError,
        YiemAgentError as YiemAgentError,
    )
    from yiemagent.loop import (
        agent_loop as agent_loop,
        agent_loop_continue as agent_loop_continue,
        create_error_tool_result as create_error_tool_result,
        create_tool_result_message as create_tool_result_message,
        default_convert_to_llm as default_convert_to_llm,
        execute_prepared_tool_call as execute_prepared_tool_call,
        execute_tool_calls as execute_tool_calls,
        execute_tool_calls_parallel as execute_tool_calls_parallel,
        execute_tool_calls_sequential as execute_tool_calls_sequential,
        finalize_executed_tool_call as finalize_executed_tool_call,
        prepare_tool_call as prepare_tool_call,
        prepare_tool_call_arguments as prepare_tool_call_arguments,
        run_agent_loop as run_agent_loop,
        run_agent_loop_continue as run_agent_loop_continue,
        should_terminate as should_terminate,
        stream_assistant_response as stream_assistant_response,
        validate_tool_arguments as validate_tool_arguments,
    )
    from yiemagent.sessions import (
        InMemorySessionStore as InMemorySessionStore,
        SessionStore as SessionStore,
        SqliteSessionStore as SqliteSessionStore,
    )
    from yiemagent.teams import load_agent as load_agent
    from yiemagent.tools import (
        ToolStore as ToolStore,
        list_tools_tool as list_tools_tool,
        tool as tool,
        validate_arguments_against_schema as validate_arguments_against_schema,
        write_tool_tool as write_tool_tool,
    )
    from yiemagent.types import (
        AbortSignal as AbortSignal,
        AfterToolCallContext as AfterToolCallContext,
        AfterToolCallResult as AfterToolCallResult,
        AgentContext as AgentContext,
        AgentEndEvent as AgentEndEvent,
        AgentEndReason as AgentEndReason,
        AgentEvent as AgentEvent,
        AgentLoopConfig as AgentLoopConfig,
        AgentMessage as AgentMessage,
        AgentStartEvent as AgentStartEvent,
        AgentState as AgentState,
        AgentTool as AgentTool,
        AgentToolResult as AgentToolResult,
        AssistantMessage as AssistantMessage,
        BashExecutionMessage as BashExecutionMessage,
        BeforeToolCallContext as BeforeToolCallContext,
        BeforeToolCallResult as BeforeToolCallResult,
        BranchSummaryMessage as BranchSummaryMessage,
        CompactionSummaryMessage as CompactionSummaryMessage,
        Context as Context,
        Cost as Cost,
        EventStream as EventStream,
        ExecutedOutcome as ExecutedOutcome,
        FinalizedOutcome as FinalizedOutcome,
        ImageContent as ImageContent,
        ImmediateOutcome as ImmediateOutcome,
        Message as Message,
        MessageEndEvent as MessageEndEvent,
        MessageStartEvent as MessageStartEvent,
        MessageUpdateEvent as MessageUpdateEvent,
        Model as Model,
        NestedAgentEvent as NestedAgentEvent,
        OutputMessage as OutputMessage,
        OutputSpec as OutputSpec,
        PendingApproval as PendingApproval,
        PreparedToolCall as PreparedToolCall,
        StopReason as StopReason,
        StreamOptions as StreamOptions,
        TextContent as TextContent,
        ThinkingContent as ThinkingContent,
        ToolApproval as ToolApproval,
        ToolCall as ToolCall,
        ToolCallBatch as ToolCallBatch,
        ToolCallFailed as ToolCallFailed,
        ToolExecutionEndEvent as ToolExecutionEndEvent,
        ToolExecutionMode as ToolExecutionMode,
        ToolExecutionStartEvent as ToolExecutionStartEvent,
        ToolExecutionUpdateEvent as ToolExecutionUpdateEvent,
        ToolResultMessage as ToolResultMessage,
        TurnContext as TurnContext,
        TurnEndEvent as TurnEndEvent,
        TurnStartEvent as TurnStartEvent,
        TurnUpdate as TurnUpdate,
        Usage as Usage,
        UsageLimits as UsageLimits,
        UserMessage as UserMessage,
        event_to_dict as event_to_dict,
        message_from_dict as message_from_dict,
        message_to_dict as message_to_dict,
        messages_from_json as messages_from_json,
        messages_to_json as messages_to_json,
    )


def _exports() -> dict[str, str]:
    """Public name -> the package it is loaded from, read from the `TYPE_CHECKING` block above."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    return {
        alias.asname or alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


_EXPORTS = _exports()
__all__ = ["__version__", *sorted(_EXPORTS)]


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'yiemagent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
