"""R-4.5: a plain tool abandoned after its timeout is left to finish on its thread; it must not
keep a finished program from exiting (the workers are daemon threads)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

SCRIPT = textwrap.dedent(
    """
    import asyncio, time
    from yiemagent import AgentContext, AgentLoopConfig, AgentTool, UserMessage, run_agent_loop
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    def hang(tool_call_id, args, signal, on_update):
        time.sleep(60)  # ignores its signal
        return "late"

    tool = AgentTool(name="hang", label="Hang", description="Never returns.",
                     input_schema={"type": "object"}, execute=hang, timeout_s=0.2)
    fm = FauxModel([faux_message(faux_tool_call("hang", {})), "done"])
    messages = asyncio.run(run_agent_loop([UserMessage("go")], AgentContext(tools=[tool]),
                           AgentLoopConfig(model=fm.model), lambda e: None,
                           stream_fn=fm.stream_fn))
    print(messages[2].content[0].text)
    """
)


def test_r4_5_a_hung_plain_tool_does_not_block_interpreter_exit() -> None:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=30
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "timed out after 0.2 s" in done.stdout
    assert elapsed < 15, f"exit took {elapsed:.1f} s"
