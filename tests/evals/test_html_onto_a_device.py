"""`yiem eval --html /dev/null` (DESIGN §8): the page goes into the device, and no folder
of run timelines is made beside it. The timelines went to a new folder `/dev/null.runs/`
(run as root, in /dev itself), which nothing links to."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from yiemagent.cli.main import main


def test_eval_html_onto_a_device_makes_no_runs_folder_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    device = tmp_path / "dev" / "null"
    device.parent.mkdir()
    try:
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    data = tmp_path / "d.jsonl"
    data.write_text('{"name": "a", "input": "hi", "metadata": {"script": "say", "text": "x"}}\n')
    argv = ["eval", str(data), "--agent", "tests.evals._agents:make_agent", "--html", str(device)]
    assert main(argv) == 0, capsys.readouterr().err
    assert os.listdir(device.parent) == ["null"]
    assert stat.S_ISCHR(device.stat().st_mode)
