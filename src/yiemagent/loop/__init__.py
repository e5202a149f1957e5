"""The loop layer: the per-call tool pipeline, batches and the agent loop (DESIGN §4, §5).

Public (and re-exported by `yiemagent`): the seeds' loop functions `agent_loop`,
`agent_loop_continue`, `run_agent_loop`, `run_agent_loop_continue`,
`stream_assistant_response`; the per-call steps `prepare_tool_call` (with
`prepare_tool_call_arguments`, `validate_tool_arguments`), `execute_prepared_tool_call`,
`finalize_executed_tool_call`; the batches `execute_tool_calls`,
`execute_tool_calls_sequential`, `execute_tool_calls_parallel`, `fail_tool_calls`; the
result helpers `create_tool_result_message`, `create_error_tool_result`, `should_terminate`;
`default_convert_to_llm`; `transcript_problems`. Each takes the seeds' arguments: `signal=None`
means no abort and `emit` may be a plain or an async function (DESIGN §10).

What a user may replace: `default_convert_to_llm` (through `AgentLoopConfig.convert_to_llm`)
and the provider (`stream_fn`); the hooks of `AgentLoopConfig`. Where each step lives:
`pipeline` (prepare → execute → finalize), `tool_runs` (threads, processes, `on_update`),
`batches` (the schedules), `tool_results` (result messages, calls answered without
running, held calls), `model_call` (one streamed model call), `agent_loop` (the turns),
`run_state` (what a run's turns share), `turn_tools` (a turn's tool calls, held calls),
`event_streams` (the loop as an event stream), `convert`, `deadline` (timeouts and the abort
grace). `import yiemagent` does not load this package; the first use of one of its names does.
"""

from yiemagent.loop.agent_loop import (
    run_agent_loop as run_agent_loop,
    run_agent_loop_continue as run_agent_loop_continue,
)
from yiemagent.loop.batches import (
    execute_tool_calls as execute_tool_calls,
    execute_tool_calls_parallel as execute_tool_calls_parallel,
    execute_tool_calls_sequential as execute_tool_calls_sequential,
)
from yiemagent.loop.convert import default_convert_to_llm as default_convert_to_llm
from yiemagent.loop.event_streams import (  # after agent_loop: the public name is the function
    agent_loop as agent_loop,
    agent_loop_continue as agent_loop_continue,
)
from yiemagent.loop.model_call import stream_assistant_response as stream_assistant_response
from yiemagent.loop.pipeline import (
    create_error_tool_result as create_error_tool_result,
    execute_prepared_tool_call as execute_prepared_tool_call,
    finalize_executed_tool_call as finalize_executed_tool_call,
    prepare_tool_call as prepare_tool_call,
    prepare_tool_call_arguments as prepare_tool_call_arguments,
    validate_tool_arguments as validate_tool_arguments,
)
from yiemagent.loop.tool_results import (
    create_tool_result_message as create_tool_result_message,
    fail_tool_calls as fail_tool_calls,
    held_tool_calls as held_tool_calls,
    should_terminate as should_terminate,
)
from yiemagent.loop.transcript import transcript_problems as transcript_problems

__all__ = [
    "agent_loop",
    "agent_loop_continue",
    "create_error_tool_result",
    "create_tool_result_message",
    "default_convert_to_llm",
    "execute_prepared_tool_call",
    "execute_tool_calls",
    "execute_tool_calls_parallel",
    "execute_tool_calls_sequential",
    "fail_tool_calls",
    "finalize_executed_tool_call",
    "held_tool_calls",
    "prepare_tool_call",
    "prepare_tool_call_arguments",
    "run_agent_loop",
    "run_agent_loop_continue",
    "should_terminate",
    "stream_assistant_response",
    "transcript_problems",
    "validate_tool_arguments",
]
