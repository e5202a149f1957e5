"""Lone surrogates and the results file (DESIGN §8, §16). A JSON line may hold a `\\ud800`
escape, which Python reads as a lone surrogate, a character UTF-8 cannot encode. One in a
task's id, prompt or metadata is refused when the tasks are read, before anything runs; one
in what the model sends (a server streaming such an escape) is written as U+FFFD. Either way
no result line fails to encode: that failure stopped the whole batch after the tasks before
it, and every rerun stopped at the same task, so the batch could never finish."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.batch._kit import result_lines
from yiemagent.batch import BatchError, TaskResult, load_tasks, read_results
from yiemagent.cli.main import main

AGENT = "tests.batch._agents:make_faux_agent"

SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
ANY_TEXT = st.lists(st.characters() | SURROGATES, max_size=12).map("".join)
"""Any text, often with lone surrogates (st.text and st.characters leave them out)."""


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"id": "a\\ud800", "prompt": "p"}', "'id'"),
        ('{"id": "a", "prompt": "p \\udcff"}', "'prompt'"),
        ('{"id": "a", "prompt": "p", "metadata": {"k": ["\\ude00"]}}', "'metadata'"),
        ('{"id": "a", "prompt": "p", "metadata": {"\\ud83d": 1}}', "'metadata'"),
    ],
)
def test_yiem_batch_refuses_a_task_holding_a_lone_surrogate_before_any_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, field: str
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "first", "prompt": "p", "metadata": {"kind": "ok"}}\n' + line + "\n")
    out = tmp_path / "r.jsonl"
    code = main(["batch", str(tasks), "--out", str(out), "--agent", AGENT, "--workers", "tasks"])
    err = capsys.readouterr().err
    assert code == 1, err
    (said,) = err.strip().splitlines()
    assert f"{tasks} line 2:" in said and field in said and "lone surrogate" in said, said
    assert not out.exists()  # not even the good first task ran


def test_a_surrogate_pair_written_as_two_escapes_is_one_character_and_runs(
    tmp_path: Path,
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "\\ud83d\\ude00", "prompt": "p \\ud83d\\ude00"}\n')
    (task,) = load_tasks(tasks)
    assert task.id == "\U0001f600" and task.prompt == "p \U0001f600"


def test_yiem_batch_writes_a_lone_surrogate_the_model_streams_as_a_replacement_character(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "p"}\n{"id": "b", "prompt": "q"}\n')
    out = tmp_path / "r.jsonl"
    with ReplayServer() as server:
        # json.dumps writes the lone surrogate as the escape "\ud800"
        server.enqueue(*(sse_reply(openai_chunks({"content": "bad \ud800 text"})),) * 2)
        argv = ["batch", str(tasks), "--out", str(out), "--workers", "tasks"]
        argv += ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        argv += ["--concurrency", "1"]
        code = main(argv)
    assert code == 0, capsys.readouterr().err
    lines = result_lines(out)
    assert [(line["id"], line["status"], line["text"]) for line in lines] == [
        ("a", "ok", "bad \ufffd text"),
        ("b", "ok", "bad \ufffd text"),
    ]


def clean(text: str) -> str:
    """`text` with each lone surrogate U+FFFD (a pair joined), as UTF-8 can hold it."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


@given(text=ANY_TEXT, key=ANY_TEXT, value=ANY_TEXT)
def test_any_result_encodes_to_one_utf8_line_read_back_with_its_id(
    tmp_path_factory: pytest.TempPathFactory, text: str, key: str, value: str
) -> None:
    result = TaskResult(
        "id-1",
        "ok",
        text=text,
        output={key: [value]},
        metadata={key: value},
        messages=[{"role": "assistant", "content": [{"type": "text", "text": text}]}],
    )
    line = result.encode()
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    path = tmp_path_factory.mktemp("r") / "r.jsonl"
    path.write_bytes(line)
    (back,) = read_results(path)
    assert back.id == "id-1"
    assert back.text == clean(text)
    assert back.metadata == {clean(key): clean(value)}


@given(text=ANY_TEXT)
def test_a_task_loads_exactly_when_its_texts_are_utf8(text: str) -> None:
    try:
        text.encode("utf-8")
        storable = True
    except UnicodeEncodeError:
        storable = False
    for raw in (
        {"id": "x" + text, "prompt": "p"},
        {"id": "x", "prompt": "p" + text},
        {"id": "x", "prompt": "p", "metadata": {"k": text}},
    ):
        if storable:
            (task,) = load_tasks([raw])
            assert task.to_json() == {k: v for k, v in raw.items()}
        else:
            with pytest.raises(BatchError, match="lone surrogate"):
                load_tasks([raw])
