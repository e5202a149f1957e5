"""`yiem batch`'s progress bar on a terminal after Ctrl-C: it counted the tasks the Ctrl-C
stopped as done ("4/20") but named only "failed 0  running 0  not started 16  ETA 0:14",
so two tasks were not accounted for (the summary under it said "2 interrupted") and an
ETA was given for a batch that had stopped."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from tests.cli.chat._tmux import Pane

pytestmark = pytest.mark.timeout(180)


def test_the_last_bar_names_the_interrupted_tasks(tmp_path: Path) -> None:
    meta = {"kind": "ok", "delay_s": 0.5}
    tasks = tmp_path / "tasks.jsonl"
    lines = [json.dumps({"id": f"t{i}", "prompt": "p", "metadata": meta}) for i in range(20)]
    tasks.write_text("\n".join(lines) + "\n")
    out = tmp_path / "results.jsonl"
    command = [sys.executable, "-m", "yiemagent.cli.main", "batch", str(tasks), "--out", str(out)]
    command += ["--agent", "tests.batch._agents:make_faux_agent", "--concurrency", "2"]
    pane = Pane(tmp_path, command=command, faux=False)
    try:
        pane.wait(lambda s: re.search(r"\b[1-9]\d*/20\b", s) is not None)  # some done
        pane.keys("C-c")
        screen = pane.wait("__EXIT=")
    finally:
        pane.close()
    summary = next(line for line in screen.splitlines() if line.startswith("20 tasks:"))
    found = re.search(r"(\d+) interrupted", summary)
    assert found is not None and int(found.group(1)) >= 1, summary
    bar = next(line for line in screen.splitlines() if line.startswith("batch "))
    assert re.search(r"\b\d+/20\b", bar), bar  # the count still fits on the line
    assert f"interrupted {found.group(1)}" in bar and "ETA" not in bar, bar
