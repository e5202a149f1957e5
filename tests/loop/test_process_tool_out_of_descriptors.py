"""Tools in a process out of file descriptors: a call for which no worker thread could be
started, or whose `isolation="process"` worker (DESIGN R-4.5) could not be, got the bare
"[Errno 24] Too many open files" as its result, naming neither what could not start nor
that the tool itself did not fail. Now a call without a thread waits for one of those
running, and one without a process is told that the tool process could not be started and
why. Real processes: `RLIMIT_NOFILE` 64, or every descriptor taken."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

TOOLS = textwrap.dedent(
    """
    import os, time

    def hold(tool_call_id, args, signal, on_update):
        time.sleep(args.get("s", 1.0))
        return f"pid {os.getpid()}"
    """
)

PRELUDE = textwrap.dedent(
    """
    import asyncio, json, os, resource

    from yiemagent import Agent, AgentTool, ToolResultMessage
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.types import text_of
    from held_tools import hold

    SCHEMA = {"type": "object", "properties": {"s": {"type": "number"}}}

    async def batch(n, isolation, s=1.0):
        calls = [faux_tool_call("hold", {"s": s}) for _ in range(n)]
        fm = FauxModel([faux_message(*calls), "done"])
        tool = AgentTool("hold", "hold", "hold", SCHEMA, hold, isolation=isolation,
                         parallel=True)
        agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
        await agent.prompt("go")
        results = [text_of(m.content) for m in agent.state.messages
                   if isinstance(m, ToolResultMessage)]
        return results, text_of(agent.state.messages[-1].content)
    """
)

FIFTY = """
resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))

async def main():
    print(json.dumps([await batch(50, "process"), await batch(50, "process")]))

asyncio.run(main())
"""

NONE_LEFT = """
async def main():
    await batch(4, "thread", s=0.2)  # idle worker threads, and no idle process
    taken = []
    try:
        while True:
            taken.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    refused = await batch(1, "process")
    for fd in taken:
        os.close(fd)
    print(json.dumps([refused, await batch(1, "process")]))

asyncio.run(main())
"""

REFUSAL = "the tool process could not be started: Too many open files"


def _child(tmp_path: Path, body: str) -> list[tuple[list[str], str]]:
    """What the script `PRELUDE + body` prints: the (results, last answer) of its batches."""
    (tmp_path / "held_tools.py").write_text(TOOLS)
    script = tmp_path / "child.py"
    script.write_text(PRELUDE + textwrap.dedent(body))
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=170
    )
    assert done.returncode == 0, done.stderr[-3000:]
    batches: list[tuple[list[str], str]] = json.loads(done.stdout.splitlines()[-1])
    return batches


@pytest.mark.timeout(180)
def test_fifty_calls_at_64_descriptors_answer_or_say_what_could_not_start(
    tmp_path: Path,
) -> None:
    for results, last in _child(tmp_path, FIFTY):
        assert last == "done"
        assert len(results) == 50
        assert {text for text in results if not text.startswith("pid ")} <= {REFUSAL}, results


@pytest.mark.timeout(180)
def test_a_tool_process_that_cannot_start_is_said_so(tmp_path: Path) -> None:
    (refused, last), (answered, _) = _child(tmp_path, NONE_LEFT)
    assert refused == [REFUSAL]
    assert last == "done"
    assert len(answered) == 1 and answered[0].startswith("pid "), answered
