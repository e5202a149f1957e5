"""Tool file served by `yiem mcp serve` in the tests: add two integers."""

from yiemagent import AgentTool, tool


@tool(parallel=True)
def add(a: int, b: int) -> str:
    """Add two integers.

    Args:
        a: the first number.
        b: the second number.
    """
    return str(a + b)


def get_tool() -> AgentTool:
    return add
