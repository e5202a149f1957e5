"""Bench: the embedded model as an agent on the project's own task set (DESIGN §11).

The tasks are the eval dataset `evals/local_agent.yaml` (six kinds: one tool, two
independent calls, a two-step chain, a question about a file's content, chat that needs no
tool, a request no tool serves; its files in `evals/local_agent/`), run through the evals
API (`yiemagent.evals.run_eval`, one task at a time in this process) with the agent `yiem
eval` builds: the example tools (`calculator`, `get_time`, `read_file` rooted in the
dataset's files), the CLI's default system prompt, at most 6 turns. A task passes when
every check of its case passes (the tools it must and must not call, how many calls, what
the answer must and must not say, the time `get_time` returned).

Prints one line per task, then the pass rate per kind, overall, and the median seconds per
task (model loaded first), for each installed local model (or `--model`). `yiem eval
evals/local_agent.yaml` runs the same dataset with a table and an HTML report.

    .venv/bin/python bench/local_agent.py [--model local/qwen2.5-coder-0.5b] [--only ID,...]
    .venv/bin/python bench/local_agent.py --without unknown_tool   # one rule switched off
    .venv/bin/python bench/local_agent.py --every-rule   # with rules the model's spec turns off
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yiemagent import AssistantMessage, UserMessage
from yiemagent.ai import get_model
from yiemagent.evals import CaseReport, Dataset, EvalReport, run_eval

DATASET = Path(__file__).resolve().parents[1] / "evals" / "local_agent.yaml"
KINDS = (
    "one tool",
    "two independent calls",
    "two-step chain",
    "file question",
    "chat, no tool",
    "no tool serves",
)


def _line(case: CaseReport) -> str:
    run = case.runs[0]
    calls = "; ".join(
        f"{call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
        for message in run.messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    )
    answer = " ".join(run.text.split())
    failing = next((c for c in case.checks if not c.passed), None)
    why = f"{failing.name}: {failing.reason}" if failing else ""
    return (
        f"{'ok ' if case.passed else 'BAD'} {case.name:<22} {case.seconds:5.1f}s  "
        f"calls: {calls[:110] or '-'}\n      answer: {answer[:150]!r}"
        + (f"\n      why: {why}" if why else "")
    )


@dataclass(frozen=True, slots=True)
class _Rules:
    """The CLI's agent, its model driven with other rules (`local_model`): without the rules
    `without`, starting from every rule of `DEFAULT_POLICY` when `every_rule` (the rules the
    model's spec turns off included), else from the model's own default."""

    make: Any
    model_id: str
    without: tuple[str, ...]
    every_rule: bool

    def __call__(self, task: Any) -> Any:
        from yiemagent.ai.providers.local import DEFAULT_POLICY, local_model

        agent = self.make(task)
        policy = DEFAULT_POLICY if self.every_rule else None
        agent.state.model = local_model(self.model_id, policy=policy, without=self.without)
        return agent


async def _bench_model(
    model_id: str, dataset: Dataset, without: tuple[str, ...] = (), every_rule: bool = False
) -> EvalReport:
    from yiemagent.ai.providers.local import load_runtime, local_spec
    from yiemagent.cli.batch import CliAgentFactory
    from yiemagent.cli.eval_cmd import EvalAgentFactory
    from yiemagent.cli.options import DEFAULT_SYSTEM, DEFAULT_TOOLS_DIR

    model = get_model(model_id)
    started = time.perf_counter()
    await asyncio.to_thread(load_runtime, local_spec(model.id))
    print(f"\n{model.id}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
    agent: Any = CliAgentFactory(model_id, None, str(DEFAULT_TOOLS_DIR), DEFAULT_SYSTEM, 6)
    if without or every_rule:
        agent = _Rules(agent, model_id, without, every_rule)
    workdir = str(dataset.workdir) if dataset.workdir else None
    report = await run_eval(
        dataset, EvalAgentFactory(agent, workdir), concurrency=1, workers="tasks"
    )
    for case in report.cases:
        print(_line(case), flush=True)
    return report


def _tools(root: Path) -> list[Any]:
    from yiemagent.cli.options import example_tools

    os.environ["YIEM_READ_FILE_ROOT"] = str(root)
    return example_tools("calculator", "get_time", "read_file")


async def _first_token_s(model: Any, context: Any) -> tuple[float, Any]:
    from yiemagent.ai import stream

    started = time.perf_counter()
    events = stream(model, context)
    first = 0.0
    async for event in events:
        if not first and event.type in ("text_delta", "toolcall_start", "text_start"):
            first = time.perf_counter() - started
    return first, await events.result()


async def prompt_cache(model_id: str, root: Path, repeats: int = 3) -> None:
    """R-11.5: first-token latency of turn 1 (a fresh prefix) and turn 2 (the same
    conversation one user message later), medians over `repeats` conversations."""
    from yiemagent.ai import Context
    from yiemagent.cli.options import DEFAULT_SYSTEM

    model = get_model(model_id)
    tools = _tools(root)
    first: list[float] = []
    second: list[float] = []
    for i in range(repeats):
        # A new first line makes turn 1's whole prompt new to the KV cache.
        system = f"Conversation {i} of {time.time_ns()}.\n{DEFAULT_SYSTEM}"
        messages: list[Any] = [UserMessage("What is the capital of France?")]
        t1, reply = await _first_token_s(model, Context(system, messages, tools))
        messages += [reply, UserMessage("And the capital of Italy?")]
        t2, reply = await _first_token_s(model, Context(system, messages, tools))
        first.append(t1)
        second.append(t2)
        print(f"  conversation {i}: turn 1 {t1:.2f} s, turn 2 {t2:.2f} s", flush=True)
    m1, m2 = statistics.median(first), statistics.median(second)
    print(f"first-token latency: turn 1 {m1:.2f} s, turn 2 {m2:.2f} s (ratio {m2 / m1:.2f})")


def _report(model_id: str, dataset: Dataset, report: EvalReport) -> None:
    kinds = {case.name: case.metadata.get("kind", "") for case in dataset.cases}
    print(f"\n{model_id}")
    print(f"{'kind':<24} {'passed':>8} {'rate':>6}")
    for kind in KINDS:
        rows = [c for c in report.cases if kinds[c.name] == kind]
        if rows:
            passed = sum(c.passed for c in rows)
            print(f"{kind:<24} {passed:>3}/{len(rows):<4} {passed / len(rows) * 100:>5.0f}%")
    passed, total = report.passed, len(report.cases)
    print(f"{'overall':<24} {passed:>3}/{total:<4} {passed / total * 100:>5.0f}%")
    print(f"median per task: {statistics.median(c.seconds for c in report.cases):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="one model (default: every installed one)")
    parser.add_argument("--only", default="", help="comma-separated task ids or kinds")
    parser.add_argument("--cache", action="store_true", help="only measure the prompt cache")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="RULE",
        help="switch one of the embedded provider's rules off (repeatable)",
    )
    parser.add_argument(
        "--every-rule",
        action="store_true",
        help="start from every rule, the ones the model's spec turns off included",
    )
    args = parser.parse_args()

    from yiemagent.ai.providers.local import LOCAL_MODELS, is_installed

    dataset = Dataset.load(DATASET)
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in dataset.cases if c.name in wanted or c.metadata.get("kind") in wanted]
        dataset = Dataset(cases, source=dataset.source, workdir=dataset.workdir)
    if args.model:
        model_ids = [args.model]
    else:
        model_ids = [f"local/{s.id}" for s in LOCAL_MODELS.values() if is_installed(s)]
    if not model_ids:
        sys.exit("no local model installed: bash scripts/setup.sh demo")
    for model_id in model_ids:
        if args.cache:
            asyncio.run(prompt_cache(model_id, dataset.workdir or DATASET.parent))
            continue
        report = asyncio.run(_bench_model(model_id, dataset, tuple(args.without), args.every_rule))
        label = model_id + (" with every rule" if args.every_rule else "")
        _report(label + "".join(f" without {r}" for r in args.without), dataset, report)


if __name__ == "__main__":
    main()
