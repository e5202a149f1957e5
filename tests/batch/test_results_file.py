"""The results file (DESIGN §16): one whole line per task, a torn last line repaired on
open, interrupted lines replaced by the rerun's, one writer at a time, and a file that is
not a results file refused with a clear message instead of being overwritten."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent.batch import BatchError, ResultsFile, TaskResult, read_results


def _line(task_id: str, status: str = "ok") -> bytes:
    return TaskResult(task_id, status, text=f"answer {task_id}").encode()  # type: ignore[arg-type]


def test_append_writes_one_whole_line_and_reopen_sees_it_done(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as results:
        results.append(TaskResult("a", "ok", text="hi", usage={"input": 3}))
        results.append(TaskResult("b", "timeout", error="timed out after 1 s"))
        with pytest.raises(ValueError, match="already has a result line"):
            results.append(TaskResult("a", "ok"))
    lines = path.read_bytes().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["a", "b"]
    with ResultsFile(path) as results:
        assert set(results.done) == {"a", "b"}
        assert results.done["a"].usage["input"] == 3


def test_a_second_writer_is_refused_while_the_first_holds_the_file(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsFile(path), pytest.raises(BatchError, match="in use by another running batch"):
        ResultsFile(path).open()
    ResultsFile(path).open()  # released


def test_a_line_in_the_middle_that_is_not_a_result_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    content = _line("a") + b"my notes, not a result\n" + _line("b")
    path.write_bytes(content)
    with pytest.raises(BatchError, match="line 2 is not a result line"):
        ResultsFile(path).open()
    assert path.read_bytes() == content


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    head=st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True),
    tail=st.binary(min_size=1, max_size=40).filter(
        lambda b: bool(b.strip()) and not b.startswith(b"{") and b"\n" not in b
    ),
)
def test_a_last_line_no_result_could_begin_is_refused_and_the_file_kept(
    tmp_path: Path, head: list[str], tail: bytes
) -> None:
    """A crash cuts a result line after its first byte at the earliest, and every result
    line opens with `{`. A last line without a newline that does not start with `{` (a
    notes file, a binary file, `--out` pointed at the wrong file) was taken for a torn
    line and deleted, and the file rewritten as a results file: the user's file was lost."""
    path = tmp_path / "notes.txt"
    content = b"".join(_line(i) for i in head) + tail
    path.write_bytes(content)
    with pytest.raises(BatchError, match=f"line {len(head) + 1} is not a result line"):
        ResultsFile(path).open()
    with pytest.raises(BatchError, match="is not a result line"):
        read_results(path)
    assert path.read_bytes() == content
    path.unlink()


def test_interrupted_lines_are_dropped_on_open_so_the_rerun_line_is_the_only_one(
    tmp_path: Path,
) -> None:
    path = tmp_path / "r.jsonl"
    a, b, c = _line("a"), _line("b", "interrupted"), _line("c")
    path.write_bytes(a + b + c)
    assert [r.id for r in read_results(path)] == ["a", "c", "b"]  # read-only: all kept
    with ResultsFile(path) as results:
        assert set(results.done) == {"a", "c"}
        assert path.read_bytes() == a + c  # kept lines byte for byte
        results.append(TaskResult("b", "ok"))
    assert [json.loads(x)["id"] for x in path.read_bytes().splitlines()] == ["a", "c", "b"]


def test_a_repaired_file_keeps_its_mode(tmp_path: Path) -> None:
    """The repair writes a new file and renames it over the old one: the result is the
    same file to its owner, readable by whom it was before (not narrowed to 0600)."""
    path = tmp_path / "r.jsonl"
    a = _line("a")
    path.write_bytes(a + _line("b", "interrupted") + b'{"id": "c", "sta')
    path.chmod(0o644)
    with ResultsFile(path) as results:
        assert set(results.done) == {"a"}
    assert path.read_bytes() == a
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_missing_folder_is_one_clear_error(tmp_path: Path) -> None:
    with pytest.raises(BatchError, match="does not exist"):
        ResultsFile(tmp_path / "nope" / "r.jsonl").open()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    ids=st.lists(
        st.text("abcxyz0123", min_size=1, max_size=6), min_size=0, max_size=8, unique=True
    ),
    cut=st.integers(min_value=0, max_value=10_000),
)
def test_a_file_cut_at_any_byte_reopens_with_the_whole_lines_and_no_partial_line(
    tmp_path: Path, ids: list[str], cut: int
) -> None:
    """A crash mid-write leaves a prefix of the file: every whole line survives, the torn
    tail is dropped, and the repaired file ends with a newline."""
    path = tmp_path / "cut.jsonl"
    full = b"".join(_line(i) for i in ids)
    cut = min(cut, len(full))
    path.write_bytes(full[:cut])
    whole = full[:cut].count(b"\n")
    with ResultsFile(path) as results:
        assert list(results.done) == ids[:whole] or (
            # the cut fell exactly after a line's last byte, before its newline: kept
            list(results.done) == ids[: whole + 1]
        )
        kept = list(results.done)
        results.append(TaskResult("new", "ok"))
    data = path.read_bytes()
    assert data.endswith(b"\n")
    assert [json.loads(x)["id"] for x in data.splitlines()] == [*kept, "new"]
    path.unlink()


def test_a_writer_that_locks_a_file_already_replaced_by_a_repair_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Driver B opens the results file and is descheduled before it locks it; meanwhile
    driver A repairs the file (renames a clean copy over it) and locks the new one. B's
    lock is then on a file that is no longer the results file: B must not run."""
    import fcntl
    import threading

    path = tmp_path / "r.jsonl"
    path.write_bytes(_line("a") + b'{"id": "b", "sta')  # a torn last line: A repairs it
    real_flock = fcntl.flock
    b_opened, b_may_lock = threading.Event(), threading.Event()
    b_thread: list[threading.Thread] = []

    def flock(fd: int, operation: int) -> None:
        if threading.current_thread() in b_thread and not b_opened.is_set():
            b_opened.set()  # B has opened the old file and is "descheduled" here
            assert b_may_lock.wait(10)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock)
    outcome: list[BaseException | None] = []

    def driver_b() -> None:
        try:
            ResultsFile(path).open()
        except BaseException as exc:
            outcome.append(exc)
        else:
            outcome.append(None)

    b_thread.append(threading.Thread(target=driver_b))
    b_thread[0].start()
    assert b_opened.wait(10)
    with ResultsFile(path) as a:  # A repairs (rename) and locks the new file
        assert set(a.done) == {"a"}
        b_may_lock.set()
        b_thread[0].join(10)
        assert len(outcome) == 1
        assert isinstance(outcome[0], BatchError), "B holds a lock on the replaced file"
        assert "in use by another running batch" in str(outcome[0])
