"""`UsageLimits`: caps on what one run may spend (DESIGN §13)."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from yiemagent.errors import ConfigError

__all__ = ["UsageLimits"]


@dataclass(slots=True, frozen=True, kw_only=True)
class UsageLimits:
    """Most tokens, USD and tool calls one run may use; None means no cap.

    The loop checks them before each model call and before each tool call (so a limit
    reached mid-batch skips the calls after it, each answered with an error result)
    and after each batch. A limit is reached once the run has used that much: a model call
    already under way finishes (its usage may go past the cap), then the run ends with
    `AgentEndEvent.reason == "usage_limit"` and an assistant message (stop reason "error")
    whose `error_message` names the limit and the amount used. Tokens count the run's
    model calls and the `usage` of its tool results; input tokens include cache reads and
    writes.

    Raises:
        ConfigError: a value that is no number (a count that is not a whole number, a cost
            that is not a real number: a string, a bool, NaN), or a negative one.
    """

    max_input_tokens: int | None = None
    """Input (prompt) tokens, cached ones included."""
    max_output_tokens: int | None = None
    """Output (completion) tokens."""
    max_total_tokens: int | None = None
    """Input plus output tokens."""
    max_cost_usd: float | None = None
    """Cost in USD, from the models' prices (free calls never reach it: `0` allows only
    free models)."""
    max_tool_calls: int | None = None
    """Tool calls run, those of sub-agents run as tools included (calls refused by a limit
    are not counted)."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            whole = f.name != "max_cost_usd"
            if (
                isinstance(value, bool)
                or not isinstance(value, int if whole else int | float)
                or (isinstance(value, float) and math.isnan(value))
            ):
                kind = "a whole number" if whole else "a number of USD"
                raise ConfigError(f"UsageLimits.{f.name} must be {kind} or None, not {value!r}")
            if value < 0:
                raise ConfigError(f"UsageLimits.{f.name} must be >= 0, not {value!r}")
