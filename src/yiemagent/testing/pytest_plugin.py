"""The pytest plugin of yiemagent: the `yiem_cassette` fixture and `--cassette-mode`.

    def test_answer(yiem_cassette):
        model = yiem_cassette(get_model("openai/gpt-4o-mini"))
        agent = Agent(model=model)
        ...

`yiem_cassette(model)` returns `model` recording into the test's cassette, or a model
replaying it, by the mode:
- `once` (default): replay when the cassette exists, else record it;
- `new`: record afresh (the old cassette is replaced);
- `none`: replay only; a missing cassette fails the test (CI runs offline with this).
The cassette is `cassettes/<test module>/<test name>.jsonl` beside the test file
(`yiem_cassette.path`; a test in a class is `<class>.<test name>`; a name that holds other
characters than letters, digits, `_`, `.`, `-` and its parameters' brackets, or is long, is
kept short and safe, and ends with 8 hex digits of its hash, so no two tests share one).
The models one test replays share the cassette: a recording answers once, whichever of them
asks (two agents asking the same question get the two answers recorded, in order, not the
first one twice). A recording is kept only when its test passed: it is written beside the
cassette as `<name>.jsonl.part` and takes the cassette's place at the end of a test that
passed; a test that failed leaves the cassette as it was (none, or the old one), so a
recording cut short or holding a passing fault (a 429, a timeout) is never replayed.
Installed as the `pytest11` entry point `yiemagent`; without the installed package, add
`pytest_plugins = ["yiemagent.testing.pytest_plugin"]` to the root `conftest.py`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from yiemagent.errors import exception_summary
from yiemagent.testing._cassette import ReplayModel, record, replay

if TYPE_CHECKING:
    from yiemagent.types import Model

__all__ = ["Cassette", "pytest_addoption", "pytest_runtest_makereport", "yiem_cassette"]

CassetteMode = Literal["once", "new", "none"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--cassette-mode once|new|none` (see the module docstring)."""
    parser.addoption(
        "--cassette-mode",
        choices=("once", "new", "none"),
        default="once",
        help="yiem_cassette: replay a cassette that exists and record a missing one (once), "
        "record every cassette afresh (new), or only replay (none).",
    )


class Cassette:
    """The `yiem_cassette` fixture's value: call it with a model."""

    def __init__(self, path: Path, mode: CassetteMode) -> None:
        self.path = path
        self.mode = mode
        self.recording = mode == "new" or (mode == "once" and not path.exists())
        """Whether this test records (else it replays)."""
        self.part = path.with_name(path.name + ".part")
        """Where a recording is written until its test has passed."""
        self._started = False
        self._replay: ReplayModel | None = None
        """The test's one replaying model: each call hands it out again, so the answers
        the cassette holds are shared out among the test's models, each used once."""

    def __call__(self, model: Model) -> Model:
        """`model` recording into the cassette, or the cassette's replay.

        Raises:
            pytest.fail: mode "none" and no cassette.
        """
        if not self.recording:
            if self._replay is None:
                if not self.path.exists():
                    pytest.fail(f"no cassette {self.path} (--cassette-mode none only replays)")
                self._replay = replay(self.path)
            return self._replay.with_model(model)
        if not self._started:  # a fresh recording: one file per test, written from the start
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.part.write_text("", encoding="utf-8")
            self._started = True
        return record(model, self.part)

    def finish(self, passed: bool) -> None:
        """After the test: a recording of a test that passed becomes the cassette; one of
        a test that failed is dropped."""
        if not self._started:
            return
        if passed:
            self.part.replace(self.path)
        else:
            self.part.unlink(missing_ok=True)


_PASSED = pytest.StashKey[bool]()
_CASSETTE = pytest.StashKey[Cassette]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Note on the test whether its setup and call passed (`yiem_cassette` reads it),
    afresh at each setup: a test run again (pytest-rerunfailures runs the same item once
    more) keeps the recording of the attempt that passed."""
    report = yield
    if report.when == "setup":
        item.stash[_PASSED] = report.passed
    elif report.when == "call":
        item.stash[_PASSED] = item.stash.get(_PASSED, True) and report.passed
        cassette = item.stash.get(_CASSETTE, None)
        error = call.excinfo.value if call.excinfo is not None else None
        if (
            cassette is not None
            and not cassette.recording
            and error is not None
            and "CassetteMismatch" in exception_summary(error)
        ):
            # the diff said what changed, not what to do when the change is meant (a
            # prompt or a tool edited since the recording): the cassette stays until asked
            report.sections.append(
                (
                    "yiem_cassette",
                    f"The test sent other requests than its cassette {cassette.path} holds. "
                    f"If the change is meant, record it again: "
                    f"pytest --cassette-mode new {item.nodeid}",
                )
            )
    return report


_PLAIN = re.compile(r"[A-Za-z0-9_.-]+(\[[A-Za-z0-9_.-]*\])?")
"""A test name kept as it is in its cassette's file name (its brackets made `_`)."""

_LONGEST = 120
"""Characters of a cassette's name before `.jsonl`; the rest gives way to a hash."""


def _file_name(node: pytest.Item) -> str:
    """The cassette's file name (without `.jsonl`) for the test `node`: its name, its
    class's before it. A name with other characters (a parameter such as "a/b" or "a b",
    which both became "a_b") or too long to be a file name ends with a hash of the name
    as it is, so two tests never share a cassette."""
    name = node.name
    cls = getattr(node, "cls", None)
    if cls is not None:
        name = f"{cls.__name__}.{name}"
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_")
    if _PLAIN.fullmatch(node.name) and len(safe) <= _LONGEST:
        return safe
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{safe[: _LONGEST - 9]}-{digest}"


@pytest.fixture
def yiem_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette]:
    """Record or replay this test's model calls (see the module docstring)."""
    mode: CassetteMode = request.config.getoption("--cassette-mode")
    test_file = Path(str(request.node.path))
    path = test_file.parent / "cassettes" / test_file.stem / f"{_file_name(request.node)}.jsonl"
    cassette = Cassette(path, mode)
    request.node.stash[_CASSETTE] = cassette
    yield cassette
    cassette.finish(request.node.stash.get(_PASSED, False))
