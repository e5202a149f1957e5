"""Task lists (DESIGN §16): every task is checked before anything runs, a bad line is
named with its line number; an `output_schema` makes the answer parsed and validated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.batch._agents import make_faux_agent
from tests.batch._kit import result_lines, write_tasks
from yiemagent.batch import BatchError, BatchTask, check_output, load_tasks, run_batch

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "temp": {"type": "number"}},
    "required": ["city", "temp"],
}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "line 2: not JSON"),
        ('["a list"]', "line 2: a task is a JSON object"),
        ('{"prompt": "no id"}', "'id' must be a string or an integer"),
        ('{"id": "x", "prompt": ""}', "'prompt' must be a non-empty string"),
        ('{"id": "x", "prompt": "p", "extra": 1}', "unknown field(s) 'extra'"),
        (
            '{"id": "x", "prompt": "p", "output_schema": {"type": 5}}',
            "'output_schema' is not valid",
        ),
        ('{"id": "x", "prompt": "p", "metadata": [1]}', "'metadata' must be an object"),
        ('{"id": "x", "prompt": "p", "session": ""}', "'session': a session id must be non-"),
        ('{"id": "x", "prompt": "p", "session": "a\\nb"}', "without control characters"),
        ('{"id": "x", "prompt": "p", "session": 5}', "'session': a session id must be non-"),
        ('{"id": "a", "prompt": "again"}', "line 2: id 'a' repeats (first on line 1)"),
    ],
)
def test_a_bad_task_line_stops_the_batch_before_anything_runs(
    tmp_path: Path, line: str, message: str
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "fine"}\n' + line + "\n")
    out = tmp_path / "r.jsonl"
    with pytest.raises(BatchError, match=_escape(message)):
        run_batch(tasks, make_faux_agent, results=out)
    assert not out.exists() or out.read_bytes() == b""


def _escape(text: str) -> str:
    import re

    return re.escape(text)


def test_blank_lines_are_skipped_and_ints_become_string_ids(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('\n{"id": 7, "prompt": "p", "session": "s1"}\n\n')
    assert load_tasks(path) == [BatchTask("7", "p", session="s1")]
    assert BatchTask.from_json(load_tasks(path)[0].to_json()) == load_tasks(path)[0]


def test_a_tasks_file_saved_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Windows editors start a UTF-8 file with a BOM: line 1 was not JSON."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"id": "a", "prompt": "p"}\n')
    assert load_tasks(path) == [BatchTask("a", "p")]


def test_a_prompt_holding_unicode_line_separators_is_one_task(tmp_path: Path) -> None:
    # JSON keeps U+2028, U+2029 and NEL raw inside strings: a line ends at "\n" only.
    prompt = "one\u2028two\u2029three\x85four"
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", "prompt": prompt}, ensure_ascii=False) + "\n")
    assert load_tasks(path) == [BatchTask("a", prompt)]


def test_check_output_parses_fenced_json_and_names_the_failing_field() -> None:
    assert check_output('```json\n{"city": "Oslo", "temp": 3}\n```', SCHEMA) == {
        "city": "Oslo",
        "temp": 3,
    }
    with pytest.raises(ValueError, match="at temp: 'warm' is not of type 'number'"):
        check_output('{"city": "Oslo", "temp": "warm"}', SCHEMA)
    with pytest.raises(ValueError, match="not JSON"):
        check_output("It is 3 degrees in Oslo.", SCHEMA)


def test_output_schema_gives_the_validated_output_or_an_output_invalid_error(
    tmp_path: Path,
) -> None:
    tasks = [
        {
            "id": "good",
            "prompt": "p",
            "output_schema": SCHEMA,
            "metadata": {"kind": "json", "answer": json.dumps({"city": "Oslo", "temp": 3.5})},
        },
        {
            "id": "bad",
            "prompt": "p",
            "output_schema": SCHEMA,
            "metadata": {"kind": "json", "answer": '{"city": "Oslo"}'},
        },
        {
            "id": "prose",
            "prompt": "p",
            "output_schema": SCHEMA,
            "metadata": {"kind": "json", "answer": "about 3 degrees"},
        },
    ]
    out = tmp_path / "r.jsonl"
    run_batch(write_tasks(tmp_path / "t.jsonl", tasks), make_faux_agent, results=out, retries=1)
    lines = {line["id"]: line for line in result_lines(out)}
    assert lines["good"]["status"] == "ok"
    assert lines["good"]["output"] == {"city": "Oslo", "temp": 3.5}
    for name in ("bad", "prose"):
        assert lines[name]["status"] == "error"
        assert lines[name]["error_kind"] == "output_invalid"
        assert lines[name]["attempts"] == 2
        assert lines[name]["output"] is None
    assert "'temp' is a required property" in lines["bad"]["error"]


def test_bad_options_are_one_clear_error(tmp_path: Path) -> None:
    for kwargs, message in [
        ({"concurrency": 0}, "concurrency must be a whole number >= 1, not 0"),
        ({"retries": -1}, "retries must be a whole number >= 0, not -1"),
        # not whole numbers: a bare TypeError, or a count of 1.5 or True, before
        ({"concurrency": 1.5}, "concurrency must be a whole number >= 1, not 1.5"),
        ({"concurrency": True}, "concurrency must be a whole number >= 1, not True"),
        ({"concurrency": "2"}, "concurrency must be a whole number >= 1, not '2'"),
        ({"retries": 0.5}, "retries must be a whole number >= 0, not 0.5"),
        ({"processes": 0}, "processes must be a whole number >= 1, not 0"),
        ({"timeout_s": 0}, "timeout_s must be positive"),
        # a text or a bool: a bare TypeError, or True as one second, before
        ({"timeout_s": "30"}, "timeout_s must be positive seconds, not '30'"),
        ({"timeout_s": True}, "timeout_s must be positive seconds, not True"),
        ({"timeout_s": float("nan")}, "timeout_s must be positive seconds, not nan"),
        ({"backend": "spark"}, "backend must be 'local' or 'ray'"),
    ]:
        with pytest.raises(BatchError, match=message):
            run_batch([{"id": 1, "prompt": "p"}], make_faux_agent, results=tmp_path / "r", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("task", "message"),
    [
        (BatchTask(1, ""), "task #0: task '1': 'prompt' must be a non-empty string"),  # type: ignore[arg-type]
        (BatchTask(" ", "hi"), "task #0: 'id' is empty"),
        (BatchTask("x", "hi", metadata=[1]), "'metadata' must be an object"),  # type: ignore[arg-type]
        (BatchTask("x", "hi", output_schema={"type": 5}), "'output_schema' is not valid"),
    ],
)
def test_a_bad_batch_task_object_is_refused_as_a_bad_line_is(
    tmp_path: Path, task: BatchTask, message: str
) -> None:
    out = tmp_path / "r.jsonl"
    with pytest.raises(BatchError) as caught:
        run_batch([task], make_faux_agent, results=out, progress=False)
    assert message in str(caught.value)
    assert not out.exists() or out.read_bytes() == b""


def test_a_batch_task_with_an_integer_id_is_recorded_under_its_string_id(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    report = run_batch([BatchTask(1, "hi")], make_faux_agent, results=out, progress=False)  # type: ignore[arg-type]
    assert report.ok == 1
    assert [line["id"] for line in result_lines(out)] == ["1"]
    again = run_batch([BatchTask(1, "hi")], make_faux_agent, results=out, progress=False)  # type: ignore[arg-type]
    assert again.skipped == 1
