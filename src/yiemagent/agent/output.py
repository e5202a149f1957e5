"""A finished run's answer: what `Agent.prompt` and `Agent.resume` return or raise (DESIGN
R-6.3, §13, §14; `docs/output.md`).

Without an output type the answer is the run's final assistant message, and a run that
ended in error raises `AgentRunError` (never an empty reply). With one, the loop validates
the output (`yiemagent.loop._output_type`) and puts the value on the run's `AgentEndEvent`; here it
becomes an `OutputMessage` (the final assistant message's fields and `output`), or
`AgentRunError` saying why the run has no value.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from yiemagent.agent.errors import AgentRunError, UsageLimitExceeded
from yiemagent.types import AgentEndEvent, AgentMessage, AssistantMessage, OutputMessage, OutputSpec

__all__ = ["output_reply", "run_answer"]


def run_answer(
    answer: AssistantMessage,
    new_messages: Sequence[AgentMessage],
    end: AgentEndEvent | None,
    output: OutputSpec[Any] | None,
) -> AssistantMessage | OutputMessage[Any]:
    """The answer of a finished run (R-6.3).

    Args:
        answer: the run's final assistant message (`RunDriver.run`).
        new_messages: the messages the run added, for the error.
        end: the run's `AgentEndEvent` (None if it never ended).
        output: the run's output type, if any (DESIGN §14).

    Returns:
        `answer` (an aborted run's "aborted" message included); with an output type, the
        `OutputMessage` of `output_reply`.

    Raises:
        UsageLimitExceeded: the run's `usage_limits` stopped it (DESIGN §13).
        AgentRunError: the run ended in error, or (with an output type) without a valid
            value.
    """
    if output is not None:
        reply = output_reply(answer, end)
        if not isinstance(reply, OutputMessage):
            raise AgentRunError(reply, new_messages)
        return reply
    if answer.stop_reason == "error":  # an error is raised, never an empty reply
        if end is not None and end.reason == "usage_limit":
            raise UsageLimitExceeded(answer, new_messages)
        raise AgentRunError(answer, new_messages)
    return answer


def output_reply(
    answer: AssistantMessage, end: AgentEndEvent | None
) -> OutputMessage[Any] | AssistantMessage:
    """The answer of a run with an output type.

    Returns:
        An `OutputMessage` with the validated `output` (reason "stop"), or with `output`
        `None` when the run waits for approvals (reason "awaiting_approval"). Else the
        error message for `AgentRunError`: its text names the problem (the last validation
        errors after the retries, the error, the abort, max_turns).
    """
    fields = {f.name: getattr(answer, f.name) for f in dataclasses.fields(AssistantMessage)}
    if end is not None and end.reason in ("stop", "awaiting_approval"):
        output = end.output if end.reason == "stop" else None
        return OutputMessage(**fields, output=output)
    reason = end.reason if end is not None else "error"
    if answer.stop_reason == "error" and answer.error_message:
        text = answer.error_message
    else:
        detail = f": {answer.error_message}" if answer.error_message else ""
        text = f"the run ended ({reason}{detail}) before the model gave a valid output"
    return dataclasses.replace(answer, stop_reason="error", error_message=text)
