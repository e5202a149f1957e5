"""`yiem --version` prints the installed yiemagent's version, as pip, git and most CLIs do;
it was "No such option: --version", exit 2."""

from __future__ import annotations

from pathlib import Path

import yiemagent
from tests._yiem import yiem_in


def test_version_prints_the_package_version(tmp_path: Path) -> None:
    done = yiem_in(tmp_path, "--version", env={"NO_COLOR": "1"})
    assert (done.returncode, done.stdout, done.stderr) == (0, f"yiem {yiemagent.__version__}\n", "")


def test_the_commands_still_run_after_it(tmp_path: Path) -> None:
    done = yiem_in(tmp_path, "models", "install", "nope", env={"NO_COLOR": "1"})
    assert done.returncode == 1
    assert done.stderr.startswith("yiem: error: unknown embedded model 'nope'")
