"""`yiem batch --results FILE` names the results file as `yiem eval --results` names the
same file; `--out`, its name before, still works (hidden from `--help`), and each message
names the option as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.batch._kit import assert_each_id_once, write_tasks
from yiemagent.cli.main import main

AGENT = "tests.batch._agents:make_faux_agent"
TASKS = [{"id": f"r-{n}", "prompt": f"echo {n}"} for n in range(3)]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("option", ["--results", "--out"])
def test_the_results_file_by_either_name_is_written_then_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    tasks = write_tasks(tmp_path / "tasks.jsonl", TASKS)
    results = tmp_path / "results.jsonl"
    code, stdout, err = _run(capsys, "batch", str(tasks), option, str(results), "--agent", AGENT)
    assert code == 0, err
    assert f"results in {results}" in stdout
    assert_each_id_once(results, [task["id"] for task in TASKS])
    code, stdout, err = _run(capsys, "batch", str(tasks), option, str(results), "--agent", AGENT)
    assert code == 0 and "(3 before this run, 0 ok" in stdout, err


def test_help_shows_results_and_not_its_former_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["batch", "--help"]) == 0
    shown = capsys.readouterr().out
    assert "--results" in shown and "--out" not in shown


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["batch", "t.jsonl"],
            "give the tasks file and --results: yiem batch tasks.jsonl --results r.jsonl",
        ),
        (
            ["batch", "t.jsonl", "--results", "-"],
            "--results -: standard output is not accepted here (results are appended to it "
            "and a rerun resumes); give a file",
        ),
        (
            ["batch", "t.jsonl", "--out", "-"],
            "--out -: standard output is not accepted here (results are appended to it and "
            "a rerun resumes); give a file",
        ),
        (
            ["batch", "t.jsonl", "--out", "a.jsonl", "--results", "b.jsonl"],
            "--out is --results by its former name; give one of them",
        ),
    ],
)
def test_a_bad_results_option_is_one_line_naming_it(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    line: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    write_tasks(tmp_path / "t.jsonl", TASKS)
    code, stdout, err = _run(capsys, *argv)
    assert code != 0 and stdout == ""
    assert err.strip().splitlines() == [f"yiem: error: {line}"]
