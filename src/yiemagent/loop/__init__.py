"""The loop layer: the agent loop, tool-call batches and the per-call pipeline (DESIGN §4).

Public, and re-exported by `yiemagent`:

- the seeds' loop functions `agent_loop`, `agent_loop_continue`, `run_agent_loop`,
  `run_agent_loop_continue`, `stream_assistant_response`;
- the per-call steps `prepare_tool_call` (with `prepare_tool_call_arguments`,
  `validate_tool_arguments`), `execute_prepared_tool_call`, `finalize_executed_tool_call`;
- the batches `execute_tool_calls`, `execute_tool_calls_sequential`,
  `execute_tool_calls_parallel`, and the result helpers `create_tool_result_message`,
  `create_error_tool_result`, `should_terminate`;
- `default_convert_to_llm`, what `AgentLoopConfig.convert_to_llm` replaces.

Public for the layers above (the Agent, teams, compaction, the CLI), not re-exported:

- `fail_tool_calls` (every call answered with one error result, none run),
  `held_tool_calls` (the calls a transcript holds for approval), `rejected_text` (the
  result text of a held call not approved), `transcript_problems` (the tool call / result
  pairing check);
- `IncrementalConverter`, the `converter` a caller running the loop again and again on one
  transcript passes to `run_agent_loop`;
- `offer_only`, what a `StreamFn` that sends the model fewer tools than it was given (the
  Agent's `prepare_context`) calls, so that a call of a tool it left out is answered as an
  unknown tool; `preparing_prompt`, the system prompt and tools sent beside what a
  `transform_context` returns, and `preparing_api_key`, the key the run's config gives a
  provider, for a transform's own model call;
- `count_spending` (what a `transform_context` spends on a model call of its own, counted
  against the run's `UsageLimits`), `count_spent_before` (what a resumed sub-run's result
  carries that an earlier run counted), `not_a_tool_call` (marks a tool whose calls
  `max_tool_calls` does not count: the Agent's handoff transfers);
- `ABORT_GRACE_S`, the seconds a tool or a model stream gets to stop after an abort, and
  `within_abort_grace`, which gives the same grace to other code a run awaits (the Agent's
  listeners).

Each function takes the seeds' arguments: `signal=None` means no abort and `emit` may be a
plain or an async function. What a user may replace: `default_convert_to_llm` (through
`AgentLoopConfig.convert_to_llm`), the provider (`stream_fn`) and the hooks of
`AgentLoopConfig`.

The modules are private: `_agent_loop` (the run, its turns, the model call, the transcript
as the model sees it), `_tool_calls` (batches, prepare → execute → finalize, result
messages), `_execution` (running tool code on threads and processes, deadlines),
`_process_worker` (the child side of a process tool), `_output_type` (a run's structured
output), `_usage_limits` (a run's spending against its limits), `_transcript` (the pairing
check). `import yiemagent` does not load this package; the first use of one of its names
does.
"""

from yiemagent.loop._agent_loop import (
    IncrementalConverter as IncrementalConverter,
    agent_loop as agent_loop,
    agent_loop_continue as agent_loop_continue,
    default_convert_to_llm as default_convert_to_llm,
    preparing_api_key as preparing_api_key,
    preparing_prompt as preparing_prompt,
    run_agent_loop as run_agent_loop,
    run_agent_loop_continue as run_agent_loop_continue,
    stream_assistant_response as stream_assistant_response,
)
from yiemagent.loop._execution import (
    ABORT_GRACE_S as ABORT_GRACE_S,
    within_abort_grace as within_abort_grace,
)
from yiemagent.loop._tool_calls import (
    create_error_tool_result as create_error_tool_result,
    create_tool_result_message as create_tool_result_message,
    execute_prepared_tool_call as execute_prepared_tool_call,
    execute_tool_calls as execute_tool_calls,
    execute_tool_calls_parallel as execute_tool_calls_parallel,
    execute_tool_calls_sequential as execute_tool_calls_sequential,
    fail_tool_calls as fail_tool_calls,
    finalize_executed_tool_call as finalize_executed_tool_call,
    held_tool_calls as held_tool_calls,
    offer_only as offer_only,
    prepare_tool_call as prepare_tool_call,
    prepare_tool_call_arguments as prepare_tool_call_arguments,
    rejected_text as rejected_text,
    should_terminate as should_terminate,
    validate_tool_arguments as validate_tool_arguments,
)
from yiemagent.loop._transcript import transcript_problems as transcript_problems
from yiemagent.loop._usage_limits import (
    count_spending as count_spending,
    count_spent_before as count_spent_before,
    not_a_tool_call as not_a_tool_call,
)

__all__ = [
    "ABORT_GRACE_S",
    "IncrementalConverter",
    "agent_loop",
    "agent_loop_continue",
    "count_spending",
    "count_spent_before",
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
    "not_a_tool_call",
    "offer_only",
    "prepare_tool_call",
    "prepare_tool_call_arguments",
    "preparing_api_key",
    "preparing_prompt",
    "rejected_text",
    "run_agent_loop",
    "run_agent_loop_continue",
    "should_terminate",
    "stream_assistant_response",
    "transcript_problems",
    "validate_tool_arguments",
    "within_abort_grace",
]
