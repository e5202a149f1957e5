"""An output file that is the command's own standard output or error (DESIGN §8): while
a command runs, descriptor 1 is a copy of stderr (so that tools' stray prints stay off the
answer), so `yiem eval --json /dev/stdout >out 2>log` replaced `log`, the progress lines
and all, with the report, and `--json log 2>log` did the same. Such a path is refused
before anything runs, in one line that says `-` is standard output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CASE = '{"name": "a", "input": "hi", "metadata": {"script": "say", "text": "x"}}\n'


def _eval(tmp_path: Path, target: str) -> tuple[int, str, str]:
    data = tmp_path / "d.jsonl"
    data.write_text(CASE)
    out, log = tmp_path / "out.txt", tmp_path / "log.txt"
    argv = ["eval", str(data), "--agent", "tests.evals._agents:make_agent", "--json", target]
    with out.open("w") as stdout, log.open("w") as stderr:
        code = subprocess.run(
            [sys.executable, "-m", "yiemagent.cli.main", *argv],
            stdout=stdout,
            stderr=stderr,
            cwd=ROOT,
            timeout=120,
        ).returncode
    return code, out.read_text(), log.read_text()


@pytest.mark.parametrize(
    ("target", "stream"),
    [
        ("/dev/stdout", "standard output; give - for standard output"),
        ("/dev/fd/1", "standard output; give - for standard output"),
        ("/dev/stderr", "standard error"),
        ("{log}", "standard error"),
        ("{out}", "standard output; give - for standard output"),
    ],
)
def test_eval_json_onto_its_own_output_or_error_is_refused_and_both_kept(
    tmp_path: Path, target: str, stream: str
) -> None:
    target = target.format(log=tmp_path / "log.txt", out=tmp_path / "out.txt")
    code, out, log = _eval(tmp_path, target)
    assert code != 0 and out == "", (out, log)
    (line,) = log.strip().splitlines()
    assert line.startswith(
        f"yiem: error: cannot write {target} (--json): it is this command's {stream}"
    )


def test_eval_json_to_a_file_beside_them_is_written(tmp_path: Path) -> None:
    code, out, log = _eval(tmp_path, str(tmp_path / "r.json"))
    assert code == 0, log
    assert '"passed": 1' in (tmp_path / "r.json").read_text()
    assert log.startswith("eval: 1 to run") and "PASS" in out
