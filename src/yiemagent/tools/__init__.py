"""The tools layer: schema validation and repair, `@tool`, `ToolStore`, tool files, and the
built-in `listTools` and `writeTool` (DESIGN §2.3, §4)."""

from yiemagent.tools.schema import (
    ToolArgumentsError,
    check_schema,
    validate_arguments_against_schema,
)

__all__ = [
    "ToolArgumentsError",
    "check_schema",
    "validate_arguments_against_schema",
]
