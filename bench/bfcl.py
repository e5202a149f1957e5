"""Bench: the Berkeley Function Calling Leaderboard's single-turn Python categories on the
embedded model (DESIGN §11), one model call per case through `yiemagent.ai.complete`.

Data: the `bfcl-eval` package (pinned 2026.3.23, installed without its heavy dependencies:
`bash scripts/setup.sh bench`, or `.venv/bin/pip install --no-deps bfcl-eval==2026.3.23`):
`bfcl_eval/data/BFCL_v4_<category>.json` and `possible_answer/`.

Each case's function docs become `AgentTool`s: BFCL's types are turned into JSON Schema
(`dict` → object, `float` → number, `tuple` → array, `any` → string, as BFCL's own
function-calling handlers do), dotted names (`math.factorial`) are mapped to `math_factorial`
and mapped back before scoring, and BFCL's Python hint is appended to each description (as
BFCL's prompt pre-processing does). The model's tool calls, as `[{name: arguments}, ...]`, are
scored by BFCL's own AST checker (`bfcl_eval.eval_checker.ast_eval.ast_checker`), imported with
one stub: `bfcl_eval.constants.model_config`, whose import pulls every provider SDK, is
replaced by a table saying "names are not underscored" (names are already mapped back).
`irrelevance` passes when the reply holds no tool call (BFCL's `is_empty_output` rule).
A reply that ends in "length" or "error" counts as no call (as a reply BFCL cannot decode).

    .venv/bin/python bench/bfcl.py --n 20                # 20 dev and 20 held per category
    .venv/bin/python bench/bfcl.py --split held --n 0 --out /tmp/bfcl.jsonl
    .venv/bin/python bench/bfcl.py --split held --n 0 --without relevant --without grounded
    .venv/bin/python bench/bfcl.py --split held --tool-format native --n 20
    .venv/bin/python bench/bfcl.py --categories parallel --n 10 --model local/qwen2.5-coder-1.5b
    .venv/bin/python bench/bfcl.py --categories multiple --ids multiple_3,multiple_5

The method (DESIGN §20, docs/local-model.md): each category is split by the number at the
end of its case ids: even numbers are `dev`, odd are `held`. Rules are developed on `dev`
only and judged on `held`: a rule stays when `--without RULE` lowers `held`. With no
`--split`, both halves run and both tables are printed. `--without RULE` (repeatable)
switches one of the embedded provider's rules off, `--plain` runs none (plain constrained
decoding), `--tool-format native` drives the model with its own `<tool_call>` blocks.

`--n` picks a deterministic, evenly spread sample of each category's half (ids in file
order); `--n 0` runs the whole half. Prints accuracy per category and the unweighted mean,
and how often each rule acted (from the replies' `details["local_rules"]`).
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import importlib
import json
import re
import statistics
import sys
import time
import types
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from yiemagent import AgentTool, UserMessage
from yiemagent.ai import Context, StreamOptions, complete, get_model
from yiemagent.errors import YiemAgentError
from yiemagent.types.model import Model

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "irrelevance")
PYTHON_HINT = " Note that the provided function is in Python 3 syntax."
"""What BFCL appends to every Python function description (`_get_language_specific_hint`)."""
CASE_TIMEOUT_S = 180.0
_TYPES = {
    "dict": "object",
    "object": "object",
    "float": "number",
    "number": "number",
    "integer": "integer",
    "int": "integer",
    "string": "string",
    "str": "string",
    "boolean": "boolean",
    "bool": "boolean",
    "array": "array",
    "list": "array",
    "tuple": "array",
    "any": "string",
}
"""BFCL's parameter types → JSON Schema types (BFCL's GORILLA_TO_OPENAPI for Python types)."""


# ── BFCL function docs → AgentTool ─────────────────────────────────────────


def to_json_schema(param: dict[str, Any]) -> dict[str, Any]:
    """One BFCL parameter (or parameters object) as JSON Schema.

    Types are mapped by `_TYPES` (unknown types become strings, as BFCL does); `properties`,
    `items` and `additionalProperties` are converted recursively; `description`, `enum`,
    `default`, `required`, `minItems`/`maxItems` are kept. Nothing else is copied.
    """
    out: dict[str, Any] = {}
    kind = param.get("type")
    if isinstance(kind, str):
        out["type"] = _TYPES.get(kind, "string")
    elif "properties" in param:
        out["type"] = "object"
    for key in ("description", "enum", "default", "minItems", "maxItems"):
        if key in param:
            out[key] = copy.deepcopy(param[key])
    properties = param.get("properties")
    if isinstance(properties, dict):
        out["properties"] = {
            name: to_json_schema(sub) if isinstance(sub, dict) else {}
            for name, sub in properties.items()
        }
        required = param.get("required")
        if isinstance(required, list):
            out["required"] = [r for r in required if r in properties]
    items = param.get("items")
    if isinstance(items, dict):
        out["items"] = to_json_schema(items)
    extra = param.get("additionalProperties")
    if isinstance(extra, dict):
        out["additionalProperties"] = to_json_schema(extra)
    bare = "properties" not in out and "additionalProperties" not in out
    if out.get("type") == "object" and bare:
        out["additionalProperties"] = True
    return out


def tool_name(bfcl_name: str, taken: set[str]) -> str:
    """A valid tool name for `bfcl_name` (dots and other characters → `_`, ≤ 64 characters),
    not in `taken`."""
    base = re.sub(r"[^A-Za-z0-9_-]", "_", bfcl_name)[:60] or "function"
    name, i = base, 2
    while name in taken:
        name, i = f"{base}_{i}", i + 1
    return name


def _unused(*_: Any) -> str:
    raise RuntimeError("BFCL tools are never executed")


def to_tools(functions: Sequence[dict[str, Any]]) -> tuple[list[AgentTool], dict[str, str]]:
    """The `AgentTool`s of one case and the map tool name → BFCL name."""
    tools: list[AgentTool] = []
    names: dict[str, str] = {}
    for function in functions:
        name = tool_name(function["name"], set(names))
        names[name] = function["name"]
        schema = to_json_schema(function.get("parameters") or {"type": "dict"})
        schema["type"] = "object"
        schema.setdefault("properties", {})
        tools.append(
            AgentTool(
                name=name,
                label=function["name"],
                description=str(function.get("description", "")) + PYTHON_HINT,
                input_schema=schema,
                execute=_unused,
            )
        )
    return tools, names


# ── data and scoring ───────────────────────────────────────────────────────


def _data_file(relative: str) -> Any:
    try:
        return resources.files("bfcl_eval").joinpath("data", relative)
    except ModuleNotFoundError:
        sys.exit(
            "bench/bfcl.py needs the BFCL data: bash scripts/setup.sh bench "
            "(or .venv/bin/pip install --no-deps bfcl-eval==2026.3.23)"
        )


def _read_jsonl(relative: str) -> list[dict[str, Any]]:
    text = _data_file(relative).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


@dataclass(slots=True)
class Case:
    id: str
    category: str
    question: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    answer: list[dict[str, Any]] | None


def load_cases(category: str) -> list[Case]:
    """Every case of `category` in file order, with its possible answer (none for
    irrelevance)."""
    entries = _read_jsonl(f"BFCL_v4_{category}.json")
    answers: dict[str, Any] = {}
    if category != "irrelevance":
        answers = {
            a["id"]: a["ground_truth"]
            for a in _read_jsonl(f"possible_answer/BFCL_v4_{category}.json")
        }
    return [
        Case(
            id=e["id"],
            category=category,
            question=e["question"][0],
            functions=e["function"],
            answer=answers.get(e["id"]),
        )
        for e in entries
    ]


SPLITS = ("dev", "held")


def split_of(case_id: str) -> str:
    """ "dev" for an even case number (the number ending the id: `simple_python_12`), "held"
    for an odd one."""
    number = case_id.rsplit("_", 1)[-1]
    if not number.isdigit():
        raise ValueError(f"case id {case_id!r} does not end in a number")
    return "dev" if int(number) % 2 == 0 else "held"


def sample(cases: Sequence[Case], n: int) -> list[Case]:
    """`n` cases spread evenly over `cases` (all of them when `n` is 0 or too large)."""
    if n <= 0 or n >= len(cases):
        return list(cases)
    return [cases[i * len(cases) // n] for i in range(n)]


def _ast_checker() -> Any:
    """BFCL's own `ast_checker`, importable without its SDK dependencies."""
    name = "bfcl_eval.constants.model_config"
    if name not in sys.modules:
        stub = types.ModuleType(name)

        class _Config:
            underscore_to_dot = False

        class _Table(dict[str, Any]):
            def __missing__(self, key: str) -> Any:
                return _Config()

        stub.MODEL_CONFIG_MAPPING = _Table()  # type: ignore[attr-defined]
        sys.modules[name] = stub
    module = importlib.import_module("bfcl_eval.eval_checker.ast_eval.ast_checker")
    return module


def score(case: Case, calls: list[dict[str, Any]]) -> tuple[bool, str]:
    """Whether `calls` (`[{bfcl_name: arguments}]`) pass BFCL's rules for `case`."""
    if case.category == "irrelevance":
        empty = not calls or (len(calls) == 1 and not calls[0])
        return empty, "" if empty else "called a function"
    checker = _ast_checker()
    from bfcl_eval.constants.enums import Language

    functions = copy.deepcopy(case.functions)
    for function in functions:  # as BFCL's pre-processing leaves them
        function["description"] = str(function.get("description", "")) + PYTHON_HINT
    result = checker.ast_checker(
        functions, calls, case.answer, Language.PYTHON, case.category, "yiemagent"
    )
    return bool(result["valid"]), "; ".join(map(str, result.get("error") or []))


# ── running ────────────────────────────────────────────────────────────────


@dataclass(slots=True)
class Outcome:
    case: Case
    calls: list[dict[str, Any]]
    stop_reason: str
    seconds: float
    passed: bool
    error: str
    text: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    rules: list[dict[str, str]] = field(default_factory=list)
    """What the embedded provider's rules did (`details["local_rules"]`)."""


async def run_case(model: Any, case: Case, max_tokens: int) -> Outcome:
    """One model call on `case` and its score."""
    tools, names = to_tools(case.functions)
    system = "\n".join(str(m["content"]) for m in case.question if m["role"] == "system")
    messages = [UserMessage(str(m["content"])) for m in case.question if m["role"] == "user"]
    started = time.perf_counter()
    try:
        reply = await asyncio.wait_for(
            complete(model, Context(system, messages, tools), StreamOptions(max_tokens=max_tokens)),
            CASE_TIMEOUT_S,
        )
    except TimeoutError:
        seconds = time.perf_counter() - started
        passed, why = score(case, [])
        return Outcome(case, [], "timeout", seconds, passed, why or "timeout")
    seconds = time.perf_counter() - started
    calls: list[dict[str, Any]] = []
    if reply.stop_reason == "toolUse":
        calls = [{names.get(c.name, c.name): dict(c.arguments)} for c in reply.tool_calls]
    passed, why = score(case, calls)
    usage = {"input": reply.usage.input, "cache": reply.usage.cache_read, "out": reply.usage.output}
    if reply.stop_reason in ("error", "aborted"):
        why = f"{reply.stop_reason}: {reply.error_message}; {why}"
    rules = list(reply.details.get("local_rules", []))
    return Outcome(case, calls, reply.stop_reason, seconds, passed, why, reply.text, usage, rules)


def _print_table(model_id: str, outcomes: Iterable[Outcome], categories: Sequence[str]) -> float:
    by_category: dict[str, list[Outcome]] = {c: [] for c in categories}
    for outcome in outcomes:
        by_category[outcome.case.category].append(outcome)
    print(f"\n{model_id}")
    print(f"{'category':<19} {'n':>4} {'accuracy':>9} {'median s':>9} {'length':>7} {'error':>6}")
    accuracies: list[float] = []
    for category, rows in by_category.items():
        if not rows:
            continue
        accuracy = sum(r.passed for r in rows) / len(rows)
        accuracies.append(accuracy)
        median = statistics.median(r.seconds for r in rows)
        length = sum(r.stop_reason == "length" for r in rows)
        errors = sum(r.stop_reason in ("error", "aborted", "timeout") for r in rows)
        print(
            f"{category:<19} {len(rows):>4} {accuracy * 100:>8.1f}% {median:>9.2f} "
            f"{length:>7} {errors:>6}"
        )
    mean = statistics.mean(accuracies) if accuracies else 0.0
    print(f"{'unweighted mean':<19} {'':>4} {mean * 100:>8.1f}%")
    acted: Counter[str] = Counter()
    for rows in by_category.values():
        for row in rows:
            acted.update(f"{n['rule']} {n['action']}" for n in row.rules)
    if acted:
        print("rules acted: " + ", ".join(f"{k} ×{v}" for k, v in sorted(acted.items())))
    return mean


async def _main(args: argparse.Namespace) -> None:
    from yiemagent.ai.providers.local import LocalPolicy, load_runtime, local_model, local_spec

    model: Model
    try:
        if args.without or args.plain or args.tool_format != "json":
            policy = LocalPolicy(()) if args.plain else None
            model = local_model(
                args.model,
                policy=policy,
                without=tuple(args.without),
                tool_format=args.tool_format,
            )
        else:
            model = get_model(args.model)
    except YiemAgentError as exc:
        sys.exit(str(exc))
    categories = args.categories.split(",") if args.categories else list(CATEGORIES)
    for category in categories:
        if category not in CATEGORIES:
            sys.exit(f"unknown category {category!r}; known: {', '.join(CATEGORIES)}")
    splits = [args.split] if args.split else list(SPLITS)
    ids = set(filter(None, args.ids.split(",")))
    label = model.id + "".join(f" without {name}" for name in args.without)
    label += " (no rules)" if args.plain else ""
    label += f" [{args.tool_format}]"
    if model.api == "local":
        started = time.perf_counter()
        await asyncio.to_thread(load_runtime, local_spec(model.id))
        print(f"{model.id}: loaded in {time.perf_counter() - started:.1f} s", flush=True)
    out = open(args.out, "a", encoding="utf-8") if args.out else None  # noqa: SIM115, ASYNC230
    outcomes: dict[str, list[Outcome]] = {split: [] for split in splits}
    try:
        for category in categories:
            cases = load_cases(category)
            for split in splits:
                half = [case for case in cases if split_of(case.id) == split]
                chosen = [c for c in half if c.id in ids] if ids else sample(half, args.n)
                for case in chosen:
                    outcome = await run_case(model, case, args.max_tokens)
                    outcomes[split].append(outcome)
                    _report(outcome)
                    if out is not None:
                        out.write(_record(label, split, outcome) + "\n")
                        out.flush()
    finally:
        if out is not None:
            out.close()
        for split in splits:
            _print_table(f"{label} — {split}", outcomes[split], categories)


def _report(outcome: Outcome) -> None:
    mark = "ok " if outcome.passed else "BAD"
    print(
        f"{mark} {outcome.case.id:<24} {outcome.seconds:6.1f}s {outcome.stop_reason:<7} "
        f"{json.dumps(outcome.calls, ensure_ascii=False)[:150]}"
        + ("" if outcome.passed else f"  | {outcome.error[:150]}"),
        flush=True,
    )


def _record(label: str, split: str, outcome: Outcome) -> str:
    record = {
        "model": label,
        "split": split,
        "id": outcome.case.id,
        "category": outcome.case.category,
        "passed": outcome.passed,
        "seconds": round(outcome.seconds, 3),
        "stop_reason": outcome.stop_reason,
        "calls": outcome.calls,
        "text": outcome.text[:500],
        "error": outcome.error[:500],
        "usage": outcome.usage,
        "rules": outcome.rules,
    }
    return json.dumps(record, ensure_ascii=False, default=str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20, help="cases per category (0: all)")
    parser.add_argument("--categories", default="", help="comma-separated (default: all five)")
    parser.add_argument(
        "--ids", default="", help="comma-separated case ids: only these run (overrides --n)"
    )
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--out", default="", help="append one JSON line per case to this file")
    parser.add_argument("--split", choices=SPLITS, help="dev (even case numbers) or held (odd)")
    parser.add_argument(
        "--without",
        action="append",
        default=[],
        metavar="RULE",
        help="switch one of the embedded provider's rules off (repeatable)",
    )
    parser.add_argument("--plain", action="store_true", help="no rules: constrained decoding")
    parser.add_argument("--tool-format", choices=("json", "native"), default="json")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
