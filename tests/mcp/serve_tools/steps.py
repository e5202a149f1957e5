"""Tool file served in the tests: reports progress through `on_update`."""

from yiemagent import AgentTool, AgentToolResult, tool
from yiemagent.types import OnUpdate


@tool
async def steps(n: int, on_update: OnUpdate) -> AgentToolResult:
    """Count to n, reporting each step as progress.

    Args:
        n: how many steps.
    """
    for i in range(1, n + 1):
        on_update(AgentToolResult.text(f"step {i}", details={"progress": i, "total": n}))
    return AgentToolResult.text(f"counted to {n}", details={"counted": n})


def get_tool() -> AgentTool:
    return steps
