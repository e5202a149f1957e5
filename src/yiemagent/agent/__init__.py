"""The stateful `Agent` (DESIGN §6; the seeds' `yiemAgent`).

Public: `Agent`; the team pieces (`Handoff` and the input filter `remove_handoff_turns`,
`speaking_agent` (who answers after a transcript), `team_output_tools` (the output tool of
each typed agent of a team, which front ends hide), `Guardrail`, `GuardrailContext`,
`GuardrailResult`, `GuardrailTripped`); `AgentRunError`, what `prompt`/`resume` raise when a
run ends in error (`UsageLimitExceeded` when its usage limits stopped it); `AgentBusyError`
(the agent is running and cannot take this call) and `ApprovalPendingError` (a prompt while
calls wait for approval), both also in `yiemagent.errors`; the OpenAI chat
format in both directions, `format_openai_messages` and `user_message_from_openai`. The other
modules are private: `_agent` (the `Agent`, its inputs and answers), `_run` (the run driver,
the state reducer, the errors), `_channels` (the prompt channel, the steering and follow-up
queues), `_team` (handoffs, the calls held
for approval), `_guardrails` (input and output guardrails), `_as_tool` (an agent as
another's tool), `_session_log` (the persisted session), `_llm_call` (the seeds' `llm_call`
as a provider stream), `_openai_format` (the OpenAI chat format). Replace behaviour through
the `Agent`'s constructor hooks instead.
"""

from __future__ import annotations

from yiemagent.agent._agent import Agent
from yiemagent.agent._as_tool import team_output_tools
from yiemagent.agent._guardrails import Guardrail, GuardrailContext, GuardrailResult
from yiemagent.agent._openai_format import format_openai_messages
from yiemagent.agent._run import AgentRunError, GuardrailTripped, UsageLimitExceeded
from yiemagent.agent._team import Handoff, remove_handoff_turns, speaking_agent
from yiemagent.ai.openai_wire import user_message_from_openai
from yiemagent.errors import AgentBusyError, ApprovalPendingError

__all__ = [
    "Agent",
    "AgentBusyError",
    "AgentRunError",
    "ApprovalPendingError",
    "Guardrail",
    "GuardrailContext",
    "GuardrailResult",
    "GuardrailTripped",
    "Handoff",
    "UsageLimitExceeded",
    "format_openai_messages",
    "remove_handoff_turns",
    "speaking_agent",
    "team_output_tools",
    "user_message_from_openai",
]

# Exceptions name this package, their public path, in tracebacks and pickles (pickle finds
# them here); classes with annotations keep their module, where `get_type_hints` reads them.
for _error in (AgentRunError, GuardrailTripped, UsageLimitExceeded):
    _error.__module__ = __name__
del _error
