"""`yiem eval --ray [ADDRESS]`, spelled as `yiem batch` spells it: one option names the Ray
cluster, bare for one on this machine (`--address` stays accepted, not shown)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evals.test_cli_eval import AGENT, dataset
from yiemagent.cli.batch import expand_ray_flag
from yiemagent.cli.main import main

ROOT = Path(__file__).resolve().parents[2]


def test_a_bare_ray_of_yiem_eval_is_a_local_cluster() -> None:
    assert expand_ray_flag(["eval", "d.yaml", "--ray"]) == ["eval", "d.yaml", "--ray", "local"]
    assert expand_ray_flag(["eval", "--ray", "auto", "d.yaml"])[2] == "auto"
    assert expand_ray_flag(["eval", "--ray", "--repeat", "2"])[2] == "local"


def test_the_help_shows_ray_with_its_address_and_no_second_option(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line an option
    assert main(["eval", "--help"]) == 0
    shown = capsys.readouterr().out
    assert "--ray" in shown and "an ADDRESS" in shown
    assert "--address" not in shown


def test_address_without_ray_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["eval", str(dataset(tmp_path)), "--agent", AGENT, "--address", "auto"])
    assert code == 2
    err = capsys.readouterr().err
    assert err == "yiem: error: --address names a Ray cluster; give it as --ray ADDRESS\n"


def test_the_address_after_ray_is_the_cluster_eval_connects_to(tmp_path: Path) -> None:
    if importlib.util.find_spec("ray") is None:
        pytest.skip("needs the ray extra")
    argv = ["eval", str(dataset(tmp_path)), "--agent", AGENT, "--ray", "bogus:addr"]
    done = subprocess.run(
        [str(Path(sys.executable).with_name("yiem")), *argv],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "bogus:addr" in done.stderr, done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
