"""`yiem run`'s standard output is the answer, or with `--json` one JSON event a line
(DESIGN §8): what a tool's child process writes to its own stdout (a tool that shells out
without capturing, a C library) goes to stderr, as what the tool's Python code prints
does, instead of landing between the JSON lines. Real processes on the faux model."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

SCRIPT = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    call = faux_message(faux_tool_call("shell", {"command": "echo FROM-THE-CHILD"}))
    fm = FauxModel([call, "the answer"], model_id="shell")
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)

SHELL_TOOL = textwrap.dedent(
    """
    import subprocess

    from yiemagent import tool

    @tool
    def shell(command: str) -> str:
        \"\"\"Run a shell command; its exit status.\"\"\"
        print("FROM-THE-TOOL")
        return f"exit {subprocess.call(command, shell=True)}"

    def get_tool():
        return shell
    """
)


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
def test_a_tool_s_child_process_writes_to_stderr_not_into_the_output(
    tmp_path: Path, json_flag: list[str]
) -> None:
    """The child's line used to land in stdout, among the JSON lines."""
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "shell.py").write_text(SHELL_TOOL)
    done = subprocess.run(
        [sys.executable, str(script), "run", "hi", "--tools", str(tools), *json_flag],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "FROM-THE-CHILD" in done.stderr and "FROM-THE-TOOL" in done.stderr
    lines = done.stdout.splitlines()
    assert "FROM-THE-CHILD" not in lines and "FROM-THE-TOOL" not in lines
    if json_flag:
        events = [json.loads(line) for line in lines]  # each line is JSON
        assert events[-1]["type"] == "agent_end", events[-1]
    else:
        assert done.stdout.strip().splitlines()[-1] == "the answer"


SPAWN_TOOL = textwrap.dedent(
    """
    import subprocess
    from pathlib import Path

    from yiemagent import tool

    @tool
    def shell(command: str) -> str:
        \"\"\"Start a background job; returns at once.\"\"\"
        job = subprocess.Popen(["sleep", "90"])
        Path(__file__).with_name("job.pid").write_text(str(job.pid))
        return "started"

    def get_tool():
        return shell
    """
)


def test_a_background_job_a_tool_started_does_not_hold_the_output_open(tmp_path: Path) -> None:
    """`yiem run ... | reader`: a child process a tool left running inherited the pipe, so
    the reader saw no end of input until that job ended (here 90 s), long after yiem had."""
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "shell.py").write_text(SPAWN_TOOL)
    try:
        done = subprocess.run(
            [sys.executable, str(script), "run", "hi", "--tools", str(tools)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=45,  # the job runs 90 s: reading to the end must not wait for it
        )
    finally:
        job = tools / "job.pid"
        if job.exists():
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(job.read_text()), signal.SIGKILL)
    assert done.returncode == 0
    assert done.stdout.strip().splitlines()[-1] == "the answer"
