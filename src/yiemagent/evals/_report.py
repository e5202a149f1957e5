"""`EvalReport`: per case and check pass or fail with the reason, pass@k and pass^k over
repeats, tokens, cost and seconds; its JSON form, its HTML page, and `compare` against a
baseline."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.evals._outcomes import CaseReport

__all__ = ["Comparison", "EvalReport"]


@dataclass(slots=True, frozen=True)
class Comparison:
    """A report against a baseline, by case name."""

    regressions: list[str]
    """Cases that passed in the baseline and fail now."""
    fixes: list[str]
    """Cases that failed in the baseline and pass now."""
    new: list[str] = field(default_factory=list)
    """Cases not in the baseline."""
    missing: list[str] = field(default_factory=list)
    """Baseline cases not in this report."""


@dataclass(slots=True)
class EvalReport:
    """What `run_eval` found, case by case."""

    cases: list[CaseReport]
    """One report a case, in the dataset's order."""
    repeat: int = 1
    """Runs a case (`run_eval`'s `repeat`)."""

    @property
    def passed(self) -> int:
        """Cases that passed (every run)."""
        return sum(case.passed for case in self.cases)

    @property
    def failed(self) -> int:
        """Cases with a failing run."""
        return len(self.cases) - self.passed

    @property
    def tokens(self) -> int:
        """Tokens the cases' runs spent (a judge's apart: `judge_tokens`)."""
        return sum(case.tokens for case in self.cases)

    @property
    def cost_usd(self) -> float:
        """USD the cases' runs spent (a judge's apart: `judge_cost_usd`)."""
        return sum(case.cost_usd for case in self.cases)

    @property
    def judge_tokens(self) -> int:
        """Tokens the checks spent grading (a `judge`'s model calls), apart from `tokens`;
        0 for a report read back from JSON, whose form does not hold it."""
        return sum(case.judge_tokens for case in self.cases)

    @property
    def judge_cost_usd(self) -> float:
        """USD the checks spent grading (a `judge`'s model calls), apart from `cost_usd`."""
        return sum(case.judge_cost_usd for case in self.cases)

    def mean_pass_at_k(self, k: int) -> float:
        """pass@k averaged over the cases (0.0 without cases)."""
        values = [c.pass_at_k[k] for c in self.cases if k in c.pass_at_k]
        return sum(values) / len(values) if values else 0.0

    def mean_pass_all_k(self, k: int) -> float:
        """pass^k averaged over the cases (0.0 without cases)."""
        values = [c.pass_all_k[k] for c in self.cases if k in c.pass_all_k]
        return sum(values) / len(values) if values else 0.0

    def to_json(self) -> dict[str, Any]:
        """`{"passed", "failed", "cases": [{"name", "passed", "checks": [{"name", "passed",
        "reason"}], "runs", "pass_at_k", "pass_all_k", "tokens", "cost_usd", "seconds"}]}`;
        `runs` is the number of runs, `pass_at_k` and `pass_all_k` map each k (as a text)
        to its estimate."""
        return {
            "passed": self.passed,
            "failed": self.failed,
            "cases": [case.to_json() for case in self.cases],
        }

    @classmethod
    def from_json(cls, data: Any, *, source: str = "the report") -> EvalReport:
        """The report `to_json` wrote (without its runs' details); its `repeat` is the
        most runs a case had (`run_eval` runs each case `repeat` times), 1 without cases.

        Raises:
            ConfigError: not such a report; the text names `source` and what is wrong.
        """
        if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
            raise ConfigError(f"{source}: not an eval report (no 'cases' list)")
        cases = [
            CaseReport.from_json(raw, source=source, index=index)
            for index, raw in enumerate(data["cases"])
        ]
        seen: set[str] = set()
        for case in cases:  # compared by name: two of one name would pass and fail at once
            if case.name in seen:
                raise ConfigError(f"{source}: case {case.name!r}: name: used by another case")
            seen.add(case.name)
        return cls(cases, repeat=max((case.runs_read for case in cases), default=1) or 1)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> EvalReport:
        """Read a report written with `to_json` (e.g. `yiem eval --json`).

        Raises:
            ConfigError: the file cannot be read or is not such a report.
        """
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            raise ConfigError(f"{path}: cannot read it: {reason}") from None
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
        return cls.from_json(data, source=str(path))

    def compare(self, baseline: EvalReport | Mapping[str, Any] | str | PathLike[str]) -> Comparison:
        """This report against `baseline` (a report, its JSON form, or a JSON file).

        Raises:
            ConfigError: a baseline that is not a report.
        """
        if isinstance(baseline, str | PathLike):
            base = EvalReport.load(baseline)
        elif isinstance(baseline, Mapping):
            base = EvalReport.from_json(baseline, source="the baseline")
        else:
            base = baseline
        before = {case.name: case.passed for case in base.cases}
        now = {case.name: case.passed for case in self.cases}
        return Comparison(
            regressions=[n for n, ok in now.items() if before.get(n) is True and not ok],
            fixes=[n for n, ok in now.items() if before.get(n) is False and ok],
            new=[n for n in now if n not in before],
            missing=[n for n in before if n not in now],
        )

    def to_html(self, path: str | PathLike[str]) -> Path:
        """Write the report as a self-contained HTML page at `path`, each run's timeline
        page (`yiem trace`'s) in the folder `<path stem>.runs/` beside it, linked from its
        case. Returns the page's path.

        Raises:
            OSError: a file cannot be written (each file is the old or the new, never half).
        """
        from yiemagent.evals._html import write_report

        summary = [
            f"{self.passed}/{len(self.cases)} cases passed",
            f"{self.failed} failed",
            f"{self.tokens} tokens",
            f"${self.cost_usd:.6f}",
            f"{sum(c.seconds for c in self.cases):.1f} s of runs",
        ]
        if self.judge_tokens or self.judge_cost_usd:
            summary.append(f"judge: {self.judge_tokens} tokens, ${self.judge_cost_usd:.6f}")
        k = self.repeat
        if k > 1 and self.cases:  # no case, no pass@k to average
            summary.append(
                f"pass@1 {self.mean_pass_at_k(1):.2f} · pass@{k} {self.mean_pass_at_k(k):.2f}"
                f" · pass^{k} {self.mean_pass_all_k(k):.2f}"
            )
        return write_report(self.cases, summary, k, Path(path))
