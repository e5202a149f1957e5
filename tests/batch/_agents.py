"""Module-level (so picklable) `make_agent` factories for the batch tests: each builds a
fresh Agent on the faux model whose behaviour comes from the task's metadata.

`metadata["kind"]`:
- "ok": answers "answer <id>" (usage 10 in / 5 out tokens, $0.001);
- "fail": every model call ends with stop reason "error";
- "flaky": the first attempt in this process fails, later ones answer;
- "slow": streams for ~10 s, so any small timeout cuts it;
- "raise": make_agent raises;
- "json": answers `metadata["answer"]` (text) for the output-schema tests;
- "die_once": the first attempt on the machine (a marker file `metadata["marker"]`) kills
  its own process (os._exit), later ones answer;
- "die": every attempt kills its own process (exit code 17);
- "held": calls the tool `remove`, which requires approval and appends its path (the id) to
  the file `metadata["ran"]` when it runs; then answers "removed".
`metadata["delay_s"]` slows the answer's streaming; `metadata["log"]` names a file each
attempt appends "<id> <pid>" to (one write of one line).
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from yiemagent import Agent, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.batch import BatchTask
from yiemagent.types import Cost, Usage

_attempts: Counter[str] = Counter()

ANSWER_USAGE = Usage(input=10, output=5, total_tokens=15, cost=Cost(total=0.001), reasoning=2)
"""An answer's usage: 2 of its 5 output tokens spent reasoning."""


def _log(task: BatchTask) -> None:
    log = task.metadata.get("log")
    if log:
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{task.id} {os.getpid()}\n".encode())
        finally:
            os.close(fd)


def _answer(text: str) -> Any:
    return faux_message(faux_text(text), usage=ANSWER_USAGE)


def _remove_tool(task: BatchTask) -> Any:
    ran = task.metadata["ran"]

    @tool(requires_approval=True)
    def remove(path: str) -> str:
        """Remove a file."""
        with open(ran, "a") as handle:
            handle.write(path + "\n")
        return f"removed {path}"

    return remove


def make_faux_agent(task: BatchTask) -> Agent:
    """The test factory: see the module docstring."""
    _log(task)
    _attempts[task.id] += 1
    kind = task.metadata.get("kind", "ok")
    delay = float(task.metadata.get("delay_s", 0.0))
    if kind == "raise":
        raise RuntimeError(f"cannot build an agent for {task.id}")
    if kind == "die":
        os._exit(17)
    if kind == "die_once":
        marker = task.metadata["marker"]
        if not os.path.exists(marker):
            with open(marker, "w") as handle:
                handle.write(str(os.getpid()))
            os._exit(17)
    if kind == "fail" or (kind == "flaky" and _attempts[task.id] == 1):
        response: Any = faux_message(faux_text(""), stop_reason="error", error_message="boom")
    elif kind == "slow":
        response = "x" * 1000
        delay = max(delay, 0.04)  # 250 chunks of 4 characters: ~10 s
    elif kind == "held":  # calls `remove`, which needs approval; then answers
        response = [faux_message(faux_tool_call("remove", {"path": task.id})), _answer("removed")]
        fm = FauxModel(response, delay_s=delay)
        return Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[_remove_tool(task)])
    elif kind == "json":
        response = _answer(str(task.metadata["answer"]))
    else:
        response = _answer(f"answer {task.id}")
    fm = FauxModel([response], delay_s=delay)
    return Agent(model=fm.model, stream_fn=fm.stream_fn)


def make_model_not_agent() -> Any:
    """A factory with a mistake: it returns the model, not an Agent around it."""
    return FauxModel(["plain"]).model


def make_plain_agent() -> Agent:
    """A factory that takes no task: always answers "plain"."""
    fm = FauxModel(["plain"])
    return Agent(model=fm.model, stream_fn=fm.stream_fn)


def make_embedded_agent(task: BatchTask) -> Agent:
    """An Agent on the embedded model (no tools); logs "<id> <pid> loaded=<bool>", where
    loaded says the process had the model loaded before this task's Agent was built."""
    from yiemagent.ai.providers.local.runtime import loaded_runtime
    from yiemagent.ai.providers.local.weights import DEFAULT_LOCAL_MODEL, local_spec

    log = task.metadata.get("log")
    if log:
        loaded = loaded_runtime(local_spec(DEFAULT_LOCAL_MODEL)) is not None
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{task.id} {os.getpid()} loaded={loaded}\n".encode())
        finally:
            os.close(fd)
    return Agent("You are a helpful assistant. Answer in a few words.")


class DiesAtStart:
    """A factory whose agent for the worker's start (the `__preload__` task) kills the
    worker process (exit code 17) the first `times` starts across processes (one marker
    file each in `folder`, made with O_EXCL, so exactly `times` starts die), or every
    start with `times=None`; tasks themselves get `make_faux_agent`'s agents."""

    def __init__(self, folder: str, times: int | None) -> None:
        self.folder = folder
        self.times = times

    def __call__(self, task: BatchTask) -> Agent:
        if task.id == "__preload__":
            if self.times is None:
                os._exit(17)
            for n in range(self.times):
                try:
                    os.close(os.open(os.path.join(self.folder, f"died{n}"), os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    continue
                os._exit(17)
        return make_faux_agent(task)
