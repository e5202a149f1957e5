"""Bench: the embedded model as an agent on the project's own task set (DESIGN §11).

`bench/local_agent_tasks.json` holds the tasks (six kinds: one tool, two independent calls,
a two-step chain, a question about a file's content, chat that needs no tool, a request no
tool serves) and the files they read. Each task runs through `agent_loop` with the bundled
example tools (`calculator`, `get_time`, `read_file` rooted in a temporary folder holding the
task files) and the CLI's default system prompt, as `yiem run` would, and passes when

- the calls made cover the task's expected calls (tool name, and arguments containing the
  given text, case-insensitive), no more than `max_calls` calls were made, and no tool outside
  the expected ones was called (`"calls": []` means: no call at all);
- the final answer contains every `answer_all` text, at least one `answer_any` text, none of
  `answer_none` (case-insensitive; `$REFUSAL` stands for the usual ways to say "I can't"),
  and for `time_of` places the HH:MM (or 12-hour h:MM) that `get_time` returned.

Prints one line per task, then the pass rate per kind, overall, and the median seconds per
task (model loaded first), for each installed local model (or `--model`).

    .venv/bin/python bench/local_agent.py [--model local/qwen2.5-coder-0.5b] [--only ID,...]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from yiemagent import (
    AgentContext,
    AgentLoopConfig,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    agent_loop,
)
from yiemagent.ai import get_model

TASKS_FILE = Path(__file__).with_name("local_agent_tasks.json")
REFUSAL = (
    "can't",
    "cannot",
    "can not",
    "unable",
    "not able",
    "don't have",
    "do not have",
    "no tool",
    "not possible",
    "sorry",
    "not available",
    "i'm not",
    "i am not",
    "unfortunately",
)
KINDS = (
    "one tool",
    "two independent calls",
    "two-step chain",
    "file question",
    "chat, no tool",
    "no tool serves",
)
_HHMM = re.compile(r"\b(\d\d):(\d\d) on\b")


@dataclass(slots=True)
class Result:
    task: dict[str, Any]
    passed: bool
    why: str
    seconds: float
    calls: list[tuple[str, dict[str, Any]]]
    answer: str


def _times(text: str) -> list[str]:
    """Ways an answer may write the HH:MM at the start of a get_time result."""
    match = _HHMM.search(text)
    if match is None:
        return []
    hour, minute = int(match.group(1)), match.group(2)
    twelve = hour % 12 or 12
    return [f"{hour:02d}:{minute}", f"{hour}:{minute}", f"{twelve}:{minute}"]


def _matches(call: tuple[str, dict[str, Any]], expected: dict[str, Any]) -> bool:
    name, args = call
    if name != expected["tool"]:
        return False
    for key, text in (expected.get("args_contain") or {}).items():
        if str(text).lower() not in str(args.get(key, "")).lower():
            return False
    return True


def check(
    task: dict[str, Any],
    calls: list[tuple[str, dict[str, Any]]],
    results: list[tuple[str, dict[str, Any], str]],
    answer: str,
) -> tuple[bool, str]:
    """Whether a run of `task` passed, and why not."""
    expected: list[dict[str, Any]] = task["calls"]
    if len(calls) > task["max_calls"]:
        return False, f"{len(calls)} calls (at most {task['max_calls']})"
    allowed = {e["tool"] for e in expected}
    stray = [name for name, _ in calls if name not in allowed]
    if stray:
        return False, f"called {', '.join(stray)}"
    unmatched = list(calls)
    for want in expected:
        hit = next((c for c in unmatched if _matches(c, want)), None)
        if hit is None:
            if task.get("calls_may_merge") and any(_matches(c, want) for c in calls):
                continue
            return False, f"no {want['tool']} call matching {want.get('args_contain') or {}}"
        unmatched.remove(hit)
    text = answer.lower()
    for item in task.get("answer_all", ()):
        if not _contains(text, item):
            return False, f"answer lacks {item!r}"
    any_of = [a for item in task.get("answer_any", ()) for a in _expand(item)]
    if any_of and not any(_contains(text, a) for a in any_of):
        return False, f"answer has none of {task['answer_any']}"
    for item in task.get("answer_none", ()):
        if item.lower() in text:
            return False, f"answer has {item!r}"
    for place in task.get("time_of", ()):
        shown = [
            output
            for name, args, output in results
            if name == "get_time" and place in str(args.get("place", "")).lower()
        ]
        forms = [form for output in shown for form in _times(output)]
        if not forms:
            return False, f"no get_time result for {place}"
        if not any(form in answer for form in forms):
            return False, f"answer lacks the {place} time {forms[0]}"
    if len(answer.strip()) < task.get("min_answer_chars", 1):
        return False, "empty answer"
    return True, ""


def _contains(text: str, item: str) -> bool:
    """Whether lower-cased `text` holds `item`; a number only as a whole number ("36" is not
    in "360", "136" or "36.5", but is in "= 36" and "36.0"; "14.14" is in "14.1421")."""
    item = item.lower()
    if not re.fullmatch(r"\d+(\.\d+)?", item):
        return item in text
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)  # 1,048,576
    after = "" if "." in item else r"(?!\d|\.\d*[1-9])"  # 14.14 may go on: 14.1421…
    return re.search(rf"(?<![\d.]){re.escape(item)}{after}", text) is not None


def _expand(item: str) -> tuple[str, ...]:
    return REFUSAL if item == "$REFUSAL" else (item,)


def _tools(root: Path) -> list[Any]:
    from yiemagent.cli.options import example_tools

    os.environ["YIEM_READ_FILE_ROOT"] = str(root)
    return example_tools("calculator", "get_time", "read_file")


async def run_task(model: Any, task: dict[str, Any], tools: list[Any], system: str) -> Result:
    """Run one task through `agent_loop` and check it."""
    context = AgentContext(system, [], tools)
    # The provider bounds each generation itself; a busy machine is slow to start.
    config = AgentLoopConfig(model=model, max_turns=6, stream_idle_timeout_s=None)
    started = time.perf_counter()
    events = agent_loop([UserMessage(task["prompt"])], context, config)
    async for _ in events:
        pass
    messages = await events.result()
    seconds = time.perf_counter() - started
    calls: list[tuple[str, dict[str, Any]]] = []
    by_id: dict[str, tuple[str, dict[str, Any]]] = {}
    results: list[tuple[str, dict[str, Any], str]] = []
    answer = ""
    for message in messages:
        if isinstance(message, AssistantMessage):
            for call in message.tool_calls:
                calls.append((call.name, dict(call.arguments)))
                by_id[call.id] = (call.name, dict(call.arguments))
            if message.stop_reason == "stop":
                answer = message.text
            elif message.stop_reason in ("error", "length", "aborted"):
                answer = ""
        elif isinstance(message, ToolResultMessage):
            name, args = by_id.get(message.tool_call_id, (message.tool_name, {}))
            text = "".join(getattr(block, "text", "") for block in message.content)
            results.append((name, args, text))
    passed, why = check(task, calls, results, answer)
    return Result(task, passed, why, seconds, calls, answer)


async def _bench_model(model_id: str, tasks: list[dict[str, Any]], root: Path) -> list[Result]:
    from yiemagent.ai.providers.local import load_runtime, local_spec
    from yiemagent.cli.options import DEFAULT_SYSTEM

    model = get_model(model_id)
    started = time.perf_counter()
    await asyncio.to_thread(load_runtime, local_spec(model.id))
    print(f"\n{model.id}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
    tools = _tools(root)
    results: list[Result] = []
    for task in tasks:
        result = await run_task(model, task, tools, DEFAULT_SYSTEM)
        results.append(result)
        mark = "ok " if result.passed else "BAD"
        calls = "; ".join(f"{n}({json.dumps(a, ensure_ascii=False)})" for n, a in result.calls)
        answer = " ".join(result.answer.split())
        print(
            f"{mark} {task['id']:<22} {result.seconds:5.1f}s  calls: {calls[:110] or '-'}"
            f"\n      answer: {answer[:150]!r}"
            + (f"\n      why: {result.why}" if result.why else ""),
            flush=True,
        )
    return results


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


def _report(model_id: str, results: list[Result]) -> None:
    print(f"\n{model_id}")
    print(f"{'kind':<24} {'passed':>8} {'rate':>6}")
    for kind in KINDS:
        rows = [r for r in results if r.task["kind"] == kind]
        if rows:
            passed = sum(r.passed for r in rows)
            print(f"{kind:<24} {passed:>3}/{len(rows):<4} {passed / len(rows) * 100:>5.0f}%")
    passed = sum(r.passed for r in results)
    print(f"{'overall':<24} {passed:>3}/{len(results):<4} {passed / len(results) * 100:>5.0f}%")
    print(f"median per task: {statistics.median(r.seconds for r in results):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="", help="one model (default: every installed one)")
    parser.add_argument("--only", default="", help="comma-separated task ids or kinds")
    parser.add_argument("--cache", action="store_true", help="only measure the prompt cache")
    args = parser.parse_args()

    from yiemagent.ai.providers.local import LOCAL_MODELS, is_installed

    data = json.loads(TASKS_FILE.read_text(encoding="utf-8"))
    tasks: list[dict[str, Any]] = data["tasks"]
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t["id"] in wanted or t["kind"] in wanted]
    if args.model:
        model_ids = [args.model]
    else:
        model_ids = [f"local/{s.id}" for s in LOCAL_MODELS.values() if is_installed(s)]
    if not model_ids:
        sys.exit("no local model installed: bash scripts/setup.sh demo")
    with tempfile.TemporaryDirectory(prefix="yiem-bench-") as folder:
        root = Path(folder)
        for name, text in data["files"].items():
            (root / name).write_text(text, encoding="utf-8")
        for model_id in model_ids:
            if args.cache:
                asyncio.run(prompt_cache(model_id, root))
                continue
            results = asyncio.run(_bench_model(model_id, tasks, root))
            _report(model_id, results)


if __name__ == "__main__":
    main()
