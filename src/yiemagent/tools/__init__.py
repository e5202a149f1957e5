"""The tools layer: schema validation and coercion, `@tool`, `ToolStore`, tool files, and the
built-in `listTools` and `writeTool` (DESIGN §4).

Public: `tool` (a typed function as an `AgentTool`), `to_agent_tool` (anything the places that
take tools accept, as an `AgentTool`), `ToolStore` (with `ToolLoadError`, what its `load_dir`
raises for files that failed to load; also in `yiemagent.errors`); the built-ins
`list_tools_tool` (with `offers_list_tools`, whether a front end offers it on a model) and
`write_tool_tool` (with `WriteToolError`, its refusals; `function_source`, a code part as the
person approving a write reads it; `WRITTEN_MARK`, the first line of a file it wrote;
`MAX_CODE_CHARS`, its cap on code; `WRITTEN_TOOL_TIMEOUT_S`, a written tool's default
timeout); the schema checks `validate_arguments_against_schema` (raising `ToolArgumentsError`)
and `check_schema`.

Modules: `schema` (validating arguments: a compiled fast check, then `jsonschema`),
`decorator` (`@tool`), `store` (`ToolStore`), `builtin` (`listTools`), `write_tool`
(`writeTool`); private: `_coerce` (the coercions of what a model sends, for `schema`),
`_given` (`to_agent_tool`), `_import_tool_file` (importing a tool folder's files for
`ToolStore.load_dir`), `_render_tool_file` (the file `writeTool` writes from the model's
code parts).
"""

from yiemagent.errors import ToolLoadError
from yiemagent.tools._given import to_agent_tool
from yiemagent.tools._render_tool_file import WRITTEN_MARK, function_source
from yiemagent.tools.builtin import list_tools_tool, offers_list_tools
from yiemagent.tools.decorator import tool
from yiemagent.tools.schema import (
    ToolArgumentsError,
    check_schema,
    validate_arguments_against_schema,
)
from yiemagent.tools.store import ToolStore
from yiemagent.tools.write_tool import (
    MAX_CODE_CHARS,
    WRITTEN_TOOL_TIMEOUT_S,
    WriteToolError,
    write_tool_tool,
)

__all__ = [
    "MAX_CODE_CHARS",
    "WRITTEN_MARK",
    "WRITTEN_TOOL_TIMEOUT_S",
    "ToolArgumentsError",
    "ToolLoadError",
    "ToolStore",
    "WriteToolError",
    "check_schema",
    "function_source",
    "list_tools_tool",
    "offers_list_tools",
    "to_agent_tool",
    "tool",
    "validate_arguments_against_schema",
    "write_tool_tool",
]

# Exceptions name this package, their public path, in tracebacks and pickles (pickle finds
# them here); classes with annotations keep their module, where `get_type_hints` reads them.
for _error in (WriteToolError,):
    _error.__module__ = __name__
del _error
