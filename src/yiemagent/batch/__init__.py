"""Many runs, many machines (DESIGN §16): run an agent over a task list, on this machine or
on a Ray cluster, with results that survive a crash and a rerun that skips finished work.

Public: `run_batch` / `run_batch_async` (and their `BatchReport`), with the types of their
options (`MakeAgent`, `TaskOptions`, `Backend`, `Workers`, `ProgressMode`); `BatchTask`,
`TaskSource` and `load_tasks` (the task list); `TaskResult`, `TaskStatus`, `DONE_STATUSES`,
`ResultsFile`, `read_results` (the results file); `BatchSummary` / `summarize_results`
(what `yiem batch --summary` prints); `check_output` (the JSON Schema check of an answer);
`BatchError`. The modules are
private: `_run` (the driver), `_tasks` (the task list), `_results` (the results file),
`_summary`, `_execute` (one task's attempts on any backend), the backends `_local`,
`_pool` and `_ray_backend`, and `_progress`. See `docs/batch.md`.
Importing this package imports neither Ray nor a model runtime.
"""

from yiemagent.batch._execute import MakeAgent, TaskOptions, check_output
from yiemagent.batch._progress import ProgressMode
from yiemagent.batch._results import (
    DONE_STATUSES,
    ResultsFile,
    TaskResult,
    TaskStatus,
    read_results,
)
from yiemagent.batch._run import Backend, BatchReport, Workers, run_batch, run_batch_async
from yiemagent.batch._summary import BatchSummary, summarize_results
from yiemagent.batch._tasks import BatchTask, TaskSource, load_tasks
from yiemagent.errors import BatchError

__all__ = [
    "DONE_STATUSES",
    "Backend",
    "BatchError",
    "BatchReport",
    "BatchSummary",
    "BatchTask",
    "MakeAgent",
    "ProgressMode",
    "ResultsFile",
    "TaskOptions",
    "TaskResult",
    "TaskSource",
    "TaskStatus",
    "Workers",
    "check_output",
    "load_tasks",
    "read_results",
    "run_batch",
    "run_batch_async",
    "summarize_results",
]
