"""Test tool `remove` for the chat's approval test (DESIGN §14): every call is held for a
yes/no (`requires_approval=True`); when it runs it appends its name to the file named by
`$YIEM_TEST_REMOVED` (so the test sees which calls really ran)."""

from __future__ import annotations

import os

from yiemagent import AgentTool, tool


@tool(requires_approval=True)
def remove(name: str) -> str:
    """Remove an item (a test tool: it only records the name).

    Args:
        name: the item to remove.
    """
    with open(os.environ["YIEM_TEST_REMOVED"], "a", encoding="utf-8") as log:
        log.write(name + "\n")
    return f"removed {name}"


def get_tool() -> AgentTool:
    return remove
