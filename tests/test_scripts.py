"""The README's commands (`scripts/*.sh`, `.ci/run`) answer `--help` with their usage: no
set-up, no linters, no test run. `.ci/run --help` used to start the whole CI run (it
ignored its arguments), `scripts/test.sh --help` the set-up, ruff and mypy before pytest's
help, and `scripts/demo.sh --help` a first-time install of the model."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the scripts in a folder with no `.venv`, and a Python that must not run."""
    (tmp_path / "scripts").mkdir()
    for name in ("demo.sh", "setup.sh", "test.sh"):
        shutil.copy(ROOT / "scripts" / name, tmp_path / "scripts" / name)
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return tmp_path


def _run(checkout: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": str(checkout / "no-python")}  # set-up would fail at once
    return subprocess.run(
        ["bash", *argv], cwd=checkout, env=env, capture_output=True, text=True, timeout=30
    )


@pytest.mark.parametrize(
    ("script", "says"),
    [
        (".ci/run", "usage: .ci/run"),
        ("scripts/test.sh", "usage: scripts/test.sh"),
        ("scripts/demo.sh", "usage: scripts/demo.sh"),
        ("scripts/setup.sh", "usage: scripts/setup.sh"),
    ],
)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_the_usage_and_does_nothing_else(
    checkout: Path, script: str, says: str, flag: str
) -> None:
    done = _run(checkout, script, flag)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(says), done.stdout
    assert done.stderr == ""
    assert not (checkout / ".venv").exists()


def test_setup_refuses_an_unknown_kind_before_it_makes_a_venv(checkout: Path) -> None:
    done = _run(checkout, "scripts/setup.sh", "dmeo")
    assert done.returncode == 2
    assert done.stderr.strip() == "usage: scripts/setup.sh demo|test|bench"
    assert not (checkout / ".venv").exists()
