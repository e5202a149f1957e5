"""`run_eval`: every case of a dataset, `repeat` times, on the batch engine (each run on a
fresh Agent, locally or on Ray), then every check on every run, in the driver."""

from __future__ import annotations

import asyncio
import json
import logging
import tempfile
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any, Literal

from yiemagent.batch import MakeAgent, ProgressMode, TaskResult, read_results, run_batch_async
from yiemagent.errors import ConfigError, exception_summary
from yiemagent.evals._case import Case, Check, CheckResult, EvalRun, as_verdict, check_name
from yiemagent.evals._dataset import Dataset
from yiemagent.evals._outcomes import CaseReport, CheckOutcome, RunReport
from yiemagent.evals._report import EvalReport
from yiemagent.types.callbacks import is_async_callable, maybe_await
from yiemagent.types.tools import is_whole_number

__all__ = ["run_eval", "task_id"]

logger = logging.getLogger(__name__)


def task_id(case: Case, repeat: int, repeats: int) -> str:
    """The batch task id of run `repeat` (0-based) of `case`: its name, `#n` added when
    the case runs more than once."""
    return case.name if repeats == 1 else f"{case.name}#{repeat + 1}"


async def run_eval(
    dataset: Dataset | Sequence[Case],
    make_agent: MakeAgent,
    *,
    repeat: int = 1,
    concurrency: int = 4,
    backend: Literal["local", "ray"] = "local",
    address: str | None = None,
    timeout_s: float | None = None,
    results: str | PathLike[str] | None = None,
    progress: ProgressMode | None = None,
    workers: Literal["auto", "tasks", "pool"] = "auto",
    num_cpus: float = 1.0,
    approve: bool = False,
) -> EvalReport:
    """Run each case `repeat` times and check every run.

    The runs go through `yiemagent.batch.run_batch_async` (one fresh Agent each, no retries:
    a failed run is a failed run); the checks run here, in this process, `concurrency` at a
    time (a `judge` calls a model; plain function checks run on worker threads).

    Args:
        dataset: The cases (a `Dataset` or a list of `Case`s).
        make_agent: Builds a fresh Agent: `make_agent()` or `make_agent(task)`, the task's
            `metadata` holding the case's metadata plus "case" and "repeat". Picklable for
            worker processes and Ray (see `yiemagent.batch.MakeAgent`).
        repeat: Runs per case (k of pass@k).
        concurrency: Runs (and checks) at once.
        backend: "local" or "ray" (the `ray` extra).
        address: The Ray cluster's address (None: a local cluster for the eval).
        timeout_s: Wall-clock limit per run, seconds (a run over it fails).
        results: Keep the batch's results file here (a rerun with the same file skips the
            runs already done); None: a temporary file.
        progress: As `run_batch_async`: True a bar on stderr, "lines" a line now and
            then, False nothing (default: the bar on a terminal, else nothing).
        workers: As `run_batch_async` ("pool": a worker process or Ray actor per model).
        num_cpus: CPUs Ray reserves per task or actor.
        approve: Approve every tool call held for approval and resume the run, as
            `run_batch(approve=True)` does; without it such a run fails its `run` check
            ("held for approval, not run"), its tool never run.

    Returns:
        The `EvalReport`.

    Raises:
        ConfigError: `repeat` or `concurrency` not a whole number >= 1, or an empty
            dataset.
        BatchError: as `run_batch_async` (a bad option, a results file in use).
    """
    for option, value in (("repeat", repeat), ("concurrency", concurrency)):
        if not is_whole_number(value, 1):
            raise ConfigError(f"{option} must be a whole number >= 1, not {value!r}")
    data = dataset if isinstance(dataset, Dataset) else Dataset(dataset)
    runs = {task_id(case, i, repeat): (case, i) for case in data.cases for i in range(repeat)}
    tasks = [_task(tid, case, index) for tid, (case, index) in runs.items()]
    with tempfile.TemporaryDirectory(prefix="yiem-eval-") as scratch:
        path = Path(results) if results is not None else Path(scratch) / "results.jsonl"
        await run_batch_async(
            tasks,
            make_agent,
            results=path,
            rerun=_edited(tasks),
            backend=backend,
            address=address,
            concurrency=concurrency,
            timeout_s=timeout_s,
            retries=0,
            workers=workers,
            num_cpus=num_cpus,
            progress=progress,
            progress_label="eval",
            progress_outcomes=("answered", "errors"),  # "failed" is a case's verdict
            keep_messages=True,
            approve=approve,
        )
        found = {r.id: r for r in read_results(path) if r.id in runs}
    return EvalReport(await _check_all(runs, found, concurrency=concurrency), repeat=repeat)


def _task(tid: str, case: Case, index: int) -> dict[str, Any]:
    """The batch task of run `index` (0-based) of `case`: its input as the prompt, and its
    metadata plus "case" and "repeat" (what `make_agent(task)` may build the agent from)."""
    metadata = {**case.metadata, "case": case.name, "repeat": index}
    return {"id": tid, "prompt": case.input, "metadata": metadata}


def _edited(tasks: Sequence[dict[str, Any]]) -> Callable[[TaskResult], bool]:
    """Whether a run kept in the results file answered another question than its task
    asks now: the case was edited since (its input, or the metadata its agent is built
    from), so the kept answer is not its answer and the run is made again."""
    by_id = {task["id"]: task for task in tasks}

    def edited(result: TaskResult) -> bool:
        task = by_id.get(result.id)
        if task is None:
            return False
        try:
            metadata = json.loads(json.dumps(task["metadata"]))
        except (TypeError, ValueError):  # not JSON: the batch says so
            return False
        asked = _prompt_of(result.messages)
        return result.metadata != metadata or (asked is not None and asked != task["prompt"])

    return edited


def _prompt_of(messages: Sequence[dict[str, Any]] | None) -> str | None:
    """The text of the first user message of a kept run (None: not kept)."""
    for message in messages or ():
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
            return None
    return None


async def _check_all(
    runs: Mapping[str, tuple[Case, int]],
    found: Mapping[str, TaskResult],
    *,
    concurrency: int,
) -> list[CaseReport]:
    """Check every run (`runs`: task id -> its case and repeat; `found`: the batch's results
    by task id, a run missing there was not run), `concurrency` runs at a time; one
    `CaseReport` per case, in the order the cases come."""
    gate = asyncio.Semaphore(concurrency)

    async def check_run(tid: str) -> RunReport:
        case, index = runs[tid]
        async with gate:
            return await _check_run(case, index, found.get(tid))

    reports = await asyncio.gather(*(check_run(tid) for tid in runs))
    by_case: dict[str, tuple[Case, list[RunReport]]] = {}
    for (case, _), report in zip(runs.values(), reports, strict=True):
        by_case.setdefault(case.name, (case, []))[1].append(report)
    return [
        CaseReport.from_runs(name, case_runs, input=case.input)
        for name, (case, case_runs) in by_case.items()
    ]


async def _check_run(case: Case, index: int, result: TaskResult | None) -> RunReport:
    if result is None:  # the batch was stopped before this run ended
        outcome = CheckOutcome("run", False, "not run: the eval was interrupted")
        return RunReport(index, False, [outcome], status="interrupted", error="not run")
    run = EvalRun.from_result(case, index, result)
    outcomes: list[CheckOutcome] = []
    if run.status == "held":  # the batch's hint names yiem batch: say this command's
        calls = (run.error or "held for approval, not run").partition("; approve with ")[0]
        said = f"{calls}; approve with yiem eval --yes (run_eval(approve=True))"
        outcomes.append(CheckOutcome("run", False, said))
    elif run.status != "ok":
        outcomes.append(CheckOutcome("run", False, f"{run.status}: {run.error or 'no answer'}"))
    for check in case.checks:
        outcomes.append(await _apply(check, run))
    return RunReport(
        repeat=index,
        passed=all(o.passed for o in outcomes),
        checks=outcomes,
        text=run.text,
        tokens=run.tokens,
        cost_usd=run.cost_usd,
        seconds=run.seconds,
        status=run.status,
        error=run.error,
        end_reason=run.end_reason,
        messages=run.messages,
        sub_agent_runs=run.sub_agent_runs,
    )


async def _apply(check: Check, run: EvalRun) -> CheckOutcome:
    """One check's outcome on one run; a plain check runs on a worker thread, so a slow one
    (a test suite run on the answer) holds up neither the event loop nor the other checks."""
    name = check_name(check)
    try:
        if is_async_callable(check):
            verdict = await check(run)  # type: ignore[misc]
        else:
            verdict = await maybe_await(await asyncio.to_thread(check, run))
    except (Exception, SystemExit) as exc:  # a broken check fails, says why; the eval goes on
        said = f"the check raised {exception_summary(exc)}"
        logger.info("check %s: %s", name, said)
        return CheckOutcome(name, False, said)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the eval itself is stopped (Ctrl-C): not the check's failure
        said = "the check raised CancelledError: its own work was cancelled"
        logger.info("check %s: %s", name, said)
        return CheckOutcome(name, False, said)
    if isinstance(verdict, CheckResult):
        return CheckOutcome(name, verdict.passed, verdict.reason, verdict.tokens, verdict.cost_usd)
    passed = as_verdict(verdict)
    if passed is not None:
        return CheckOutcome(name, passed, "")
    kind = type(verdict)  # numpy 2's bool_ is named "bool": its module tells them apart
    shown = kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"
    return CheckOutcome(name, False, f"the check returned {shown}, not a bool or CheckResult")
