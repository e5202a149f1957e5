"""Test tool `slow`: counts `steps` steps of `delay` seconds, reporting each as progress
(`on_update`); parallel, and it stops at once when its call is aborted."""

from __future__ import annotations

import time
from typing import Any

from yiemagent import AgentTool, AgentToolResult, TextContent, tool


@tool(parallel=True)
def slow(
    label: str, steps: int = 3, delay: float = 0.2, signal: Any = None, on_update: Any = None
) -> str:
    """Count slowly.

    Args:
        label: a name for this call.
        steps: how many steps.
        delay: seconds per step.
    """
    for step in range(1, steps + 1):
        if signal is not None and signal.aborted:
            return f"{label} stopped at step {step}"
        time.sleep(delay)
        if on_update is not None:
            on_update(AgentToolResult([TextContent(f"{label} step {step}/{steps}")]))
    return f"{label} done after {steps} steps"


def get_tool() -> AgentTool:
    return slow
