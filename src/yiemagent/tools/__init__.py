"""The tools layer: schema validation and repair, `@tool`, `ToolStore`, tool files, and the
built-in `listTools` and `writeTool` (DESIGN §2.3, §4)."""

from yiemagent.tools.builtin import list_tools_tool
from yiemagent.tools.decorator import tool
from yiemagent.tools.schema import (
    ToolArgumentsError,
    check_schema,
    validate_arguments_against_schema,
)
from yiemagent.tools.store import ToolStore
from yiemagent.tools.write_tool import WriteToolError, write_tool_tool

__all__ = [
    "ToolArgumentsError",
    "ToolStore",
    "WriteToolError",
    "check_schema",
    "list_tools_tool",
    "tool",
    "validate_arguments_against_schema",
    "write_tool_tool",
]
