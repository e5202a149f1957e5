"""What a results file holds, in numbers (`yiem batch --summary`, DESIGN §16): counts by
status, failures by reason, tokens, cost and time."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from os import PathLike

from yiemagent.batch._results import read_results

__all__ = ["BatchSummary", "summarize_results"]


@dataclass(slots=True)
class BatchSummary:
    """Totals over a results file."""

    tasks: int = 0
    """Ids in the file."""
    by_status: dict[str, int] = field(default_factory=dict)
    """"ok", "error", "timeout", "held", "interrupted" → count."""
    failures: dict[str, int] = field(default_factory=dict)
    """`error_kind` → count, over the tasks that did not end "ok", most frequent first."""
    examples: dict[str, str] = field(default_factory=dict)
    """`error_kind` → the error text of its first task."""
    input_tokens: int = 0
    """The tasks' `usage["input"]` summed (prompt tokens not read from a cache)."""
    output_tokens: int = 0
    reasoning_tokens: int = 0
    """The tasks' `usage["reasoning"]` summed (output tokens spent reasoning)."""
    cache_read_tokens: int = 0
    """The tasks' `usage["cache_read"]` summed (prompt tokens read from a cache)."""
    cache_write_tokens: int = 0
    """The tasks' `usage["cache_write"]` summed (prompt tokens written to a cache)."""
    total_tokens: int = 0
    """The tasks' `usage["total_tokens"]` summed (cache reads and writes included)."""
    cost_usd: float = 0.0
    """USD over every task's model calls."""
    attempts: int = 0
    """Attempts over all tasks (retries included)."""
    task_seconds: float = 0.0
    """Sum of the tasks' durations, seconds (not wall time: tasks overlap)."""

    def lines(self) -> list[str]:
        """The summary as the lines `yiem batch --summary` prints."""
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(self.by_status.items()))
        out = [f"tasks: {self.tasks} ({statuses or 'none'})"]
        if self.failures:
            out.append("failures by reason:")
            for kind, count in self.failures.items():
                out.append(f"  {kind}: {count}  e.g. {self.examples.get(kind, '')}")
        reasoning = self.reasoning_tokens
        out.append(
            f"tokens: {self.total_tokens} (input {self.input_tokens}, output "
            f"{self.output_tokens}, cache read {self.cache_read_tokens}, cache write "
            f"{self.cache_write_tokens})"
            + (f"; reasoning {reasoning} of the output" if reasoning else "")
        )
        out.append(f"cost: ${self.cost_usd:.6f}")
        out.append(f"attempts: {self.attempts}; task time: {self.task_seconds:.1f} s")
        return out


def summarize_results(path: str | PathLike[str]) -> BatchSummary:
    """Summarise a results file (read only; a torn last line is ignored).

    Raises:
        BatchError: the file is missing or holds a line that is not a result.
    """
    summary = BatchSummary()
    statuses: Counter[str] = Counter()
    failures: Counter[str] = Counter()
    for result in read_results(path):
        summary.tasks += 1
        statuses[result.status] += 1
        if result.status != "ok":
            kind = result.error_kind or result.status
            failures[kind] += 1
            summary.examples.setdefault(kind, (result.error or "")[:160])
        summary.input_tokens += result.usage.get("input", 0)
        summary.output_tokens += result.usage.get("output", 0)
        summary.reasoning_tokens += result.usage.get("reasoning", 0)
        summary.cache_read_tokens += result.usage.get("cache_read", 0)
        summary.cache_write_tokens += result.usage.get("cache_write", 0)
        summary.total_tokens += result.usage.get("total_tokens", 0)
        summary.cost_usd += result.cost_usd
        summary.attempts += result.attempts
        summary.task_seconds += result.duration_s
    summary.by_status = dict(statuses)
    summary.failures = dict(failures.most_common())
    return summary
