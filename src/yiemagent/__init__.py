"""yiemagent: an agent core for LLM agents that call tools.

Public names are re-exported here and loaded on first use, so `import yiemagent` stays fast
and imports no provider SDK and no model runtime (DESIGN §2, §9). Users never import private
modules.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from yiemagent.errors import *  # noqa: F403
from yiemagent.errors import __all__ as _errors_all
from yiemagent.types import *  # noqa: F403
from yiemagent.types import __all__ as _types_all

__version__ = "0.1.0"

# name -> module that defines it; loaded on first attribute access.
_LAZY: dict[str, str] = {
    # tools layer (DESIGN §2.3)
    "tool": "yiemagent.tools",
    "ToolStore": "yiemagent.tools",
    "list_tools_tool": "yiemagent.tools",
    "write_tool_tool": "yiemagent.tools",
    "validate_arguments_against_schema": "yiemagent.tools",
    # loop layer (DESIGN §2.4)
    "agent_loop": "yiemagent.loop",
    "agent_loop_continue": "yiemagent.loop",
    "run_agent_loop": "yiemagent.loop",
    "run_agent_loop_continue": "yiemagent.loop",
    "stream_assistant_response": "yiemagent.loop",
    "default_convert_to_llm": "yiemagent.loop",
    "prepare_tool_call": "yiemagent.loop",
    "prepare_tool_call_arguments": "yiemagent.loop",
    "validate_tool_arguments": "yiemagent.loop",
    "execute_prepared_tool_call": "yiemagent.loop",
    "finalize_executed_tool_call": "yiemagent.loop",
    "execute_tool_calls": "yiemagent.loop",
    "execute_tool_calls_sequential": "yiemagent.loop",
    "execute_tool_calls_parallel": "yiemagent.loop",
    "create_tool_result_message": "yiemagent.loop",
    "create_error_tool_result": "yiemagent.loop",
    "should_terminate": "yiemagent.loop",
    # agent (DESIGN §2.5)
    "Agent": "yiemagent.agent",
    "AgentRunError": "yiemagent.agent",
    "UsageLimitExceeded": "yiemagent.agent",
    "format_openai_messages": "yiemagent.agent",
    "user_message_from_openai": "yiemagent.agent",
    # sessions (DESIGN §2.6, §10)
    "SessionStore": "yiemagent.sessions",
    "SqliteSessionStore": "yiemagent.sessions",
    "InMemorySessionStore": "yiemagent.sessions",
    # batches (DESIGN §16)
    "run_batch": "yiemagent.batch",
    "run_batch_async": "yiemagent.batch",
    # providers (DESIGN §7)
    "get_model": "yiemagent.ai",
    "FallbackModel": "yiemagent.ai",
    "stream": "yiemagent.ai",
    "complete": "yiemagent.ai",
}

__all__ = ["__version__", *_errors_all, *_types_all, *_LAZY]


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'yiemagent' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:
    from yiemagent.agent import (
        Agent as Agent,
        AgentRunError as AgentRunError,
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
    from yiemagent.tools import (
        ToolStore as ToolStore,
        list_tools_tool as list_tools_tool,
        tool as tool,
        validate_arguments_against_schema as validate_arguments_against_schema,
        write_tool_tool as write_tool_tool,
    )
