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
(`yiem_cassette.path`). Installed as the `pytest11` entry point `yiemagent`; without the
installed package, add `pytest_plugins = ["yiemagent.testing.pytest_plugin"]` to the root
`conftest.py`.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from yiemagent.testing._cassette import record, replay

if TYPE_CHECKING:
    from yiemagent.types import Model

__all__ = ["Cassette", "pytest_addoption", "yiem_cassette"]

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
        self._started = False

    def __call__(self, model: Model) -> Model:
        """`model` recording into the cassette, or the cassette's replay.

        Raises:
            pytest.fail: mode "none" and no cassette.
        """
        if not self.recording:
            if not self.path.exists():
                pytest.fail(f"no cassette {self.path} (--cassette-mode none only replays)")
            return replay(self.path)
        if not self._started:  # a fresh recording: one file per test, written from the start
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text("", encoding="utf-8")
            self._started = True
        return record(model, self.path)


@pytest.fixture
def yiem_cassette(request: pytest.FixtureRequest) -> Cassette:
    """Record or replay this test's model calls (see the module docstring)."""
    mode: CassetteMode = request.config.getoption("--cassette-mode")
    test_file = Path(str(request.node.path))
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name).strip("_")
    path = test_file.parent / "cassettes" / test_file.stem / f"{name}.jsonl"
    return Cassette(path, mode)
