"""The record of an `Agent`'s tool calls held for approval (DESIGN §14).

`HeldCalls` is the in-memory and stored (JSON) form; `approvals.py` builds the Agent's
approval API on it and `session_log.py` reads it when a session is opened, so both import
it from here (no cycle between them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from yiemagent.errors import ApprovalPendingError, ConfigError
from yiemagent.types import AgentMessage, AssistantMessage, PendingApproval, ToolApproval, ToolCall

__all__ = ["HeldCalls"]

logger = logging.getLogger(__name__)


class HeldCalls:
    """Held tool-call ids in call order, and their decisions. Event-loop thread only."""

    __slots__ = ("decisions", "ids")

    def __init__(
        self, ids: Sequence[str] = (), decisions: Mapping[str, ToolApproval] | None = None
    ) -> None:
        self.ids: list[str] = list(ids)
        self.decisions: dict[str, ToolApproval] = dict(decisions or {})

    # ── reading ────────────────────────────────────────────────────────────

    def pending(self, messages: Sequence[AgentMessage]) -> list[PendingApproval]:
        """The held calls still without a result, in call order, with their decisions."""
        if not self.ids:
            return []
        held = _held(messages)
        if held is None:
            return []
        message, calls = held
        wanted = set(self.ids)
        return [
            PendingApproval(
                call.id,
                call.name,
                dict(call.arguments) if isinstance(call.arguments, dict) else {},
                message,
                self.decisions.get(call.id),
            )
            for call in calls
            if call.id in wanted
        ]

    def check_none_pending(self, messages: Sequence[AgentMessage], what: str) -> None:
        """Raise `ApprovalPendingError` when calls are held (a new prompt would send them to
        the provider without a result, R-4.1, R-5.10)."""
        _refuse_if_any(
            self.pending(messages),
            f"cannot {what}: {{count}} tool call(s) await approval: {{names}}; approve(id) or "
            "reject(id, reason) each one, then await resume()",
        )

    def check_all_decided(self, messages: Sequence[AgentMessage]) -> None:
        """Raise `ApprovalPendingError` when a pending call has no decision yet (a resume
        would not know what to do with it, DESIGN §14)."""
        _refuse_if_any(
            self.undecided(messages),
            "cannot resume: {names} still need a decision: approve(id) or reject(id, reason) "
            "each one first",
        )

    # ── changing ───────────────────────────────────────────────────────────

    def hold(self, messages: Sequence[AgentMessage]) -> None:
        """After a run ended "awaiting_approval": every call of the last assistant message
        without a result is held (decisions taken before are dropped)."""
        held = _held(messages)
        self.ids = [] if held is None else [call.id for call in held[1]]
        self.decisions = {}

    def decide(
        self, messages: Sequence[AgentMessage], call_id: str, decision: ToolApproval
    ) -> None:
        """Record a decision on one pending call.

        Raises:
            ConfigError: `call_id` is not a pending call (the text lists the pending ones).
        """
        pending = {p.tool_call_id for p in self.pending(messages)}
        if call_id not in pending:
            listed = ", ".join(sorted(pending)) or "none"
            raise ConfigError(f"no tool call {call_id!r} awaits approval; pending: {listed}")
        self.decisions[call_id] = decision

    def undecided(self, messages: Sequence[AgentMessage]) -> list[PendingApproval]:
        """The pending calls that have no decision yet."""
        return [p for p in self.pending(messages) if p.decision is None]

    def clear(self) -> None:
        """Hold nothing and forget every decision (`reset`, or a resumed run applied them)."""
        self.ids = []
        self.decisions = {}

    # ── the stored record ──────────────────────────────────────────────────

    def to_record(self) -> str | None:
        """The record as JSON (`None` when nothing is held)."""
        if not self.ids:
            return None
        decisions = {
            call_id: {"approved": d.approved, "reason": d.reason}
            for call_id, d in self.decisions.items()
        }
        return json.dumps({"version": 1, "held": self.ids, "decisions": decisions})

    @classmethod
    def from_record(cls, text: str | None) -> HeldCalls:
        """The record `to_record` wrote; an unreadable one is logged and ignored."""
        if not text:
            return cls()
        try:
            data: Any = json.loads(text)
            ids = [str(i) for i in data["held"]]
            decisions = {
                str(k): ToolApproval(bool(v["approved"]), v.get("reason"))
                for k, v in dict(data.get("decisions") or {}).items()
            }
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("ignoring an unreadable record of held tool calls: %s", exc)
            return cls()
        return cls(ids, decisions)


def _refuse_if_any(calls: Sequence[PendingApproval], text: str) -> None:
    """Raise `ApprovalPendingError` naming `calls` when there are any; `text` may name
    `{count}` and `{names}` (each call as "tool (id)")."""
    if calls:
        names = ", ".join(f"{p.tool_name} ({p.tool_call_id})" for p in calls)
        raise ApprovalPendingError(
            text.format(count=len(calls), names=names), [p.tool_call_id for p in calls]
        )


def _held(messages: Sequence[AgentMessage]) -> tuple[AssistantMessage, list[ToolCall]] | None:
    from yiemagent.loop import held_tool_calls

    return held_tool_calls(messages)
