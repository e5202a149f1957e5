"""Batch throughput (DESIGN §16): tasks per second on this machine.

- `faux`: the faux model (answers at once): the local backend (asyncio tasks in the driver)
  against the Ray backend (Ray tasks on a local cluster started for the run; its start-up
  time is reported apart). Measures what the batch machinery costs per task: building the
  Agent, the run, the result line (fsync'ed), the progress counts.
- `embedded`: the embedded model on short prompts: one process (the tasks one after another
  in the driver, the model on every core) against the local pool (worker processes, each
  loading the model once, `cpu_count // processes` threads each). Model loads are outside
  the timed part for one process and inside it for the pool (the pool loads while it
  starts). The driver's thread count comes from `$YIEMAGENT_LOCAL_THREADS` (default: every
  core); pool workers use one thread each.

Usage: `.venv/bin/python bench/batch.py [faux|embedded|all] [--tasks N] [--embedded one,pool2]`
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.batch import BatchTask, run_batch

PROMPTS = [
    "Say hello.",
    "Name a colour.",
    "What is 2 + 2?",
    "Name a fruit.",
    "What is the capital of Italy?",
    "Say goodbye.",
]


def faux_agent(task: BatchTask) -> Agent:
    fm = FauxModel([f"answer {task.id}"])
    return Agent(model=fm.model, stream_fn=fm.stream_fn)


def embedded_agent() -> Agent:
    return Agent("Answer in at most five words.")


def _tasks(count: int, prefix: str) -> list[dict[str, Any]]:
    return [{"id": f"{prefix}{i}", "prompt": PROMPTS[i % len(PROMPTS)]} for i in range(count)]


def _timed(label: str, tasks: list[dict[str, Any]], make_agent: Any, **options: Any) -> float:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "results.jsonl"
        started = time.perf_counter()
        report = run_batch(tasks, make_agent, results=out, progress=False, **options)
        elapsed = time.perf_counter() - started
    assert report.ok == len(tasks), report
    rate = len(tasks) / elapsed
    print(f"  {label:<44} {len(tasks):4d} tasks {elapsed:7.2f} s  {rate:8.1f} tasks/s")
    return rate


def bench_faux(count: int) -> None:
    print(f"faux model, {os.cpu_count()} CPUs:")
    _timed("local, concurrency 16", _tasks(count, "l"), faux_agent, concurrency=16)
    _timed(
        "local, concurrency 16, fsync off",
        _tasks(count, "n"),
        faux_agent,
        concurrency=16,
        fsync=False,
    )
    _timed("local pool, 2 processes", _tasks(count, "p"), faux_agent, workers="pool", processes=2)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # bind to 127.0.0.1
    import ray

    started = time.perf_counter()
    ray.init(include_dashboard=False, log_to_driver=False, num_cpus=os.cpu_count())
    print(f"  (Ray local cluster started in {time.perf_counter() - started:.1f} s)")
    try:
        _timed("ray tasks, warm-up", _tasks(20, "w"), faux_agent, backend="ray", concurrency=4)
        for concurrency in (2, 8):
            _timed(
                f"ray tasks, concurrency {concurrency}",
                _tasks(count // 2, f"r{concurrency}-"),
                faux_agent,
                backend="ray",
                concurrency=concurrency,
            )
    finally:
        ray.shutdown()


def bench_embedded(count: int, configs: list[str]) -> None:
    from yiemagent.ai.providers.local.runtime import load_runtime
    from yiemagent.ai.providers.local.weights import DEFAULT_LOCAL_MODEL, local_spec

    cpus = os.cpu_count() or 1
    print(f"embedded model, {cpus} CPUs, {count} short prompts:")
    if "one" in configs or "one2" in configs:
        threads = os.environ.get("YIEMAGENT_LOCAL_THREADS") or str(min(cpus, 8))
        started = time.perf_counter()
        load_runtime(local_spec(DEFAULT_LOCAL_MODEL))
        print(f"  (one-process model load {time.perf_counter() - started:.1f} s, not timed)")
    if "one" in configs:
        _timed(
            f"one process x {threads} thread(s), one at a time",
            _tasks(count, "o"),
            embedded_agent,
            workers="tasks",
            concurrency=1,
        )
    if "one2" in configs:
        _timed(
            f"one process x {threads} thread(s), 2 at once (one slot)",
            _tasks(count, "c"),
            embedded_agent,
            workers="tasks",
            concurrency=2,
        )
    for processes in (1, 2):
        if f"pool{processes}" in configs:
            _timed(
                f"pool, {processes} process(es) x 1 thread, model loads included",
                _tasks(count, f"p{processes}-"),
                embedded_agent,
                workers="pool",
                processes=processes,
                concurrency=processes,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", nargs="?", default="all", choices=["faux", "embedded", "all"])
    parser.add_argument("--tasks", type=int, default=None)
    parser.add_argument(
        "--embedded",
        default="one,one2,pool1,pool2",
        help="embedded configs: one (in the driver), one2 (2 at once), pool1, pool2; the "
        "driver's thread count comes from $YIEMAGENT_LOCAL_THREADS",
    )
    args = parser.parse_args()
    if args.part in ("faux", "all"):
        bench_faux(args.tasks or 400)
    if args.part in ("embedded", "all"):
        bench_embedded(args.tasks or 12, args.embedded.split(","))


if __name__ == "__main__":
    main()
