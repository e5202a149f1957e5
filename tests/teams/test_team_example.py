"""`examples/team/team.toml` on the embedded model: the router hands each sample question of
the file's header to the specialist for it, which calls its tool (DESIGN §17). The routing
rests on the example's own words (the router's prompt and each specialist's description,
which its transfer tool shows the model)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

TEAM = Path(__file__).resolve().parents[2] / "examples" / "team" / "team.toml"

ROUTES = {
    "What is 17 * 23?": ("math", "calculator"),
    "What time is it in Tokyo?": ("time", "get_time"),
}
"""Each sample question of the header, with the specialist and the tool that answer it."""


def test_the_routes_are_the_header_s_sample_questions() -> None:
    header = re.findall(
        r'^#\s+yiem run --agent examples/team/team.toml "(.+)"$', TEAM.read_text(), re.M
    )
    assert header == list(ROUTES)


@pytest.mark.local_model
@pytest.mark.slow
@pytest.mark.parametrize("question", list(ROUTES))
def test_each_sample_question_reaches_its_specialist(question: str) -> None:
    # The 0.5B model sent "What time is it in Tokyo?" to math (which tried `time()` in the
    # calculator): its transfer call to time wrote a made-up time as its reason.
    agent, tool = ROUTES[question]
    proc = subprocess.run(
        [sys.executable, "-m", "yiemagent.cli.main", "run", "--agent", str(TEAM), question],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    calls = re.findall(r"^→ (\w+)", proc.stderr, re.M)
    assert calls[:2] == [f"transfer_to_{agent}", tool], proc.stderr
