"""Bench: what each of the embedded provider's rules is worth on BFCL (DESIGN §20), from one
run of `bench/bfcl.py --out` with every rule on.

Decoding is greedy, so a case on which a rule took no step (none of the reply's
`details["local_rules"]` names it) comes out the same with the rule switched off: every
decision the rule was asked returned "no change". Only the cases the rule acted on are run
again, with `--without RULE`; the score without the rule is the recorded run's, with those
cases' outcomes replaced. This gives each rule's exact `held` figure without a full run
per rule (a rule that acts on every case costs a full run; one that never acts costs none).

    .venv/bin/python bench/bfcl.py --split held --n 100 --out /tmp/held.jsonl
    .venv/bin/python bench/bfcl_ablation.py /tmp/held.jsonl --out /tmp/ablation.jsonl
    .venv/bin/python bench/bfcl_ablation.py /tmp/held.jsonl --rules relevant,grounded
    .venv/bin/python bench/bfcl_ablation.py /tmp/held.jsonl --from /tmp/ablation.jsonl

One rule needs no run: without `extra_call`, a reply ends with the call or calls the
model wrote itself, which are the same with the rule on (the grammar is the same up to
them; the rule only asks for more after a lone call). Its outcome is the recorded calls up
to the first one the rule asked for, scored again.

`--from` reads outcomes of earlier ablation runs (their `--out`) instead of running those
cases again. Prints, per rule, the cases it acted on and each category's accuracy with it and
without it, and the mean's change; a rule "pays" when switching it off lowers the mean.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

_BFCL_PATH = Path(__file__).with_name("bfcl.py")
_spec = importlib.util.spec_from_file_location("bfcl_bench", _BFCL_PATH)
assert _spec is not None and _spec.loader is not None
bfcl = importlib.util.module_from_spec(_spec)
sys.modules["bfcl_bench"] = bfcl
_spec.loader.exec_module(bfcl)


def read_jsonl(path: str) -> list[dict[str, Any]]:
    """The records of a `bench/bfcl.py --out` file (the last one per case id wins)."""
    records: dict[str, dict[str, Any]] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            records[record["id"]] = record
    return list(records.values())


def acted_on(records: list[dict[str, Any]], rule: str) -> list[str]:
    """The ids of the cases on which `rule` took a step, in the run's order."""
    return [r["id"] for r in records if any(note["rule"] == rule for note in r["rules"])]


def accuracy(records: list[dict[str, Any]], swapped: dict[str, bool]) -> dict[str, float]:
    """Accuracy per category (%), with the outcomes of `swapped` (id → passed) replacing
    the recorded ones."""
    by_category: dict[str, list[bool]] = defaultdict(list)
    for record in records:
        by_category[record["category"]].append(swapped.get(record["id"], record["passed"]))
    return {c: 100 * sum(p) / len(p) for c, p in by_category.items()}


DERIVED = "extra_call"
"""The rule whose outcomes are derived from the recorded run instead of run again."""


def without_extra_call(
    records: list[dict[str, Any]], ids: list[str], cases: dict[str, Any]
) -> dict[str, bool]:
    """Whether each case of `ids` passes with the calls written before the first call
    `extra_call` asked for."""
    by_id = {r["id"]: r for r in records}
    passed: dict[str, bool] = {}
    for case_id in ids:
        record = by_id[case_id]
        asked = next(n for n in record["rules"] if n["rule"] == DERIVED)
        written = int(asked["what"].split()[1]) - 1  # "call 2 of the reply": one written
        passed[case_id] = bfcl.score(cases[case_id], record["calls"][:written])[0]
    return passed


async def _rerun(
    model_name: str, tool_format: str, rule: str, ids: list[str], cases: dict[str, Any], out: Any
) -> dict[str, bool]:
    from yiemagent.ai.providers.local import local_model

    model = local_model(model_name, without=(rule,), tool_format=tool_format)  # type: ignore[arg-type]
    passed: dict[str, bool] = {}
    for case_id in ids:
        outcome = await bfcl.run_case(model, cases[case_id], 512)
        passed[case_id] = outcome.passed
        bfcl._report(outcome)
        if out is not None:
            record = json.loads(bfcl._record(f"without {rule}", bfcl.split_of(case_id), outcome))
            out.write(json.dumps({**record, "without": rule}, ensure_ascii=False) + "\n")
            out.flush()
    return passed


def _earlier(paths: list[str]) -> dict[tuple[str, str], bool]:
    found: dict[tuple[str, str], bool] = {}
    for path in paths:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                found[(record["without"], record["id"])] = record["passed"]
    return found


async def _main(args: argparse.Namespace) -> None:
    from yiemagent.ai.providers.local import DEFAULT_POLICY, load_runtime, local_spec

    records = read_jsonl(args.run)
    if not records:
        sys.exit(f"{args.run}: no records")
    rules = args.rules.split(",") if args.rules else list(DEFAULT_POLICY.names)
    unknown = [r for r in rules if r not in DEFAULT_POLICY.names]
    if unknown:
        sys.exit(f"unknown rules {unknown}; the rules are: {', '.join(DEFAULT_POLICY.names)}")
    earlier = _earlier(args.from_ or [])
    cases = {case.id: case for category in bfcl.CATEGORIES for case in bfcl.load_cases(category)}
    categories = sorted({r["category"] for r in records}, key=bfcl.CATEGORIES.index)
    with_rules = accuracy(records, {})
    rows: list[tuple[str, int, dict[str, float]]] = []
    loaded = False
    out = open(args.out, "a", encoding="utf-8") if args.out else None  # noqa: SIM115, ASYNC230
    try:
        for rule in sorted(rules, key=lambda r: len(acted_on(records, r))):
            ids = acted_on(records, rule)
            swapped = {i: earlier[(rule, i)] for i in ids if (rule, i) in earlier}
            if rule == DERIVED:
                swapped = without_extra_call(records, ids, cases)
            todo = [i for i in ids if i not in swapped]
            if todo and not args.dry_run:
                if not loaded:
                    await asyncio.to_thread(load_runtime, local_spec(args.model))
                    loaded = True
                print(f"-- without {rule}: {len(todo)} cases to run", flush=True)
                started = time.perf_counter()
                swapped |= await _rerun(args.model, args.tool_format, rule, todo, cases, out)
                print(f"-- without {rule}: {time.perf_counter() - started:.0f} s", flush=True)
            if len(swapped) < len(ids):
                print(f"-- without {rule}: {len(ids) - len(swapped)} cases not run", flush=True)
                continue
            rows.append((rule, len(ids), accuracy(records, swapped)))
    finally:
        if out is not None:
            out.close()
    _print(records, categories, with_rules, rows)


def _print(
    records: list[dict[str, Any]],
    categories: list[str],
    with_rules: dict[str, float],
    rows: list[tuple[str, int, dict[str, float]]],
) -> None:
    counts = {c: sum(r["category"] == c for r in records) for c in categories}
    mean = statistics.mean(with_rules[c] for c in categories)
    head = " | ".join(f"{c} (n={counts[c]})" for c in categories)
    print(f"\n| rule | acted on | {head} | mean | change |")
    print("|---|---|" + "---|" * len(categories) + "---|---|")
    cells = " | ".join(f"{with_rules[c]:.0f}" for c in categories)
    print(f"| every rule | — | {cells} | {mean:.1f} | — |")
    for rule, acted, scores in rows:
        without_mean = statistics.mean(scores[c] for c in categories)
        cells = " | ".join(_cell(scores[c], with_rules[c]) for c in categories)
        change = without_mean - mean
        print(f"| without {rule} | {acted} | {cells} | {without_mean:.1f} | {change:+.1f} |")


def _cell(score: float, with_rules: float) -> str:
    return f"{score:.0f}" + (f" ({score - with_rules:+.0f})" if score != with_rules else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", help="a bench/bfcl.py --out file, every rule on")
    parser.add_argument("--rules", default="", help="comma-separated (default: every rule)")
    parser.add_argument("--model", default="local/qwen2.5-coder-0.5b")
    parser.add_argument("--tool-format", choices=("json", "native"), default="json")
    parser.add_argument("--out", default="", help="append the re-run cases here (JSON lines)")
    parser.add_argument(
        "--from", dest="from_", action="append", help="re-run cases of earlier --out files"
    )
    parser.add_argument("--dry-run", action="store_true", help="count the cases only")
    asyncio.run(_main(parser.parse_args()))


if __name__ == "__main__":
    main()
