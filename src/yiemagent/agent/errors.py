"""What `Agent.prompt` and `Agent.resume` raise when a run ends in error (DESIGN R-6.3, §13,
§17)."""

from __future__ import annotations

from collections.abc import Sequence

from yiemagent.errors import YiemAgentError
from yiemagent.types import AgentMessage, AssistantMessage

__all__ = ["AgentRunError", "GuardrailTripped", "UsageLimitExceeded"]


class AgentRunError(YiemAgentError):
    """A run started by `Agent.prompt` or `Agent.resume` ended in error (DESIGN R-6.3).

    The run is over and the agent is usable again (R-6.6); the run's messages are in its
    transcript as with any run. An aborted run does not raise (it returns its "aborted"
    message), and `send` / `take_response` hand back the error message instead.

    Attributes:
        message: the run's final assistant message (stop reason "error"); its
            `error_message` is this exception's text.
        new_messages: the messages the run added, prompts first.
    """

    def __init__(self, message: AssistantMessage, new_messages: Sequence[AgentMessage]) -> None:
        self.message = message
        self.new_messages: list[AgentMessage] = list(new_messages)
        super().__init__(message.error_message or "the run ended in an error")


class UsageLimitExceeded(AgentRunError):
    """A run started by `Agent.prompt` or `Agent.resume` was stopped by its `UsageLimits`
    (`AgentEndEvent.reason` "usage_limit", DESIGN §13); the text names the limit and the
    amount used, and every tool call of the run has its result (R-4.1)."""


class GuardrailTripped(AgentRunError):
    """A guardrail stopped a run started by `Agent.prompt` or `Agent.resume`
    (`AgentEndEvent.reason` "guardrail", DESIGN §17). The tripped answer is not returned
    and not in the transcript (the run's last message is an error message saying what
    tripped); every tool call has its result.

    Attributes:
        kind: "input" or "output".
        guardrail: the guardrail's name (its function's `__name__`).
        reason: the guardrail's message (its error text when it raised).
    """

    def __init__(
        self,
        message: AssistantMessage,
        new_messages: Sequence[AgentMessage],
        kind: str,
        guardrail: str,
        reason: str,
    ) -> None:
        super().__init__(message, new_messages)
        self.kind = kind
        self.guardrail = guardrail
        self.reason = reason
