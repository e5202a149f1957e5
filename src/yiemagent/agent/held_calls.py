"""The record of an `Agent`'s tool calls held for approval (DESIGN §14).

`HeldCalls` is the in-memory and stored (JSON) form; `approvals.py` builds the Agent's
approval API on it and `session_log.py` reads it when a session is opened, so both import
it from here (no cycle between them). A held call of an `Agent.as_tool` tool may stand for
a sub-agent's run that is itself held (DESIGN §17): its `NestedHold` (the sub-run's
transcript and its own `HeldCalls`) is kept here, and the pending list shows the sub-run's
calls in its place, with their `agent_path`.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.errors import ApprovalPendingError, ConfigError
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    PendingApproval,
    TextContent,
    ToolApproval,
    ToolCall,
    ToolResultMessage,
)
from yiemagent.types.messages import message_from_dict, message_to_dict

__all__ = ["HeldCalls", "NestedHold", "check_reason"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class NestedHold:
    """A sub-agent's run held for approval inside one of the parent's tool calls."""

    agent_path: tuple[str, ...]
    """The agents' names from the outermost down to the sub-agent."""
    messages: list[AgentMessage]
    """The sub-run's transcript, ending with its held calls."""
    held: HeldCalls
    """The sub-run's held calls and the decisions on them."""


def check_reason(reason: object) -> str | None:
    """A rejection's reason, checked before anything is recorded: None or text that can be
    stored (UTF-8: no lone surrogate).

    Raises:
        ConfigError: anything else; the text says what was given.
    """
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise ConfigError(f"reject(): reason must be a string or None, not {type(reason).__name__}")
    try:
        reason.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"reject(): reason is not valid text (character {exc.start} cannot be stored)"
        ) from None
    return reason


class HeldCalls:
    """Held tool-call ids in call order, and their decisions. Event-loop thread only.

    `nested` maps the id of a held call that runs a sub-agent to that sub-run's hold.
    `resuming`: read from the record a resume stores when it starts (`resuming_record`):
    the decisions were applied, so nothing is pending; a session opened after a crash
    answers the calls still without a result from it (`decided_result`)."""

    __slots__ = ("decisions", "ids", "nested", "resuming")

    def __init__(
        self,
        ids: Sequence[str] = (),
        decisions: Mapping[str, ToolApproval] | None = None,
        nested: Mapping[str, NestedHold] | None = None,
        *,
        resuming: bool = False,
    ) -> None:
        self.ids: list[str] = list(ids)
        self.decisions: dict[str, ToolApproval] = dict(decisions or {})
        self.nested: dict[str, NestedHold] = dict(nested or {})
        self.resuming = resuming

    # ── reading ────────────────────────────────────────────────────────────

    def pending(self, messages: Sequence[AgentMessage]) -> list[PendingApproval]:
        """The held calls still without a result, in call order, with their decisions."""
        if not self.ids or self.resuming:
            return []
        held = _held(messages)
        if held is None:
            return []
        message, calls = held
        wanted = set(self.ids)
        pending: list[PendingApproval] = []
        for call in calls:
            if call.id not in wanted:
                continue
            sub = self.nested.get(call.id)
            if sub is not None:  # the sub-run's own held calls stand in for this one
                pending.extend(
                    p if p.agent_path else dataclasses.replace(p, agent_path=sub.agent_path)
                    for p in sub.held.pending(sub.messages)
                )
                continue
            arguments = dict(call.arguments) if isinstance(call.arguments, dict) else {}
            pending.append(
                PendingApproval(call.id, call.name, arguments, message, self.decisions.get(call.id))
            )
        return pending

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

    def hold(
        self, messages: Sequence[AgentMessage], nested: Mapping[str, NestedHold] | None = None
    ) -> None:
        """After a run ended "awaiting_approval": every call of the last assistant message
        without a result is held (decisions taken before are dropped); `nested`: the holds
        of the sub-agents some of those calls ran."""
        held = _held(messages)
        self.ids = [] if held is None else [call.id for call in held[1]]
        self.decisions = {}
        self.nested = {k: v for k, v in (nested or {}).items() if k in self.ids}

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
        for sub in self.nested.values():
            if any(p.tool_call_id == call_id for p in sub.held.pending(sub.messages)):
                sub.held.decide(sub.messages, call_id, decision)
                return
        self.decisions[call_id] = decision

    def resume_decisions(self) -> dict[str, ToolApproval]:
        """The decisions a resumed run applies: the agent's own, and an approval for each
        call whose sub-agent is held (running it again continues the sub-run)."""
        decisions = dict(self.decisions)
        for call_id in self.nested:
            decisions[call_id] = ToolApproval(True)
        return decisions

    def undecided(self, messages: Sequence[AgentMessage]) -> list[PendingApproval]:
        """The pending calls that have no decision yet."""
        return [p for p in self.pending(messages) if p.decision is None]

    def clear(self) -> None:
        """Hold nothing and forget every decision (`reset`, or a resumed run applied them)."""
        self.ids = []
        self.decisions = {}
        self.nested = {}

    # ── the stored record ──────────────────────────────────────────────────

    def to_record(self) -> str | None:
        """The record as JSON (`None` when nothing is held)."""
        if not self.ids:
            return None
        return json.dumps(self._data())

    def resuming_record(self) -> str | None:
        """The record a resume stores as it starts, instead of deleting the held calls: the
        decisions it applies, marked `resuming` (`None` when nothing is held). After a crash
        during the resume, it still decides each call left without a result: a rejected
        call gets its rejection, an approved one is never run again (at most once)."""
        if not self.ids:
            return None
        decisions = {
            call_id: {"approved": d.approved, "reason": d.reason}
            for call_id, d in self.resume_decisions().items()
        }
        return json.dumps(
            {"version": 1, "held": self.ids, "decisions": decisions, "resuming": True}
        )

    def decided_result(self, interrupted: ToolResultMessage) -> ToolResultMessage:
        """The result of a call a crashed resume left without one: its rejection when it
        was rejected, else `interrupted` (the "No result: ..." repair)."""
        from yiemagent.loop._tool_calls import rejected_text

        decision = self.decisions.get(interrupted.tool_call_id)
        if decision is None or decision.approved:
            return interrupted
        text = rejected_text(decision)
        return dataclasses.replace(interrupted, content=[TextContent(text)], is_error=True)

    def _data(self) -> dict[str, Any]:
        decisions = {
            call_id: {"approved": d.approved, "reason": d.reason}
            for call_id, d in self.decisions.items()
        }
        data: dict[str, Any] = {"version": 1, "held": self.ids, "decisions": decisions}
        if self.nested:
            data["nested"] = {
                call_id: {
                    "agent_path": list(sub.agent_path),
                    "messages": [message_to_dict(m) for m in sub.messages],
                    "held": sub.held._data(),
                }
                for call_id, sub in self.nested.items()
            }
        return data

    @classmethod
    def from_record(cls, text: str | None) -> HeldCalls:
        """The record `to_record` wrote; an unreadable one is logged and ignored."""
        if not text:
            return cls()
        try:
            return cls._from_data(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("ignoring an unreadable record of held tool calls: %s", exc)
            return cls()

    @classmethod
    def _from_data(cls, data: Any) -> HeldCalls:
        ids = [str(i) for i in data["held"]]
        decisions = {
            str(k): ToolApproval(bool(v["approved"]), v.get("reason"))
            for k, v in dict(data.get("decisions") or {}).items()
        }
        nested = {
            str(k): NestedHold(
                tuple(str(name) for name in v["agent_path"]),
                [message_from_dict(m) for m in v["messages"]],
                cls._from_data(v["held"]),
            )
            for k, v in dict(data.get("nested") or {}).items()
        }
        return cls(ids, decisions, nested, resuming=bool(data.get("resuming")))


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
