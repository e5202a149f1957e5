"""`yiem batch` given a tasks file that is not JSONL, as a newcomer writes one: YAML (which
`yiem eval` reads) or a pretty-printed JSON list. Both said only "line 1: not JSON
(Expecting value)", not what the file should be."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yiemagent.cli.main import main

TASKS = [{"id": 1, "prompt": "What is 17 * 23?"}, {"id": 2, "prompt": "Hi"}]


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        (
            "tasks.yaml",
            "- id: 1\n  prompt: What is 17 * 23?\n",
            "line 1: not JSON (Expecting value); tasks are JSONL, one JSON object a line "
            "(YAML is for yiem eval datasets)",
        ),
        (
            "tasks.json",
            json.dumps(TASKS, indent=2),
            "line 1: not JSON (Expecting value); the file is one JSON document: write each "
            "task object on a line of its own",
        ),
        ("tasks.jsonl", '{"id": 1, "prompt": "a"}\n{"id": 2,\n', "line 2: not JSON ("),
    ],
)
def test_a_tasks_file_that_is_not_jsonl_says_what_it_should_be(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, said: str
) -> None:
    tasks = tmp_path / name
    tasks.write_text(text)
    out = tmp_path / "results.jsonl"
    assert main(["batch", str(tasks), "--out", str(out)]) == 1
    stdout, err = capsys.readouterr()
    assert stdout == "" and err.startswith(f"yiem: error: {tasks} {said}"), err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    if name == "tasks.jsonl":
        assert "JSONL" not in err and "document" not in err  # a broken later line: no hint
