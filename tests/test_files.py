"""`yiemagent.files.write_atomically`, the one way a file yiemagent owns is replaced (DESIGN
§8: a crash at any moment leaves the old file or the new one, never half): the new bytes
replace the old, a failure leaves the old file and no temporary file, and a process SIGKILLed
at random moments while it rewrites a file leaves one of the two whole versions. And
`import_file`, the one way a Python file is imported as a module: in `sys.modules` while its
code runs, gone again when that code fails; and `import_function`, the one reading of a
`MODULE:FUNCTION` reference and the one wording of what is wrong with it."""

from __future__ import annotations

import asyncio
import os
import random
import sys
import textwrap
import time
from asyncio.subprocess import PIPE
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from yiemagent.files import import_file, import_function, write_atomically

OLD = b"old " * 50_000
NEW = b"new " * 60_000


def test_it_creates_then_replaces_and_leaves_only_the_file(tmp_path: Path) -> None:
    target = tmp_path / "state.json"
    write_atomically(target, OLD)
    assert target.read_bytes() == OLD
    write_atomically(target, NEW)
    assert target.read_bytes() == NEW
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "tool.py"
    target.write_bytes(OLD)

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, NEW)
    assert target.read_bytes() == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tool.py"]


def test_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    """A link (a results file kept elsewhere, linked into the project) keeps pointing at
    the file, which gets the new content; renamed over, the link became a plain file."""
    real = tmp_path / "store" / "results.jsonl"
    real.parent.mkdir()
    real.write_bytes(b"old")
    link = tmp_path / "results.jsonl"
    link.symlink_to(real)
    write_atomically(link, b"new")
    assert link.is_symlink() and real.read_bytes() == b"new"
    dangling = tmp_path / "later.txt"
    dangling.symlink_to(tmp_path / "store" / "later.txt")
    write_atomically(dangling, b"made")
    assert dangling.is_symlink() and dangling.read_bytes() == b"made"


def test_a_missing_folder_is_an_oserror_and_writes_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomically(tmp_path / "nowhere" / "page.html", NEW)
    assert list(tmp_path.iterdir()) == []


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from yiemagent.files import write_atomically

    target = Path(sys.argv[1])
    versions = (b"old " * 50_000, b"new " * 60_000)
    print("READY", flush=True)
    n = 0
    while True:  # rewrite the file, alternating the two versions, until killed
        write_atomically(target, versions[n % 2])
        n += 1
    """
)


@pytest.mark.timeout(300)
async def test_sigkill_while_rewriting_leaves_the_old_or_the_new_file(tmp_path: Path) -> None:
    target = tmp_path / "results.jsonl"
    target.write_bytes(OLD)
    script = tmp_path.parent / f"{tmp_path.name}-child.py"
    script.write_text(CHILD)
    rng = random.Random(8)
    seen: set[bytes] = set()
    for _trial in range(12):
        child = await asyncio.create_subprocess_exec(
            sys.executable, str(script), str(target), stdout=PIPE, stderr=PIPE
        )
        try:
            assert child.stdout is not None and child.stderr is not None
            line = await asyncio.wait_for(child.stdout.readline(), timeout=60)
            if not line.startswith(b"READY"):
                pytest.fail(f"the child did not start: {(await child.stderr.read()).decode()}")
            await asyncio.sleep(rng.uniform(0.0, 0.1))
            child.kill()  # SIGKILL: mid-write, no cleanup
        finally:
            if child.returncode is None:
                child.kill()
            await asyncio.wait_for(child.wait(), timeout=10)
        seen.add(_whole_version(target))
    assert seen, "no trial ran"


def _whole_version(target: Path) -> bytes:
    """The file's bytes, which must be one of the two versions; a temporary file a kill left
    behind (between its creation and the rename) is removed: it is never the file."""
    data = target.read_bytes()
    assert data in (OLD, NEW), f"a part: {len(data)} bytes"
    for stray in target.parent.glob(f".{target.name}.*.tmp"):
        stray.unlink()
    return data


def test_import_file_runs_the_file_as_a_module_its_dataclasses_can_find(tmp_path: Path) -> None:
    path = tmp_path / "checks.py"
    path.write_text(
        "import dataclasses, sys\n"
        "@dataclasses.dataclass\n"  # needs its module in sys.modules while it runs
        "class Point:\n"
        "    x: int\n"
        "SEEN = sys.modules[__name__] is not None\n"
    )
    name = "yiem_test_import_file_ok"
    try:
        module = import_file(path, name)
        assert sys.modules[name] is module
        assert module.SEEN and module.Point(3).x == 3
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("code", "raised"),
    [("x = 1\nraise ValueError('bad')\n", ValueError), ("def f(:\n", SyntaxError)],
)
def test_a_file_whose_code_fails_is_not_left_in_sys_modules(
    tmp_path: Path, code: str, raised: type[BaseException]
) -> None:
    path = tmp_path / "broken.py"
    path.write_text(code)
    name = "yiem_test_import_file_broken"
    with pytest.raises(raised):
        import_file(path, name)
    assert name not in sys.modules


def test_a_package_finds_its_submodules_and_prepare_runs_before_its_code(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "__init__.py").write_text("from .inner import VALUE\nSEEN = GIVEN\n")
    (folder / "inner.py").write_text("VALUE = 7\n")
    name = "yiem_test_import_file_pkg"
    try:
        module = import_file(
            folder / "__init__.py", name, package=True, prepare=lambda m: setattr(m, "GIVEN", 1)
        )
        assert (module.VALUE, module.SEEN) == (7, 1)
        assert sys.modules[f"{name}.inner"].VALUE == 7
    finally:
        for key in [name, f"{name}.inner"]:
            sys.modules.pop(key, None)


def test_a_file_that_is_not_python_is_one_clear_import_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("x = 1\n")
    with pytest.raises(ImportError, match=r"notes\.txt is not a Python file$"):
        import_file(path, "yiem_test_import_file_txt")
    assert "yiem_test_import_file_txt" not in sys.modules


def test_import_function_finds_a_function_of_a_module_or_of_a_file(tmp_path: Path) -> None:
    assert import_function("os.path:join") is os.path.join
    path = tmp_path / "checks.py"
    path.write_text("def answer():\n    return 42\n")
    name = "yiem_test_import_function_file"
    try:
        found = import_function("checks.py:answer", lambda _: import_file(path, name))
        assert found() == 42
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("no_such_module_here:f", "cannot import no_such_module_here: No module named"),
        ("os.path:no_such_function", "os.path has no function 'no_such_function'"),
        ("os.path:sep", "os.path has no function 'sep'"),  # there, but not a function
    ],
)
def test_what_is_wrong_with_a_reference_is_one_import_error(ref: str, says: str) -> None:
    with pytest.raises(ImportError) as raised:
        import_function(ref)
    assert str(raised.value).startswith(says), raised.value
    assert "\n" not in str(raised.value)


def test_a_module_whose_code_fails_is_named_with_its_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.py"
    path.write_text("def f(:\n")
    with pytest.raises(ImportError, match=r"^cannot import broken\.py: SyntaxError: .* line 1\)$"):
        import_function("broken.py:f", lambda _: import_file(path, "yiem_test_broken_ref"))
    assert "yiem_test_broken_ref" not in sys.modules


@given(st.text(st.characters(blacklist_characters=":"), max_size=20))
def test_a_reference_without_both_sides_of_a_colon_is_refused_before_any_import(
    text: str,
) -> None:
    loaded: list[str] = []
    for ref in (text, f"{text}:", f":{text}"):
        with pytest.raises(ImportError, match=r"is not MODULE:FUNCTION$"):
            import_function(ref, lambda name: loaded.append(name))  # type: ignore[func-returns-value]
    assert loaded == []


@pytest.mark.timeout(300)
async def test_the_temporary_files_of_killed_writers_go_once_stale(tmp_path: Path) -> None:
    """A writer SIGKILLed between creating its temporary file and the rename leaves it
    (as large as the file): they piled up beside a tool file or a results file forever.
    The next write removes those over an hour old, and leaves a fresh one (a writer
    still at work) and every other file."""
    target = tmp_path / "tool.py"
    target.write_bytes(OLD)
    script = tmp_path.parent / f"{tmp_path.name}-child.py"
    script.write_text(CHILD)
    rng = random.Random(3)
    strays: list[Path] = []
    for _trial in range(60):  # until a kill lands mid-write
        child = await asyncio.create_subprocess_exec(
            sys.executable, str(script), str(target), stdout=PIPE, stderr=PIPE
        )
        try:
            assert child.stdout is not None
            assert (await asyncio.wait_for(child.stdout.readline(), 60)).startswith(b"READY")
            await asyncio.sleep(rng.uniform(0.0, 0.1))
            child.kill()
        finally:
            if child.returncode is None:
                child.kill()
            await asyncio.wait_for(child.wait(), timeout=10)
        strays = _temporaries(target)
        if strays:
            break
    assert strays, "no kill landed between the temporary file's creation and the rename"
    _only_the_stale_ones_go(target, strays)


def _temporaries(target: Path) -> list[Path]:
    return sorted(target.parent.glob(f".{target.name}.*.tmp"))


def _only_the_stale_ones_go(target: Path, strays: list[Path]) -> None:
    tmp_path = target.parent
    others = [tmp_path / ".tool.py.notes.tmp", tmp_path / ".other.py.0123abcd.tmp"]
    for other in others:
        other.write_bytes(b"not a temporary file of tool.py")
    write_atomically(target, NEW)
    assert all(stray.exists() for stray in strays)  # fresh: perhaps a writer at work
    hours_ago = time.time() - 2 * 3600
    for path in [*strays, *others]:
        os.utime(path, (hours_ago, hours_ago))
    write_atomically(target, OLD)
    assert target.read_bytes() == OLD
    assert sorted(tmp_path.iterdir()) == sorted([target, *others])
