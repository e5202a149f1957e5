"""The loop layer: the per-call tool pipeline, batches and the agent loop (DESIGN §4, §5).

`tool_calls` holds prepare → execute → finalize and the sequential and parallel batches;
`agent_loop` the turns around them; `model_call` one streamed model call; `convert` the
default `convert_to_llm`. `import yiemagent` does not load this package; the first use of one
of its names does.
"""

from yiemagent.loop.agent_loop import (
    agent_loop as agent_loop,
    agent_loop_continue as agent_loop_continue,
    run_agent_loop as run_agent_loop,
    run_agent_loop_continue as run_agent_loop_continue,
    stream_assistant_response as stream_assistant_response,
)
from yiemagent.loop.convert import default_convert_to_llm as default_convert_to_llm
from yiemagent.loop.tool_calls import (
    create_error_tool_result as create_error_tool_result,
    create_tool_result_message as create_tool_result_message,
    ensure_unique_tool_call_ids as ensure_unique_tool_call_ids,
    execute_prepared_tool_call as execute_prepared_tool_call,
    execute_tool_calls as execute_tool_calls,
    execute_tool_calls_parallel as execute_tool_calls_parallel,
    execute_tool_calls_sequential as execute_tool_calls_sequential,
    fail_tool_calls as fail_tool_calls,
    finalize_executed_tool_call as finalize_executed_tool_call,
    prepare_tool_call as prepare_tool_call,
    prepare_tool_call_arguments as prepare_tool_call_arguments,
    should_terminate as should_terminate,
    validate_tool_arguments as validate_tool_arguments,
)
from yiemagent.loop.transcript import transcript_problems as transcript_problems

__all__ = [
    "agent_loop",
    "agent_loop_continue",
    "create_error_tool_result",
    "create_tool_result_message",
    "default_convert_to_llm",
    "ensure_unique_tool_call_ids",
    "execute_prepared_tool_call",
    "execute_tool_calls",
    "execute_tool_calls_parallel",
    "execute_tool_calls_sequential",
    "fail_tool_calls",
    "finalize_executed_tool_call",
    "prepare_tool_call",
    "prepare_tool_call_arguments",
    "run_agent_loop",
    "run_agent_loop_continue",
    "should_terminate",
    "stream_assistant_response",
    "transcript_problems",
    "validate_tool_arguments",
]
