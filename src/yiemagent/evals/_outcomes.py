"""What one case's runs came to: each check's verdict with its reason (`CheckOutcome`),
each run (`RunReport`), the case over its runs (`CaseReport`) with pass@k and pass^k.

pass@k is the chance that at least one of k runs drawn from a case's n runs passes, pass^k
that all k pass; both are the unbiased estimators from the n runs with c passing:
pass@k = 1 - C(n-c, k) / C(n, k) (Chen et al. 2021, "Evaluating Large Language Models
Trained on Code") and pass^k = C(c, k) / C(n, k) (Yao et al. 2024, τ-bench).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from math import comb, isfinite
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.types.messages import AgentMessage

__all__ = ["CaseReport", "CheckOutcome", "RunReport", "pass_all_k", "pass_at_k"]


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased pass@k estimate from `n` runs of which `c` passed.

    Raises:
        ValueError: not 0 <= c <= n and 1 <= k <= n.
    """
    _check_counts(n, c, k)
    total = comb(n, k)
    return (total - comb(n - c, k)) / total  # integers until the one division


def pass_all_k(n: int, c: int, k: int) -> float:
    """The unbiased pass^k estimate (all of k runs pass) from `n` runs, `c` passed.

    Raises:
        ValueError: not 0 <= c <= n and 1 <= k <= n.
    """
    _check_counts(n, c, k)
    return comb(c, k) / comb(n, k)


def _check_counts(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


@dataclass(slots=True, frozen=True)
class CheckOutcome:
    """A check's verdict as the report records it, under the check's name: a run's
    `CheckResult` (`RunReport.checks`; also "run" for a run that gave no answer), or the
    check over a case's runs (`CaseReport.checks`: passed when it passed in every run).
    Read back from a report's JSON form, it has no tokens or cost."""

    name: str
    """The check's name (`check_name`); "run" for a run that failed before any check."""
    passed: bool
    reason: str = ""
    """Why it failed (or what it saw), one line; over several runs a failure says in how
    many runs it failed."""
    tokens: int = 0
    """Tokens the check itself spent (a `judge`'s model calls); 0 over a case's runs."""
    cost_usd: float = 0.0
    """USD the check itself spent (a `judge`'s model calls); 0 over a case's runs."""


@dataclass(slots=True)
class RunReport:
    """One run of a case."""

    repeat: int
    """0 for the first run of the case, 1 for the second, …"""
    passed: bool
    """Every check passed (and the run ended "ok")."""
    checks: list[CheckOutcome]
    """The checks in the case's order, after a "run" outcome when the run failed."""
    text: str = ""
    """The final answer's text ("" when the run gave none)."""
    tokens: int = 0
    """Tokens over every model call of the run (input, output and cache)."""
    cost_usd: float = 0.0
    """USD the run's model calls cost."""
    seconds: float = 0.0
    """Wall-clock seconds of the run."""
    status: str = "ok"
    """The batch status: "ok", "error", "timeout" or "interrupted"."""
    error: str | None = None
    """What went wrong when `status` is not "ok"."""
    end_reason: str | None = None
    """The run's `agent_end` reason ("stop", "max_turns", "error", …)."""
    messages: list[AgentMessage] = field(default_factory=list)
    """The run's messages (its timeline); not in the JSON form."""
    sub_agent_runs: dict[tuple[tuple[str, ...], tuple[str, ...]], list[AgentMessage]] = field(
        default_factory=dict
    )
    """Its sub-agents' runs (`EvalRun.sub_agent_runs`), lanes of its timeline; not in the
    JSON form."""

    @property
    def judge_tokens(self) -> int:
        """Tokens its checks spent grading it (a `judge`'s model calls), not in `tokens`."""
        return sum(check.tokens for check in self.checks)

    @property
    def judge_cost_usd(self) -> float:
        """USD its checks spent grading it (a `judge`'s model calls), not in `cost_usd`."""
        return sum(check.cost_usd for check in self.checks)


@dataclass(slots=True)
class CaseReport:
    """One case over its runs. It passes when every run passed."""

    name: str
    """The case's name."""
    passed: bool
    """Every run passed."""
    checks: list[CheckOutcome]
    """Each check over the runs: passed when it passed in every run; the reason is the
    first failing run's (with how many runs failed it), else the first run's."""
    runs: list[RunReport]
    pass_at_k: dict[int, float]
    """pass@k for k = 1 … len(runs)."""
    pass_all_k: dict[int, float]
    """pass^k for k = 1 … len(runs)."""
    tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0
    """Tokens, USD and wall-clock seconds, summed over the runs."""
    input: str = ""
    """The case's prompt (shown on the HTML page; not in the JSON form)."""
    runs_read: int = 0
    """How many runs a case read back from the JSON form had (the runs themselves are not
    in it, so `runs` is empty); `to_json` writes it again."""

    @property
    def judge_tokens(self) -> int:
        """Tokens its checks spent grading its runs (a `judge`'s model calls)."""
        return sum(run.judge_tokens for run in self.runs)

    @property
    def judge_cost_usd(self) -> float:
        """USD its checks spent grading its runs (a `judge`'s model calls)."""
        return sum(run.judge_cost_usd for run in self.runs)

    @classmethod
    def from_runs(cls, name: str, runs: Sequence[RunReport], *, input: str = "") -> CaseReport:
        """The case's report from its runs (at least one)."""
        n = len(runs)
        c = sum(run.passed for run in runs)
        return cls(
            name=name,
            passed=c == n,
            checks=_merge_checks(runs),
            runs=list(runs),
            pass_at_k={k: pass_at_k(n, c, k) for k in range(1, n + 1)},
            pass_all_k={k: pass_all_k(n, c, k) for k in range(1, n + 1)},
            tokens=sum(run.tokens for run in runs),
            cost_usd=sum(run.cost_usd for run in runs),
            seconds=sum(run.seconds for run in runs),
            input=input,
        )

    def to_json(self) -> dict[str, Any]:
        """The case's object in `EvalReport.to_json()`."""
        return {
            "name": self.name,
            "passed": self.passed,
            "checks": [
                {"name": c.name, "passed": c.passed, "reason": c.reason} for c in self.checks
            ],
            "runs": len(self.runs) if self.runs else self.runs_read,
            "pass_at_k": {str(k): round(v, 6) for k, v in self.pass_at_k.items()},
            "pass_all_k": {str(k): round(v, 6) for k, v in self.pass_all_k.items()},
            "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_json(cls, raw: Any, *, source: str, index: int) -> CaseReport:
        """The case `to_json` wrote, read back without its runs (`runs` empty, their number
        in `runs_read`); a check or pass@k entry that is not one is left out.

        Raises:
            ConfigError: `raw` (`cases[index]` of `source`) has no text `name`, no
                true/false `passed`, or a `runs`, `tokens`, `cost_usd` or `seconds` that is
                not a number >= 0 (whole for the counts); the text names `source`, the
                case and the field.
        """
        if not isinstance(raw, Mapping):
            raise ConfigError(f"{source}: cases[{index}] is {_json_kind(raw)}, not an object")
        name = raw.get("name")
        if name is None:
            raise ConfigError(f"{source}: cases[{index}]: no 'name'")
        if not isinstance(name, str):
            raise ConfigError(
                f"{source}: cases[{index}]: 'name' is {_json_kind(name)}, where the case's "
                "name, a text, is expected"
            )
        if not isinstance(raw.get("passed"), bool):
            raise ConfigError(f"{source}: case {raw['name']!r}: 'passed' is not true/false")
        checks = [
            CheckOutcome(str(c.get("name", "")), bool(c.get("passed")), str(c.get("reason", "")))
            for c in raw.get("checks") or []
            if isinstance(c, Mapping)
        ]
        where = f"{source}: case {raw['name']!r}"
        return cls(
            name=raw["name"],
            passed=raw["passed"],
            checks=checks,
            runs=[],
            pass_at_k=_k_map(raw.get("pass_at_k")),
            pass_all_k=_k_map(raw.get("pass_all_k")),
            tokens=int(_amount(raw, "tokens", where, whole=True)),
            cost_usd=_amount(raw, "cost_usd", where),
            seconds=_amount(raw, "seconds", where),
            runs_read=int(_amount(raw, "runs", where, whole=True)),
        )


def _json_kind(value: object) -> str:
    """What JSON value `value` is, as a message says it: "the number 3", "true", "a text",
    "a list", "an object", "null"."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"the number {json.dumps(value)}"
    if isinstance(value, str):
        return "a text"
    return "a list" if isinstance(value, list) else "an object"


def _amount(raw: Mapping[str, Any], key: str, where: str, *, whole: bool = False) -> float:
    """`raw[key]` as a finite number >= 0 (0 when absent or null; `whole`: a whole one).

    Raises:
        ConfigError: it is something else, `where` and `key` named.
    """
    value = raw.get(key)
    if value is None:
        return 0.0
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not isfinite(value)
        or value < 0
        or (whole and not float(value).is_integer())
    ):
        kind = "whole number" if whole else "number"
        raise ConfigError(f"{where}: {key!r} is not a {kind} >= 0")
    return value if whole else float(value)  # a count stays exact past 2**53


def _merge_checks(runs: Sequence[RunReport]) -> list[CheckOutcome]:
    """The case's checks over its runs: a failed run ("run") first, then each check by its
    place in the case, so two checks of one name (two lambdas) stay two."""
    failures = [run.checks[0] for run in runs if run.status != "ok" and run.checks]
    per_run = [run.checks[1:] if run.status != "ok" else run.checks for run in runs]
    merged = [_merged("run", failures, len(runs))] if failures else []
    for place in range(max((len(checks) for checks in per_run), default=0)):
        seen = [checks[place] for checks in per_run if place < len(checks)]
        merged.append(_merged(seen[0].name, seen, len(runs)))
    return merged


def _merged(name: str, seen: Sequence[CheckOutcome], runs: int) -> CheckOutcome:
    """One check over `runs` runs from its outcomes `seen`: passed when none failed."""
    failed = [o for o in seen if not o.passed]
    if not failed:
        return CheckOutcome(name, True, seen[0].reason)
    if runs == 1:
        return failed[0]
    why = f": {failed[0].reason}" if failed[0].reason else ""
    return CheckOutcome(name, False, f"failed {len(failed)}/{runs} runs{why}")


def _k_map(raw: Any) -> dict[int, float]:
    """A `pass_at_k` / `pass_all_k` object of the JSON form (k as text) with int keys; an
    entry that is not a number is left out."""
    if not isinstance(raw, Mapping):
        return {}
    out: dict[int, float] = {}
    for key, value in raw.items():
        try:
            out[int(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return out
