"""The tool-call pipeline and batches: the public import point (DESIGN §4, R-4.1 to R-4.11).

Seed 000 §8 to §13, seed 004. `pipeline.py` holds the per-call steps (prepare → execute →
finalize) and the result helpers; `batches.py` the sequential and parallel schedules that
run them. Nothing here raises to the caller for a tool problem: every tool call ends with
exactly one `ToolResultMessage`, in source order (R-4.1).
"""

from __future__ import annotations

from yiemagent.loop.batches import (
    SKIPPED_TEXT,
    create_tool_result_message,
    ensure_unique_tool_call_ids,
    execute_tool_calls,
    execute_tool_calls_parallel,
    execute_tool_calls_sequential,
    fail_tool_calls,
    should_terminate,
)
from yiemagent.loop.pipeline import (
    ABORT_GRACE_S,
    TOOL_THREADS,
    create_error_tool_result,
    execute_prepared_tool_call,
    finalize_executed_tool_call,
    prepare_tool_call,
    prepare_tool_call_arguments,
    validate_tool_arguments,
)

__all__ = [
    "ABORT_GRACE_S",
    "SKIPPED_TEXT",
    "TOOL_THREADS",
    "create_error_tool_result",
    "create_tool_result_message",
    "ensure_unique_tool_call_ids",
    "execute_prepared_tool_call",
    "execute_tool_calls",
    "execute_tool_calls_parallel",
    "execute_tool_calls_sequential",
    "fail_tool_calls",
    "finalize_executed_tool_call",
    "prepare_tool_call",
    "prepare_tool_call_arguments",
    "should_terminate",
    "validate_tool_arguments",
]
