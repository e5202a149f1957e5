"""DESIGN R-4.2, R-4.5: the worker threads of plain-function tools — they never block the
event loop or one another, a blocked or abandoned tool never holds up later calls, what a
tool raises (even `StopIteration`) is its error result, and a forked child runs plain tools
on threads of its own."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
import time
from typing import Any

from tests.loop._kit import call, make_tool, run_batch, texts


async def test_r4_2_a_plain_tool_never_blocks_another_or_the_loop() -> None:
    """Eight plain tools that can only finish together (a barrier) and a ticker on the loop:
    had any two shared a thread, or a tool held the loop, the barrier would break."""
    barrier = threading.Barrier(8, timeout=10)
    ticks: list[float] = []

    def meet(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        barrier.wait()
        time.sleep(0.1)  # blocks its thread, never the loop
        return f"met {args['n']}"

    async def ticker() -> None:
        while len(ticks) < 10:
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.005)

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    tool = make_tool("meet", meet, schema=schema)
    task = asyncio.create_task(ticker())
    calls = [call("meet", {"n": i}, id=f"c{i}") for i in range(8)]
    batch, _, _ = await run_batch([tool], *calls, tool_execution="parallel")
    await task
    assert texts(batch) == [f"met {i}" for i in range(8)]
    assert not barrier.broken
    assert len(ticks) == 10


async def test_r4_5_an_abandoned_plain_tool_never_holds_up_later_calls() -> None:
    """Tools that hang past their timeout keep their threads; the next calls get others."""
    release = threading.Event()

    def hang(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        release.wait(30)
        return "late"

    def quick(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "quick"

    hung = make_tool("hang", hang, timeout_s=0.1, parallel=False)
    try:
        for round_ in range(3):
            batch, _, _ = await run_batch(
                [hung, make_tool("quick", quick)], call("hang", id=f"h{round_}"), call("quick")
            )
            assert texts(batch) == ["Tool hang timed out after 0.1 s", "quick"]
    finally:
        release.set()


async def test_r4_1_a_plain_tool_raising_stop_iteration_gets_its_error_result() -> None:
    """Failed before: asyncio futures refuse a `StopIteration`, so the call hung until its
    timeout ("timed out after 5 s")."""

    def stop(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        raise StopIteration("no more items")

    batch, _, _ = await run_batch([make_tool("stop", stop, timeout_s=5)], call("stop"))
    assert batch.messages[0].is_error
    assert texts(batch) == ["Tool stop raised StopIteration: no more items"]  # not timed out


FORK_SCRIPT = textwrap.dedent(
    """
    import asyncio, os, threading
    from yiemagent import AgentContext, AgentLoopConfig, AgentTool, UserMessage, run_agent_loop
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    def where(tool_call_id, args, signal, on_update):
        return f"{os.getpid()} {threading.current_thread().name}"

    tool = AgentTool(name="where", label="Where", description="Where it runs.",
                     input_schema={"type": "object"}, execute=where, timeout_s=5)

    def once():
        fm = FauxModel([faux_message(faux_tool_call("where", {})), "done"])
        messages = asyncio.run(run_agent_loop(
            [UserMessage("go")], AgentContext(tools=[tool]), AgentLoopConfig(model=fm.model),
            lambda e: None, stream_fn=fm.stream_fn))
        return messages[2].content[0].text

    print("parent", once(), flush=True)
    pid = os.fork()
    if pid == 0:
        print("child", os.getpid(), once(), flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    print("parent", once(), "child status", status, flush=True)
    """
)


def test_r4_2_a_forked_child_runs_plain_tools_on_its_own_threads() -> None:
    """Failed before: the child inherited the pool's idle count but not its threads, so its
    first plain tool waited for a worker that does not exist ("timed out after 5 s")."""
    done = subprocess.run(
        [sys.executable, "-c", FORK_SCRIPT], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    child = next(line for line in lines if line.startswith("child "))
    parts = child.split()  # "child <pid> <pid the tool ran in> <its thread>"
    assert len(parts) == 4 and parts[2] == parts[1] and parts[3].startswith("yiem-tool_"), child
    assert lines[-1].endswith("child status 0"), lines
