"""What a run has spent, checked against its `UsageLimits` (DESIGN §13).

One `UsageMeter` per run that has limits (a run without them has none, and pays nothing).
The loop adds each model call's usage and each tool result's usage; `reached()` (tokens and
cost) is asked before each model call and after each batch, `refuse_tool_call()` before each
tool call runs; `refused` remembers the first call a limit refused. Each gives None or the
text that names the limit and the amount used. The tool-call cap never stops a model call:
the run ends for it only once a call over the cap was refused.

Nested runs (a sub-agent run by a tool call) share their enclosing runs' budgets live: while
a call runs, its `CallUsage` is current (a context variable), a meter made inside the call
adds everything it counts to it, and the enclosing meter counts what its running calls have
spent so far (tokens, USD and tool calls), so parallel sub-runs see each other's spending,
not only the budget left when they started. A nested meter's `reached()` and tool-call cap
also ask the enclosing one. When the call ends, its result's usage replaces what was counted
live (never counted twice); a result without usage (a call cut off by its timeout or an
abort) keeps the live count; the nested tool calls stay counted. A call that resumes a
sub-run held for approval says what the sub-run spent before (`count_spent_before`): the
held run counted that, and the result, which carries the sub-run's total, counts the rest.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from yiemagent.types import AgentTool, AgentToolResult, AssistantMessage, Usage, UsageLimits

logger = logging.getLogger(__name__)

__all__ = [
    "CallUsage",
    "UsageMeter",
    "count_spending",
    "count_spent_before",
    "counts_as_tool_call",
    "current_call_usage",
    "limit_text",
    "not_a_tool_call",
    "preparing_call",
    "preparing_spent",
]


def limit_text(what: str) -> str:
    """The error text of a run stopped by a limit: `usage limit reached: <what>`."""
    return f"usage limit reached: {what}"


class CallUsage:
    """What the runs nested in one tool call have spent so far, counted live in the meter of
    the run that made the call (`UsageMeter.start_call`); ignored once the call has ended."""

    __slots__ = (
        "before",
        "cost_usd",
        "ended",
        "input_tokens",
        "meter",
        "output_tokens",
        "tool_calls",
    )

    def __init__(self, meter: UsageMeter) -> None:
        self.meter = meter
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.tool_calls = 0
        self.ended = False
        self.before: Usage | None = None
        """What the call's result includes that an earlier run spent and counted."""

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        """Count spending of a run nested in the call (and pass it further out)."""
        if self.ended:  # a straggler after the call's end (a tool abandoned on a thread)
            return
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost_usd += cost_usd
        self.meter.add_running(input_tokens, output_tokens, cost_usd)

    def add_call(self) -> None:
        """Count a tool call a run nested in the call has run (and pass it further out)."""
        if self.ended:
            return
        self.tool_calls += 1
        meter = self.meter
        meter.running_calls += 1
        if meter.outer is not None:
            meter.outer.add_call()


current_call_usage: ContextVar[CallUsage | None] = ContextVar("yiemagent_call_usage", default=None)
"""The tool call running in this context, when its run has a meter."""

preparing_call: ContextVar[UsageMeter | None] = ContextVar("yiemagent_preparing", default=None)
"""The meter of the run whose model call is being made in this context (its
`transform_context` runs here)."""

preparing_spent: ContextVar[Usage | None] = ContextVar("yiemagent_preparing_spent", default=None)
"""What preparing the model call made in this context has spent so far (added in place; the
call's message gets it as `compaction_usage`)."""


def count_spent_before(usage: Usage) -> None:
    """Say that the result of the tool call running in this context will include `usage`,
    spent by an earlier run that counted it: a sub-run held for approval in that run and
    resumed in this one. This run's limits count only the rest of the result's usage.
    Nothing outside a call of a run with limits."""
    call = current_call_usage.get()
    if call is not None and not call.ended:
        call.before = usage


def count_spending(usage: Usage | None) -> None:
    """Count `usage` as spent preparing the model call being made in this context: what a
    `transform_context` spends calling a model of its own (a `Compactor`'s summary). It
    counts against the run's `UsageLimits`, and the call's message carries it as
    `compaction_usage`, so the run's reported usage has it too. Nothing outside a model
    call."""
    if usage is None:
        return
    spent = preparing_spent.get()
    if spent is not None:
        spent.add(usage)
    meter = preparing_call.get()
    if meter is not None:
        meter.add(usage)


class UsageMeter:
    """A run's spending so far: tokens (input includes cache reads and writes), USD, calls.

    Made inside a tool call of a run that has a meter (`current_call_usage`), it is that
    call's nested run: what it counts is counted live in the enclosing meter too, and the
    enclosing run's limits apply to it as well.
    """

    __slots__ = (
        "cost_usd",
        "input_tokens",
        "limits",
        "outer",
        "output_tokens",
        "refused",
        "running",
        "running_calls",
        "tool_calls",
    )

    def __init__(self, limits: UsageLimits) -> None:
        self.limits = limits
        self.refused: str | None = None
        """The limit that refused a tool call, described (the first one)."""
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.tool_calls = 0
        self.running = [0, 0, 0.0]
        """What the run's calls still running have spent (input, output, USD)."""
        self.running_calls = 0
        """The tool calls the runs nested in its running calls have run."""
        self.outer = current_call_usage.get()
        """The enclosing run's call this run is nested in, if any."""

    def add_reply(self, message: AssistantMessage) -> None:
        """Count one model call's usage. Under a cost cap, a call that used tokens but cost
        nothing, made to a model that does not run here, is said once per model: its price
        is unknown (a hosted model the price database does not list, a `Model` made by
        hand), so it counts as free and the cap would never stop it."""
        usage = message.usage
        self.add(usage)
        if (
            self.limits.max_cost_usd is not None
            and not usage.cost.total
            and (usage.prompt_tokens or usage.output)
            and message.api not in ("local", "faux")
        ):
            _say_unpriced(message.provider, message.model)

    def add(self, usage: Usage | None) -> None:
        """Count one model call's (or tool result's) usage."""
        if usage is None:
            return
        self._count(usage.prompt_tokens, usage.output, usage.cost.total)

    def _count(self, input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cost_usd += cost_usd
        if self.outer is not None:
            self.outer.add(input_tokens, output_tokens, cost_usd)

    def add_running(self, input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        """Count spending of a call still running (`CallUsage.add`), and pass it further out."""
        running = self.running
        running[0] += input_tokens
        running[1] += output_tokens
        running[2] += cost_usd
        if self.outer is not None:
            self.outer.add(input_tokens, output_tokens, cost_usd)

    def start_call(self) -> CallUsage:
        """A tool call of this run starts: what runs nested in it spend is counted live."""
        return CallUsage(self)

    def add_result(self, result: AgentToolResult, call: CallUsage | None = None) -> None:
        """Count the usage a tool reported in its result (a sub-agent's tokens); `call`, the
        call's live count, is replaced by it. A result without usage (a call cut off by
        its timeout or an abort) keeps what was counted live."""
        if call is None or call.ended:
            self.add(result.usage)
            return
        call.ended = True
        running = self.running
        running[0] -= call.input_tokens
        running[1] -= call.output_tokens
        running[2] -= call.cost_usd
        self.running_calls -= call.tool_calls
        self.tool_calls += call.tool_calls  # they ran: they stay counted
        usage = result.usage
        before = call.before
        if usage is None:
            spent = (call.input_tokens, call.output_tokens, call.cost_usd)
        elif before is None:
            spent = (usage.prompt_tokens, usage.output, usage.cost.total)
        else:
            spent = (
                max(0, usage.prompt_tokens - before.prompt_tokens),
                max(0, usage.output - before.output),
                max(0.0, usage.cost.total - before.cost.total),
            )
        self.input_tokens += spent[0]
        self.output_tokens += spent[1]
        self.cost_usd += spent[2]
        if self.outer is not None:  # only what was not passed out live already
            self.outer.add(spent[0] - call.input_tokens, spent[1] - call.output_tokens,
                           spent[2] - call.cost_usd)  # fmt: skip

    def reached(self) -> str | None:
        """The limit on tokens or cost the run (or a run it is nested in) has reached,
        described; None if none."""
        limits = self.limits
        input_tokens = self.input_tokens + self.running[0]
        output_tokens = self.output_tokens + self.running[1]
        cost_usd = self.cost_usd + self.running[2]
        total = input_tokens + output_tokens
        checks = (
            ("max_input_tokens", limits.max_input_tokens, input_tokens, "input tokens"),
            ("max_output_tokens", limits.max_output_tokens, output_tokens, "output tokens"),
            ("max_total_tokens", limits.max_total_tokens, total, "tokens"),
        )
        for name, cap, used, unit in checks:
            if cap is not None and used >= cap:
                return f"{name}={cap} (used {used} {unit})"
        cap_usd = limits.max_cost_usd
        if cap_usd is not None and cost_usd > 0 and cost_usd >= cap_usd:
            return f"max_cost_usd={cap_usd:g} (used ${cost_usd:.6f})"
        outer = self.outer
        if outer is not None and not outer.ended:  # a run outliving its call is on its own
            return outer.meter.reached()
        return None

    def refuse_tool_call(self, *, counted: bool = True) -> str | None:
        """None and the call is counted (here and in the runs it is nested in), or the
        error result text of a call not run. `counted=False`: a call `max_tool_calls` does
        not count (`not_a_tool_call`), refused only by a token or cost limit."""
        reached = self.reached() or (self._calls_reached() if counted else None)
        if reached is not None:
            if self.refused is None:
                self.refused = reached
            return f"not executed: {limit_text(reached)}"
        if counted:
            self.tool_calls += 1
            if self.outer is not None:
                self.outer.add_call()
        return None

    def _calls_reached(self) -> str | None:
        """The tool-call cap reached here or in a run this one is nested in, described."""
        cap = self.limits.max_tool_calls
        used = self.tool_calls + self.running_calls
        if cap is not None and used >= cap:
            return f"max_tool_calls={cap} (used {used} tool calls)"
        outer = self.outer
        return outer.meter._calls_reached() if outer is not None and not outer.ended else None


_not_tool_calls: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()
"""The `execute` of each tool marked by `not_a_tool_call`."""


def not_a_tool_call(tool: AgentTool) -> AgentTool:
    """Mark `tool` as one whose calls `UsageLimits.max_tool_calls` does not count, and
    return it: a handoff's transfer, which acts on the run (who speaks next), not on the
    world, and which `max_handoffs` bounds. A reached token or cost limit still refuses
    its calls, as it refuses every call. The mark is on the tool's `execute` (a function),
    so a copy of the tool keeps it."""
    _not_tool_calls.add(tool.execute)
    return tool


def counts_as_tool_call(tool: AgentTool) -> bool:
    """Whether a call of `tool` counts toward `max_tool_calls` (see `not_a_tool_call`)."""
    try:
        return tool.execute not in _not_tool_calls
    except TypeError:  # an `execute` that takes no weak reference was never marked
        return True


_unpriced_said: set[tuple[str, str]] = set()
_unpriced_lock = threading.Lock()


def _say_unpriced(provider: str, model: str) -> None:
    with _unpriced_lock:
        if (provider, model) in _unpriced_said:
            return
        _unpriced_said.add((provider, model))
    logger.warning(
        "UsageLimits.max_cost_usd: no price is known for %s/%s, so its calls count as free "
        "and the cost cap does not stop them (give the Model a cost, or install "
        "genai-prices for the catalogue's models)",
        provider,
        model,
    )
