"""A run's answer when it has an output type (DESIGN §14; `docs/output.md`).

The loop validates the output (`yiemagent.loop.output`) and puts the value on the run's
`AgentEndEvent`; here it becomes the answer: an `OutputMessage` (the final assistant
message's fields and `output`), or `AgentRunError` saying why the run has no value.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from yiemagent.types import AgentEndEvent, AssistantMessage, OutputMessage

__all__ = ["output_reply"]


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
