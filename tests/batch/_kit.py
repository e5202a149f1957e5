"""Helpers shared by the batch tests: task lists and checks of a results file."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks), encoding="utf-8")
    return path


def mixed_tasks(count: int, prefix: str, **extra: Any) -> list[dict[str, Any]]:
    """`count` tasks: mostly ok, some failing, slow (time out), flaky, raising."""
    tasks = []
    for i in range(count):
        if i % 10 == 3:
            kind = "fail"
        elif i % 10 == 7:
            kind = "slow"
        elif i % 20 == 11:
            kind = "flaky"
        elif i % 25 == 13:
            kind = "raise"
        else:
            kind = "ok"
        tasks.append(
            {"id": f"{prefix}-{i}", "prompt": f"question {i}", "metadata": {"kind": kind, **extra}}
        )
    return tasks


EXPECTED = {
    "ok": ("ok", 1, None),
    "flaky": ("ok", 2, None),
    "fail": ("error", 2, "model_error"),
    "slow": ("timeout", 2, "timeout"),
    "raise": ("error", 2, "exception"),
}
"""kind → (status, attempts, error_kind) with retries=1."""


def result_lines(path: Path) -> list[dict[str, Any]]:
    """Every line of a results file, each checked to be whole JSON ending in a newline."""
    data = path.read_bytes()
    assert data == b"" or data.endswith(b"\n"), "a partial last line"
    return [json.loads(line) for line in data.splitlines()]


def assert_each_id_once(path: Path, ids: list[str]) -> list[dict[str, Any]]:
    lines = result_lines(path)
    counts = Counter(line["id"] for line in lines)
    repeated = [i for i, c in counts.items() if c > 1]
    assert not repeated, f"ids written more than once: {repeated}"
    assert set(counts) == set(ids), f"missing: {sorted(set(ids) - set(counts))[:10]}"
    return lines
