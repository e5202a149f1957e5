"""A batch task whose run stops on tool calls held for approval (DESIGN §14): recorded
"held", counted apart, not done (a rerun runs it again); `approve=True` (`yiem batch --yes`)
approves the held calls and the task ends "ok" with the tool run once."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch._agents import make_faux_agent
from tests.batch._kit import assert_each_id_once, write_tasks
from yiemagent.batch import run_batch, summarize_results
from yiemagent.cli.main import main

AGENT = "tests.batch._agents:make_faux_agent"


def _tasks(tmp_path: Path) -> list[dict[str, object]]:
    ran = str(tmp_path / "ran.txt")
    return [
        {"id": "plain", "prompt": "hi"},
        {"id": "rm", "prompt": "remove it", "metadata": {"kind": "held", "ran": ran}},
    ]


def _ran(tmp_path: Path) -> list[str]:
    path = tmp_path / "ran.txt"
    return path.read_text().split() if path.exists() else []


def test_a_held_task_is_recorded_held_counted_apart_and_run_again(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    tasks = _tasks(tmp_path)
    report = run_batch(tasks, make_faux_agent, results=out, progress=False)
    assert (report.ok, report.failed, report.held) == (1, 0, 1)
    assert not report.complete
    line = {entry["id"]: entry for entry in assert_each_id_once(out, ["plain", "rm"])}["rm"]
    assert line["status"] == "held"
    assert line["error_kind"] == "awaiting_approval"
    assert 'remove({"path": "rm"})' in line["error"]
    assert _ran(tmp_path) == []  # held: the tool did not run
    assert summarize_results(out).by_status == {"ok": 1, "held": 1}

    again = run_batch(tasks, make_faux_agent, results=out, progress=False)
    assert (again.skipped, again.held) == (1, 1)  # not done: it ran again, and held again
    assert_each_id_once(out, ["plain", "rm"])
    assert _ran(tmp_path) == []

    approved = run_batch(tasks, make_faux_agent, results=out, progress=False, approve=True)
    assert (approved.skipped, approved.ok, approved.held) == (1, 1, 0)
    assert approved.complete
    line = {entry["id"]: entry for entry in assert_each_id_once(out, ["plain", "rm"])}["rm"]
    assert (line["status"], line["text"]) == ("ok", "removed")
    assert _ran(tmp_path) == ["rm"]


def test_yiem_batch_says_held_tasks_and_yes_approves_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", _tasks(tmp_path))
    out = tmp_path / "r.jsonl"
    code = main(["batch", str(tasks), "--out", str(out), "--agent", AGENT])
    stdout, err = capsys.readouterr()
    assert code == 1
    assert "1 held for approval" in stdout
    assert "held for approval" in err and "--yes" in err
    code = main(["batch", "--summary", str(out)])
    stdout, _ = capsys.readouterr()
    assert "held 1" in stdout and "awaiting_approval: 1" in stdout
    code = main(["batch", str(tasks), "--out", str(out), "--agent", AGENT, "--yes"])
    stdout, err = capsys.readouterr()
    assert code == 0, err
    assert _ran(tmp_path) == ["rm"]
