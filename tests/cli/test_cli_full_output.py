"""Standard output on a full disk (DESIGN §8): `yiem models > list.txt` with no space left
exited 0 and wrote nothing, since the last flush's error was dropped; `yiem run` and `yiem
trace --html -` said only "[Errno 28] No space left on device", naming nothing. Each now
ends with one line naming the standard output and exits 1. Real processes writing to
/dev/full (every write fails with ENOSPC) and to a file past the process's file size limit
(EFBIG)."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here"),
]

SCRIPT = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel

    fm = FauxModel(["word " * 3000])
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)


def _yiem(argv: list[str], out: Path, tmp_path: Path, limit: int | None = None) -> tuple[int, str]:
    """Run `argv` with its stdout written to `out`; (exit status, stderr)."""

    def limited() -> None:
        if limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    with open(out, "wb") as handle:
        done = subprocess.run(
            argv,
            stdout=handle,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "YIEM_DATA_DIR": str(tmp_path / "data")},
            preexec_fn=limited,
            timeout=100,
        )
    return done.returncode, done.stderr


def _the_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if not line.startswith("yiem: warning:")]
    assert len(lines) == 1, stderr
    return lines[0]


def test_yiem_models_onto_a_full_disk_fails_naming_the_standard_output(tmp_path: Path) -> None:
    code, err = _yiem(
        [sys.executable, "-m", "yiemagent.cli.main", "models"], Path("/dev/full"), tmp_path
    )
    assert code == 1, err
    assert _the_line(err) == (
        "yiem: error: cannot write the standard output: No space left on device"
    )


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("where", ["dev-full", "file-size-limit"])
def test_yiem_run_onto_a_full_disk_fails_naming_the_standard_output(
    tmp_path: Path, json_flag: list[str], where: str
) -> None:
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    (tmp_path / "tools").mkdir()
    argv = [sys.executable, str(script), "run", "hi", "--tools", str(tmp_path / "tools")]
    if where == "dev-full":
        code, err = _yiem(argv + json_flag, Path("/dev/full"), tmp_path)
        reason = "No space left on device"
    else:
        code, err = _yiem(argv + json_flag, tmp_path / "out.txt", tmp_path, limit=4096)
        reason = "File too large"
    assert code == 1, err
    assert _the_line(err) == f"yiem: error: cannot write the standard output: {reason}"
    assert "Traceback" not in err


def test_yiem_trace_of_a_page_onto_a_full_disk_fails_naming_the_standard_output(
    tmp_path: Path,
) -> None:
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    (tmp_path / "tools").mkdir()
    log = tmp_path / "run.jsonl"
    argv = [sys.executable, str(script), "run", "hi", "--tools", str(tmp_path / "tools")]
    assert _yiem([*argv, "--json"], log, tmp_path)[0] == 0
    trace = [sys.executable, "-m", "yiemagent.cli.main", "trace", str(log), "--html", "-"]
    code, err = _yiem(trace, Path("/dev/full"), tmp_path)
    assert code == 1, err
    assert _the_line(err) == (
        "yiem: error: cannot write the standard output: No space left on device"
    )
