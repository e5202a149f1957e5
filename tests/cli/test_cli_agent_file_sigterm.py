"""`yiem run --agent FILE` stopped by a signal mid-answer (DESIGN §8) winds down as
`yiem run --tools` does: the run is aborted (its answer's line ended), one line says why,
and the status is 130 for Ctrl-C, 143 for SIGTERM. Real processes on a faux model that
streams slowly."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests._signals import stop_when_ready

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


def _streaming(process: subprocess.Popen[str]) -> bool:
    assert process.stdout is not None
    assert process.stdout.read(10) == "word word "  # the answer is streaming
    return True


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
    ended = stop_when_ready(
        [sys.executable, str(script), "run", "hi", "--agent", str(team)],
        sent,
        _streaming,
        end_within_s=60,
    )
    out, err = ended.out, ended.err
    assert ended.code == code, err
    assert ended.after_s < 30
    assert err.strip().splitlines()[-1] == said, err
    assert "Traceback" not in err
    assert out.endswith("\n") and len(out) < len("word " * 4000)  # cut short, line ended
