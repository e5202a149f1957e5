"""The `Agent`'s tool calls held for approval (DESIGN §14; `docs/approvals.md`).

`HeldCalls` remembers which tool calls of the transcript's last assistant message a run
held, and the decision taken on each (approved, or rejected with a reason). The pending
list is always read against the transcript (`held_tool_calls`), so a call that has a result
is never pending. With a session store that keeps state (`SessionStateStore`) the record is
saved as JSON under `session_log.HELD_KEY` whenever it changes, so another process opening the same
session sees the same pending list, can decide, and resume.

Crash rule (at most once): the record is deleted when a resume starts, before an approved
call runs; a process killed during that run leaves the call to the session repair (an
error result saying the session was interrupted), never to a second execution.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yiemagent.types import AgentMessage, PendingApproval, ToolApproval

if TYPE_CHECKING:
    from yiemagent.agent.session_log import SessionLog

from yiemagent.agent.held_calls import HeldCalls, check_reason

__all__ = ["ApprovalMethods", "HeldCalls"]


class ApprovalMethods:
    """The `Agent`'s approval API (DESIGN §14), mixed into `Agent`: it reads the held calls,
    the transcript and the session through `_held_state`."""

    __slots__ = ()

    def _held_state(
        self, deciding: bool = False
    ) -> tuple[HeldCalls, list[AgentMessage], SessionLog | None]:
        raise NotImplementedError

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls held for approval, in call order (id, tool name, arguments, the
        assistant message, the decision so far); empty when none is held."""
        held, messages, _ = self._held_state()
        return held.pending(messages)

    def approve(self, call_id: str) -> None:
        """Approve a held call: `resume()` runs it (validation, hooks and timeout apply).
        The decision is stored with the session, if any.

        Raises:
            ConfigError: no pending call has this id. AgentBusyError: a run is active.
        """
        self._decide(call_id, ToolApproval(True))

    def reject(self, call_id: str, reason: str | None = None) -> None:
        """Reject a held call: `resume()` gives it an error result carrying `reason`.

        Raises:
            ConfigError: `reason` is neither None nor text that can be stored, or no
                pending call has this id; nothing is recorded. AgentBusyError: a run is
                active.
        """
        self._decide(call_id, ToolApproval(False, check_reason(reason)))

    def _decide(self, call_id: str, decision: ToolApproval) -> None:
        held, messages, session = self._held_state(deciding=True)
        held.decide(messages, call_id, decision)
        if session is not None:
            session.save_held(held.to_record())
