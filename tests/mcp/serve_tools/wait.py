"""Tool file served in the tests: waits until its signal is aborted, and says so in a file."""

import asyncio
import os
from pathlib import Path

from yiemagent import AbortSignal, AgentTool, tool


def _mark(name: str, text: str) -> None:
    folder = os.environ.get("MCP_TEST_MARKERS", "")
    if folder:
        Path(folder, name).write_text(text)


@tool
async def wait(tag: str, signal: AbortSignal) -> str:
    """Wait until cancelled (at most 60 s).

    Args:
        tag: names the marker files written in $MCP_TEST_MARKERS.
    """
    _mark(f"{tag}.started", "1")
    try:
        await asyncio.wait_for(signal.wait(), 60)
    except TimeoutError:
        return "not cancelled"
    _mark(f"{tag}.aborted", signal.reason or "")
    return "stopped"


def get_tool() -> AgentTool:
    return wait
