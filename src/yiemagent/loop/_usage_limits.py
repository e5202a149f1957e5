"""What a run has spent, checked against its `UsageLimits` (DESIGN §13).

One `UsageMeter` per run that has limits (a run without them has none, and pays nothing).
The loop adds each model call's usage and each tool result's usage; `reached()` (tokens and
cost) is asked before each model call and after each batch, `refuse_tool_call()` before each
tool call runs; `refused` remembers the first call a limit refused. Each gives None or the
text that names the limit and the amount used. The tool-call cap never stops a model call:
the run ends for it only once a call over the cap was refused.
"""

from __future__ import annotations

from yiemagent.types import AgentToolResult, Usage, UsageLimits

__all__ = ["UsageMeter", "limit_text"]


def limit_text(what: str) -> str:
    """The error text of a run stopped by a limit: `usage limit reached: <what>`."""
    return f"usage limit reached: {what}"


class UsageMeter:
    """A run's spending so far: tokens (input includes cache reads and writes), USD, calls."""

    __slots__ = ("cost_usd", "input_tokens", "limits", "output_tokens", "refused", "tool_calls")

    def __init__(self, limits: UsageLimits) -> None:
        self.limits = limits
        self.refused: str | None = None
        """The limit that refused a tool call, described (the first one)."""
        self.input_tokens = 0
        self.output_tokens = 0
        self.cost_usd = 0.0
        self.tool_calls = 0

    def add(self, usage: Usage | None) -> None:
        """Count one model call's (or tool result's) usage."""
        if usage is None:
            return
        self.input_tokens += usage.input + usage.cache_read + usage.cache_write
        self.output_tokens += usage.output
        self.cost_usd += usage.cost.total

    def add_result(self, result: AgentToolResult) -> None:
        """Count the usage a tool reported in its result (a sub-agent's tokens)."""
        self.add(result.usage)

    def reached(self) -> str | None:
        """The limit on tokens or cost the run has reached, described; None if none."""
        limits = self.limits
        total = self.input_tokens + self.output_tokens
        checks = (
            ("max_input_tokens", limits.max_input_tokens, self.input_tokens, "input tokens"),
            ("max_output_tokens", limits.max_output_tokens, self.output_tokens, "output tokens"),
            ("max_total_tokens", limits.max_total_tokens, total, "tokens"),
        )
        for name, cap, used, unit in checks:
            if cap is not None and used >= cap:
                return f"{name}={cap} (used {used} {unit})"
        cap_usd = limits.max_cost_usd
        if cap_usd is not None and self.cost_usd > 0 and self.cost_usd >= cap_usd:
            return f"max_cost_usd={cap_usd:g} (used ${self.cost_usd:.6f})"
        return None

    def refuse_tool_call(self) -> str | None:
        """None and the call is counted, or the error result text of a call not run."""
        reached = self.reached()
        cap = self.limits.max_tool_calls
        if reached is None and cap is not None and self.tool_calls >= cap:
            reached = f"max_tool_calls={cap} (used {self.tool_calls} tool calls)"
        if reached is not None:
            if self.refused is None:
                self.refused = reached
            return f"not executed: {limit_text(reached)}"
        self.tool_calls += 1
        return None
