"""`Dataset.load` (DESIGN §19): YAML and JSONL cases with every check form, plain function
checks from a file beside the dataset, and one clear error naming the file, the case and
the field for each kind of bad dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from yiemagent.evals import Case, CheckResult, Dataset, DatasetError, EvalRun, check_name

GOOD = """\
workdir: files
cases:
  - name: multiply
    input: What is 17 * 23?
    expected: "391"
    metadata: {kind: one tool}
    checks:
      - contains
      - tool_called: calculator
      - tool_called: {name: calculator, args: {expression: "17 * 23"}, substring: true}
      - max_turns: 3
      - no_tool_called: [get_time]
  - name: capital
    input: What is the capital of France?
    checks:
      - contains: {text: [paris, Paris], any_of: true}
      - no_tool_called
      - output_is: {type: string}
      - judge: The answer names Paris.
      - judge: {rubric: The answer names Paris., model: openai/gpt-4o-mini}
      - checks.py:short
      - checks.py:longer_than: 3
"""

CHECKS_PY = """\
def short(run):
    return len(run.text) < 100

def longer_than(n):
    def check(run):
        return len(run.text) > n
    return check
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_yaml_dataset_with_every_check_form(tmp_path: Path) -> None:
    (tmp_path / "files").mkdir()
    write(tmp_path, "checks.py", CHECKS_PY)
    data = Dataset.load(write(tmp_path, "d.yaml", GOOD))
    assert [c.name for c in data.cases] == ["multiply", "capital"]
    assert data.workdir == (tmp_path / "files").resolve()
    multiply, capital = data.cases
    assert multiply.expected == "391" and multiply.metadata == {"kind": "one tool"}
    names = [check_name(c) for c in multiply.checks]
    assert names == [
        "contains()",
        "tool_called('calculator')",
        "tool_called('calculator', args={'expression': '17 * 23'})",
        "max_turns(3)",
        "no_tool_called(['get_time'])",
    ]
    assert [check_name(c) for c in capital.checks][-4:] == [
        "judge('The answer names Paris.')",
        "judge('The answer names Paris.', model='openai/gpt-4o-mini')",  # two judges apart
        "short",
        "longer_than(3)",  # named for its call, not for the inner function it returned
    ]
    run = EvalRun(capital, 0, "ok", "Paris")
    assert capital.checks[-2](run) is True and capital.checks[-1](run) is True
    assert capital.checks[-1](EvalRun(capital, 0, "ok", "Rome")) is True
    assert capital.checks[-1](EvalRun(capital, 0, "ok", "No")) is False


def test_a_jsonl_dataset(tmp_path: Path) -> None:
    lines = [
        {"name": "a", "input": "Hi", "checks": ["no_tool_called", {"contains": "hello"}]},
        {"name": "b", "input": "2+2?", "expected": "4", "checks": [{"equals": None}]},
    ]
    path = write(tmp_path, "d.jsonl", "\n".join(json.dumps(x) for x in lines) + "\n\n")
    data = Dataset.load(path)
    assert [(c.name, len(c.checks)) for c in data.cases] == [("a", 2), ("b", 1)]


def test_a_jsonl_case_holding_unicode_line_separators_is_one_case(tmp_path: Path) -> None:
    # JSON keeps U+2028, U+2029 and NEL raw inside strings: a line ends at "\n" only.
    text = "one\u2028two\u2029three\x85four"
    case = {"name": "a", "input": text, "checks": [{"contains": text}]}
    path = write(tmp_path, "d.jsonl", json.dumps(case, ensure_ascii=False) + "\n")
    assert [(c.name, c.input) for c in Dataset.load(path).cases] == [("a", text)]


def test_a_jsonl_dataset_saved_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Windows editors start a UTF-8 file with a BOM: line 1 was "not JSON"."""
    path = tmp_path / "d.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"name": "a", "input": "Hi"}).encode() + b"\n")
    assert [c.name for c in Dataset.load(path).cases] == ["a"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "cases:\n  - name: a\n    input: hi\n    checks: [contain: x]\n",
            "d.yaml: case 'a': checks[0]: unknown check 'contain' (known: contains,",
        ),
        ("cases:\n  - name: a\n    checks: []\n", "d.yaml: case 'a': input: missing"),
        ("cases:\n  - input: hi\n", "d.yaml: case #1: name: missing"),
        (
            "cases:\n  - name: a\n    input: hi\n  - name: b\n   input: x\n",
            "d.yaml: not valid YAML at line 5",
        ),
        (
            "cases: [{name: a, input: hi, checks: [max_turns: many]}]\n",
            "d.yaml: case 'a': checks[0]: max_turns: needs a whole number",
        ),
        (
            "cases: [{name: a, input: hi, checks: [tool_called]}]\n",
            "d.yaml: case 'a': checks[0]: tool_called: missing 1 required positional argument",
        ),
        (
            "cases: [{name: a, input: hi, checks: [matches: '(']}]\n",
            "d.yaml: case 'a': checks[0]: matches: '(' is not a regular expression",
        ),
        ("cases: [{name: a, input: hi, chekcs: []}]\n", "d.yaml: case 'a': chekcs: unknown field"),
        (
            "cases: [{name: a, input: hi}, {name: a, input: ho}]\n",
            "d.yaml: case 'a': name: used by another case",
        ),
        (
            "cases: [{name: a, input: hi, checks: [nowhere.py:f]}]\n",
            "d.yaml: case 'a': checks[0]: cannot import nowhere.py",
        ),
        (
            "cases: [{name: a, input: hi, checks: [contains: x, output_is: {type: nonsense}]}]\n",
            "d.yaml: case 'a': checks[1]: output_is: the schema is not a valid JSON Schema: "
            "$.type: 'nonsense' is not valid",
        ),
        (
            "cases: [{name: a, input: hi, expected: {type: 3}, checks: [output_is]}]\n",
            "d.yaml: case 'a': checks[0]: output_is: expected: the schema is not a valid",
        ),
        (
            "cases: [{name: a, input: hi, checks: [judge: {rubric: ok, model: nowhere/x}]}]\n",
            "d.yaml: case 'a': checks[0]: judge: model: unknown model 'nowhere/x'. Known",
        ),
        (  # each run of it would fail the check: said before any runs
            "cases: [{name: a, input: hi, checks: [contains]}]\n",
            "d.yaml: case 'a': checks[0]: contains has no argument and the case has no 'expected'",
        ),
        (
            "cases: [{name: a, input: hi, checks: [contains: x, equals]}]\n",
            "d.yaml: case 'a': checks[1]: equals has no argument and the case has no 'expected'",
        ),
        (  # a bare output_is too: it compared every run's answer with None
            "cases: [{name: a, input: hi, checks: [output_is]}]\n",
            "d.yaml: case 'a': checks[0]: output_is has no argument and the case has no 'expected'",
        ),
        (
            "cases: [{name: a, input: hi, expected: {a: 1}, checks: [contains]}]\n",
            "d.yaml: case 'a': checks[0]: contains takes a text or a list of texts, not {'a': 1}",
        ),
        *(  # nan passed no run (every comparison with it is false), inf every run
            (
                f"cases: [{{name: a, input: hi, checks: [max_cost: {usd}]}}]\n",
                f"d.yaml: case 'a': checks[0]: max_cost: needs US dollars, a finite number 0 "
                f"or more, not {shown}",
            )
            for usd, shown in ((".nan", "nan"), (".inf", "inf"), ("-.inf", "-inf"), ("-1", "-1"))
        ),
        ("tests: []\n", "d.yaml: cases: missing"),
        ("cases: []\n", "d.yaml: cases: the dataset has no cases"),
    ],
)
def test_a_bad_dataset_is_one_error_naming_file_case_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(DatasetError) as caught:
        Dataset.load(write(tmp_path, "d.yaml", text))
    shown = str(caught.value)
    assert "\n" not in shown
    assert shown.startswith(str(tmp_path)) and message in shown, shown


def test_a_yiem_batch_task_file_given_as_a_dataset_says_the_fields_a_case_has(
    tmp_path: Path,
) -> None:
    """README shows `yiem batch`'s tasks (`{"id", "prompt"}`) just before `yiem eval`: a
    file of them given to `yiem eval` said only "name: missing"."""
    task = {"id": "mul", "prompt": "What is 6 * 7?"}
    path = write(tmp_path, "d.jsonl", json.dumps(task) + "\n")
    with pytest.raises(DatasetError) as caught:
        Dataset.load(path)
    assert str(caught.value) == (
        f"{path}: case on line 1: name: missing (the case has 'id', as a yiem batch task "
        "does: an eval case names itself with 'name' and asks with 'input')"
    )
    named = write(tmp_path, "n.jsonl", json.dumps({"name": "mul", "prompt": "hi"}) + "\n")
    with pytest.raises(DatasetError) as caught:
        Dataset.load(named)
    assert str(caught.value) == (
        f"{named}: case 'mul': input: missing (the case has 'prompt', as a yiem batch task "
        "does: an eval case names itself with 'name' and asks with 'input')"
    )


def test_bad_jsonl_and_a_missing_file(tmp_path: Path) -> None:
    path = write(tmp_path, "d.jsonl", '{"name": "a", "input": "hi"}\n{"name": "b",\n')
    with pytest.raises(DatasetError, match=r"d\.jsonl: line 2: not JSON"):
        Dataset.load(path)
    with pytest.raises(DatasetError, match=r"nothere\.yaml: cannot read it"):
        Dataset.load(tmp_path / "nothere.yaml")


def test_cases_in_code_are_checked_too() -> None:
    with pytest.raises(DatasetError, match="input must be a non-empty text"):
        Case("a", "")
    with pytest.raises(DatasetError, match="is not a check"):
        Case("a", "hi", checks=["contains"])  # type: ignore[list-item]


YAML_TEXTS = """\
cases:
  - name: norway
    input: Country code of Norway?
    expected: NO
    checks:
      - contains
      - contains: 01234
      - contains: "1.10"
      - contains: on
      - contains: [yes, Off, 1:30, 0x1F, 2024-01-02]
      - max_turns: 3
      - max_cost: 0.5
      - max_cost: 0.50
      - max_cost: 1e-3
      - tool_called: {name: lights, args: {on: true, off: FALSE, level: 7}}
"""


def test_yaml_values_are_read_as_yaml_1_2_so_a_written_text_stays_text(tmp_path: Path) -> None:
    """PyYAML's YAML 1.1 rules made `NO` False, `01234` 668, `on` True; `0.50` stays the
    number 0.5, as YAML 1.2 reads it (a first form kept it as text, and `max_cost: 0.50`
    was refused)."""
    (case,) = Dataset.load(write(tmp_path, "d.yaml", YAML_TEXTS)).cases
    assert case.expected == "NO"
    assert [check_name(c) for c in case.checks] == [
        "contains()",
        "contains('01234')",
        "contains('1.10')",
        "contains('on')",
        "contains(['yes', 'Off', '1:30', '0x1F', '2024-01-02'])",
        "max_turns(3)",
        "max_cost(0.5)",
        "max_cost(0.5)",
        "max_cost(0.001)",
        "tool_called('lights', args={'on': True, 'off': False, 'level': 7})",
    ]
    checked = case.checks[0](EvalRun(case, 0, "ok", "It is NO."))
    assert isinstance(checked, CheckResult) and checked.passed


def test_a_check_file_is_imported_as_python_imports_a_module(tmp_path: Path) -> None:
    # Run outside `sys.modules`, a check file declaring a dataclass with a ClassVar could
    # not be imported ('NoneType' object has no attribute '__dict__').
    write(
        tmp_path,
        "limits.py",
        "from __future__ import annotations\n"
        "from dataclasses import dataclass\n"
        "from typing import ClassVar\n\n"
        "@dataclass\n"
        "class Limit:\n"
        "    most: int\n"
        "    kind: ClassVar[str] = 'characters'\n\n"
        "def at_most(n):\n"
        "    limit = Limit(n)\n"
        "    return lambda run: len(run.text) <= limit.most\n",
    )
    text = "cases: [{name: a, input: hi, checks: [{limits.py:at_most: 5}]}]\n"
    data = Dataset.load(write(tmp_path, "d.yaml", text))
    [check] = data.cases[0].checks
    assert check(EvalRun(data.cases[0], 0, "ok", "short")) is True
    assert check(EvalRun(data.cases[0], 0, "ok", "far too long")) is False
