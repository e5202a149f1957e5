"""`write_atomically` onto a file that is not a regular file: a device (`--json /dev/null`,
`--html /dev/stdout` on a terminal) or a named pipe (`--html >(cat)`). It renamed a new
regular file over the name: run as root, which containers and CI often are, `yiem eval
--json /dev/null` replaced the machine's /dev/null with a regular file, and every program
writing to /dev/null then filled it; a pipe was "No such file or directory". Such a target
is written into, as `open(path, "wb")` would, and stays what it is."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from yiemagent.cli.main import main
from yiemagent.files import write_atomically


@pytest.fixture
def device(tmp_path: Path) -> Path:
    """A character device node like /dev/null (1, 3), in a folder of the test's own."""
    node = tmp_path / "dev" / "null"
    node.parent.mkdir()
    try:
        os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs CAP_MKNOD")
    return node


def test_a_device_is_written_into_and_stays_a_device(device: Path) -> None:
    write_atomically(device, b"the report\n")
    assert stat.S_ISCHR(device.stat().st_mode)
    assert os.listdir(device.parent) == ["null"]  # no temporary file left beside it


def test_a_named_pipe_gets_the_bytes_and_stays_a_pipe(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()), daemon=True)
    reader.start()
    write_atomically(pipe, b"the page\n")
    reader.join(30)
    assert got == [b"the page\n"]
    assert stat.S_ISFIFO(pipe.stat().st_mode)


def test_a_link_to_a_device_is_written_through_to_it(device: Path) -> None:
    link = device.parent / "stdout"
    link.symlink_to(device)
    write_atomically(link, b"x")
    assert link.is_symlink() and stat.S_ISCHR(device.stat().st_mode)


def test_yiem_eval_json_onto_a_device_leaves_the_device(
    tmp_path: Path, device: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"name": "a", "input": "hi", "metadata": {"script": "say", "text": "x"}}\n')
    argv = ["eval", str(data), "--agent", "tests.evals._agents:make_agent"]
    assert main([*argv, "--json", str(device)]) == 0, capsys.readouterr().err
    assert stat.S_ISCHR(device.stat().st_mode)
