"""Evals (DESIGN §19): run an agent over a dataset of cases, check each answer, and compare
the result with a baseline, so a change that makes the agent worse shows.

Public: `Case`, `Dataset` (and `Dataset.load` for YAML and JSONL files), `DatasetError`;
the checks `contains`, `not_contains`, `equals`, `matches`, `tool_called`,
`no_tool_called`, `max_tool_calls`, `output_is`, `max_turns`, `max_cost`, `judge`, and
`CHECKS`, the names a dataset file gives them by; what a check is, sees and returns,
`Check`, `EvalRun` and `CheckResult` (any `(EvalRun) -> bool | CheckResult` function is a
check too), and `check_name`; `run_eval`, which runs on the batch engine
(`yiemagent.batch`, locally or on Ray); `EvalReport` with its `CaseReport`s, `RunReport`s
and `CheckOutcome`s, `Comparison`, and the estimators `pass_at_k` / `pass_all_k`.
See `docs/evals.md`. Importing this package imports neither pyyaml, Ray nor a model runtime.
"""

from yiemagent.evals._case import Case, Check, CheckResult, DatasetError, EvalRun, check_name
from yiemagent.evals._checks import (
    contains,
    equals,
    matches,
    max_cost,
    max_tool_calls,
    max_turns,
    no_tool_called,
    not_contains,
    output_is,
    tool_called,
)
from yiemagent.evals._dataset import CHECKS, Dataset
from yiemagent.evals._eval import run_eval
from yiemagent.evals._judge import judge
from yiemagent.evals._outcomes import CaseReport, CheckOutcome, RunReport, pass_all_k, pass_at_k
from yiemagent.evals._report import Comparison, EvalReport

__all__ = [
    "CHECKS",
    "Case",
    "CaseReport",
    "Check",
    "CheckOutcome",
    "CheckResult",
    "Comparison",
    "Dataset",
    "DatasetError",
    "EvalReport",
    "EvalRun",
    "RunReport",
    "check_name",
    "contains",
    "equals",
    "judge",
    "matches",
    "max_cost",
    "max_tool_calls",
    "max_turns",
    "no_tool_called",
    "not_contains",
    "output_is",
    "pass_all_k",
    "pass_at_k",
    "run_eval",
    "tool_called",
]

# Exceptions name this package, their public path, in tracebacks and pickles (pickle finds
# them here); classes with annotations keep their module, where `get_type_hints` reads them.
for _error in (DatasetError,):
    _error.__module__ = __name__
del _error
