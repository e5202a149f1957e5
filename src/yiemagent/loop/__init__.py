"""The loop layer: the per-call tool pipeline, batches and the agent loop (DESIGN §4, §5).

`tool_calls` holds prepare → execute → finalize and the sequential and parallel batches;
`agent_loop` the turns around them. Names load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY: dict[str, str] = {
    "prepare_tool_call": "yiemagent.loop.tool_calls",
    "prepare_tool_call_arguments": "yiemagent.loop.tool_calls",
    "validate_tool_arguments": "yiemagent.loop.tool_calls",
    "execute_prepared_tool_call": "yiemagent.loop.tool_calls",
    "finalize_executed_tool_call": "yiemagent.loop.tool_calls",
    "execute_tool_calls": "yiemagent.loop.tool_calls",
    "execute_tool_calls_sequential": "yiemagent.loop.tool_calls",
    "execute_tool_calls_parallel": "yiemagent.loop.tool_calls",
    "create_tool_result_message": "yiemagent.loop.tool_calls",
    "create_error_tool_result": "yiemagent.loop.tool_calls",
    "should_terminate": "yiemagent.loop.tool_calls",
    "fail_tool_calls": "yiemagent.loop.tool_calls",
    "ensure_unique_tool_call_ids": "yiemagent.loop.tool_calls",
    "agent_loop": "yiemagent.loop.agent_loop",
    "agent_loop_continue": "yiemagent.loop.agent_loop",
    "run_agent_loop": "yiemagent.loop.agent_loop",
    "run_agent_loop_continue": "yiemagent.loop.agent_loop",
    "stream_assistant_response": "yiemagent.loop.agent_loop",
    "default_convert_to_llm": "yiemagent.loop.convert",
}

__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'yiemagent.loop' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from yiemagent.loop.agent_loop import (
        agent_loop,
        agent_loop_continue,
        run_agent_loop,
        run_agent_loop_continue,
        stream_assistant_response,
    )
    from yiemagent.loop.convert import default_convert_to_llm
    from yiemagent.loop.tool_calls import (
        create_error_tool_result,
        create_tool_result_message,
        ensure_unique_tool_call_ids,
        execute_prepared_tool_call,
        execute_tool_calls,
        execute_tool_calls_parallel,
        execute_tool_calls_sequential,
        fail_tool_calls,
        finalize_executed_tool_call,
        prepare_tool_call,
        prepare_tool_call_arguments,
        should_terminate,
        validate_tool_arguments,
    )

# `agent_loop` names both a submodule and its main function. Importing the submodule (as
# anything that uses the loop does) sets the package attribute `agent_loop` to the module,
# and then `__getattr__` is never asked again, so `from yiemagent import agent_loop` would
# give the module. Binding the function here, after the submodule is loaded, prevents that.
from yiemagent.loop.agent_loop import agent_loop  # noqa: E402
