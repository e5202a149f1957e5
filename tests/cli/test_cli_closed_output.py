"""`yiem run ... | head -1` (DESIGN §8): when the reader of the output goes away, the run
is aborted (an agent's tools do not run), nothing is printed on stderr (no traceback, no "Exception
ignored"), and the exit status is 141, as for a tool that SIGPIPE ends. Real processes
behind a real pipe, on the faux model."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)

# 300,000 characters: more than a pipe holds, so the run is still writing when the reader
# goes away; then a tool call, which must not run once the output is gone.
SCRIPT = textwrap.dedent(
    """
    import sys

    import yiemagent.cli.main as m
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call

    answer = faux_message(faux_text("word " * 60_000), faux_tool_call("mark", {}))
    fm = FauxModel([answer, "done"], model_id="cli-pipe")
    m.resolve_model = lambda *args, **kwargs: fm.model
    sys.exit(m.main(sys.argv[1:]))
    """
)

TOOL = textwrap.dedent(
    """
    from pathlib import Path

    from yiemagent import tool

    @tool
    def mark() -> str:
        \"\"\"Leave a marker file.\"\"\"
        Path(__file__).with_name("marked").write_text("ran")
        return "marked"

    def get_tool():
        return mark
    """
)


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["text", "json"])
@pytest.mark.parametrize("agent_file", [False, True], ids=["tools", "agent file"])
def test_a_reader_that_goes_away_stops_the_run_quietly_with_141(
    tmp_path: Path, agent_file: bool, json_flag: list[str]
) -> None:
    script = tmp_path / "run_faux.py"
    script.write_text(SCRIPT)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "mark.py").write_text(TOOL)
    options = ["--tools", str(tools)]
    if agent_file:
        team = tmp_path / "team.toml"
        team.write_text('[agents.helper]\nsystem_prompt = "Help."\ntools = ["tools"]\n')
        options = ["--agent", str(team)]
    yiem = subprocess.Popen(
        [sys.executable, str(script), "run", "hi", *options, *json_flag],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert yiem.stdout is not None and yiem.stderr is not None
    first = yiem.stdout.read(23)  # `head -c 23`
    yiem.stdout.close()
    err = yiem.stderr.read().decode()
    assert yiem.wait(60) == 141, err
    assert err == ""
    assert first == (b'{"type": "agent_start"}' if json_flag else b"word " * 4 + b"wor")
    if agent_file:  # the Agent awaits its listeners: the run stops before its tool call
        assert not (tools / "marked").exists()
