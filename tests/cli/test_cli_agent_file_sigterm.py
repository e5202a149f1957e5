"""`yiem run --agent FILE` stopped by a signal mid-answer (DESIGN §8) winds down as
`yiem run --tools` does: the run is aborted (its answer's line ended), one line says why,
and the status is 130 for Ctrl-C, 143 for SIGTERM. Real processes on a faux model that
streams slowly."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

SCRIPT = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text

    slow = faux_message(faux_text("word " * 4000))
    fm = FauxModel([slow], model_id="slow", delay_s=0.01, chunk_size=5)
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)


@pytest.mark.parametrize(
    ("sent", "code", "said"),
    [(signal.SIGINT, 130, "yiem: interrupted"), (signal.SIGTERM, 143, "yiem: terminated")],
    ids=["ctrl-c", "sigterm"],
)
def test_a_signal_winds_an_agent_file_s_run_down(
    tmp_path: Path, sent: signal.Signals, code: int, said: str
) -> None:
    """SIGTERM used to kill `yiem run --agent` mid-word, silently (only Ctrl-C was
    handled there)."""
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    (tmp_path / "tools").mkdir()
    team = tmp_path / "team.toml"
    team.write_text('[agents.helper]\nsystem_prompt = "Help."\ntools = ["tools"]\n')
    proc = subprocess.Popen(
        [sys.executable, str(script), "run", "hi", "--agent", str(team)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.read(10) == "word word "  # the answer is streaming
        proc.send_signal(sent)
        started = time.monotonic()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == code, err
    assert time.monotonic() - started < 30
    assert err.strip().splitlines()[-1] == said, err
    assert "Traceback" not in err
    assert out.endswith("\n") and len(out) < len("word " * 4000)  # cut short, line ended
