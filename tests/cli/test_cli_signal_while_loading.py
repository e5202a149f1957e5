"""Ctrl-C or SIGTERM while `yiem` still loads its modules (a second or so on a busy
machine, before any command runs; DESIGN §8): one line and 130 / 143, not a
KeyboardInterrupt traceback out of an import. A real process, started as the console script
starts it, whose import of one of the CLI's modules waits until the test has sent the
signal; an ignored SIGINT stays ignored."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

# The console script's own lines, after a finder that stops the import of
# yiemagent.cli.batch (one of the modules `yiemagent.cli.main` loads) for `wait_s` seconds,
# writing a file first so the test knows the import has begun.
SCRIPT = """\
import sys
import time
from pathlib import Path

marker, wait_s = Path(sys.argv.pop(1)), float(sys.argv.pop(1))


class Slow:
    def find_spec(self, name, path=None, target=None):
        if name == "yiemagent.cli.batch":
            sys.meta_path.remove(self)
            marker.write_text("loading")
            time.sleep(wait_s)
        return None


sys.meta_path.insert(0, Slow())
from yiemagent.cli.main import main

sys.exit(main())
"""


def start(tmp_path: Path, wait_s: float, **options: object) -> tuple[subprocess.Popen[str], Path]:
    """`yiem eval --help` through the script; returns once its slow import has begun."""
    script, marker = tmp_path / "yiem_slow.py", tmp_path / "loading"
    script.write_text(SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(marker), str(wait_s), "eval", "--help"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,  # type: ignore[call-overload]
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.02)
    return proc, marker


@pytest.mark.parametrize(
    ("signum", "status", "line"),
    [(signal.SIGINT, 130, "yiem: interrupted"), (signal.SIGTERM, 143, "yiem: terminated")],
)
def test_a_signal_while_yiem_loads_is_one_line_and_its_status(
    tmp_path: Path, signum: signal.Signals, status: int, line: str
) -> None:
    proc, _ = start(tmp_path, 60)
    try:
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert (proc.returncode, err, out) == (status, line + "\n", "")


def _ignoring_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_an_ignored_sigint_while_yiem_loads_stays_ignored(tmp_path: Path) -> None:
    proc, _ = start(tmp_path, 3, preexec_fn=_ignoring_sigint)
    try:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Usage: yiem eval" in out


def test_once_loaded_the_signals_are_the_program_s_again() -> None:
    """A program that imports the CLI (a test, an embedding) keeps its handlers: Ctrl-C is
    a KeyboardInterrupt again, SIGTERM the default."""
    check = (
        "import signal, yiemagent.cli.main\n"
        "print(signal.getsignal(signal.SIGINT) is signal.default_int_handler,"
        " signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)\n"
    )
    done = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "True True\n"), done.stderr
