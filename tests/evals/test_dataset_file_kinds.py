"""`yiem eval` given a dataset that is neither YAML by its name nor JSONL: a YAML file named
`.txt`, a pretty-printed JSON list, a Python file. Each said only "line 1: not JSON
(Expecting value)", not what a dataset is."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yiemagent.cli.main import main
from yiemagent.evals import Dataset

CASES = [{"name": "multiply", "input": "What is 17 * 23?", "expected": "391"}]
KINDS = "a dataset is YAML (a .yaml or .yml file) or JSONL (one case object a line)"


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("cases.txt", "cases:\n  - name: a\n    input: hi\n", KINDS),
        ("checks.py", "def short(run):\n    return True\n", KINDS),
        (
            "cases.json",
            json.dumps(CASES, indent=2),
            "the file is one JSON document: a JSONL dataset has one case object a line",
        ),
    ],
)
def test_a_dataset_of_another_kind_says_what_a_dataset_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str, said: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    assert main(["eval", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == f"yiem: error: {path}: line 1: not JSON (Expecting value); {said}"


def test_a_bad_later_line_of_a_jsonl_dataset_gets_no_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps(CASES[0]) + "\n{oops\n")
    assert main(["eval", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"yiem: error: {path}: line 2: not JSON (") and "YAML" not in err


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
@pytest.mark.parametrize("name", ["cases.yaml", "cases.jsonl"])
def test_a_dataset_saved_as_utf_16_says_to_save_it_as_utf_8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, encoding: str
) -> None:
    """Windows tools save "Unicode" as UTF-16: the line was Python's codec error."""
    path = tmp_path / name
    yaml_text = "cases:\n  - name: multiply\n    input: What is 17 * 23?\n"
    path.write_text(yaml_text if name.endswith(".yaml") else json.dumps(CASES[0]), encoding)
    assert main(["eval", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip() == f"yiem: error: {path}: not UTF-8 text: save it as UTF-8"


def test_a_yaml_dataset_saved_as_utf_8_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "cases.yaml"
    path.write_text("cases:\n  - name: multiply\n    input: What is 17 * 23?\n", "utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    assert [(c.name, c.input) for c in Dataset.load(path).cases] == [
        ("multiply", "What is 17 * 23?")
    ]
