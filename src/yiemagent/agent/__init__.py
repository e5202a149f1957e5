"""The stateful `Agent` (DESIGN §2.5, R-6; the seeds' `yiemAgent`).

Public: `Agent`; the team pieces of DESIGN §17 (`Handoff` and the input filter
`remove_handoff_turns`, `Guardrail`, `GuardrailContext`, `GuardrailResult`,
`GuardrailTripped`); `AgentRunError`, what `prompt`/`resume` raise when a
run ends in error (`UsageLimitExceeded` when its usage limits stopped it) (R-6.3); the OpenAI
chat format in both directions, `format_openai_messages` and `user_message_from_openai`.
Everything else in this package (the run driver, the state reducer, input coercion, the
queues, the session log, the `llm_call` adapter, teams) is how the `Agent` works, not API;
replace behaviour through the `Agent`'s constructor hooks instead.
"""

from __future__ import annotations

from yiemagent.agent._guardrails import Guardrail, GuardrailContext, GuardrailResult
from yiemagent.agent._team import Handoff, remove_handoff_turns
from yiemagent.agent.agent import Agent
from yiemagent.agent.errors import AgentRunError, GuardrailTripped, UsageLimitExceeded
from yiemagent.agent.openai_format import format_openai_messages
from yiemagent.ai.openai_wire import user_message_from_openai

__all__ = [
    "Agent",
    "AgentRunError",
    "Guardrail",
    "GuardrailContext",
    "GuardrailResult",
    "GuardrailTripped",
    "Handoff",
    "UsageLimitExceeded",
    "format_openai_messages",
    "remove_handoff_turns",
    "user_message_from_openai",
]
