"""Rendering a tool file from the code parts `writeTool` receives (DESIGN R-4.15; seed 000 §15,
§17 tool file contract).

`render_tool_file` wraps the model's code bodies into a module whose `get_tool()` returns an
`AgentTool`; each part is parsed on its own first, so a syntax error names the part and its line.
"""

from __future__ import annotations

import ast
import json
import pprint
import textwrap
from typing import Any

from yiemagent.errors import YiemAgentError

__all__ = ["WRITTEN_MARK", "WriteToolError", "render_tool_file"]

WRITTEN_MARK = "# Written by yiemagent writeTool; writeTool may overwrite this file.\n"
"""The first line of every file `writeTool` writes: the only files it will overwrite."""


class WriteToolError(YiemAgentError, ValueError):
    """`writeTool` refused or failed; the text says why. Nothing was changed."""


def render_tool_file(
    *,
    name: str,
    label: str,
    description: str,
    input_schema: dict[str, Any],
    execute_code: str,
    imports: str = "",
    validate_code: str = "",
    prepare_code: str = "",
    parallel: bool = False,
    timeout_s: float | None = None,
    isolation: str = "thread",
) -> str:
    """The text of a tool file (seed 000 §17 contract: `get_tool() -> AgentTool`), starting
    with `WRITTEN_MARK`; `timeout_s` and `isolation` go into its `AgentTool`.

    Raises:
        WriteToolError: `execute_code` is empty, a code part does not parse (the text names the
            part and its line), or `imports` holds anything but import statements.
    """
    if not execute_code.strip():
        raise WriteToolError("executeCode is empty: give the body of execute(...)")
    import_lines = _check_imports(imports)
    execute_body, is_async = _check_body("executeCode", execute_code)
    parts = [
        WRITTEN_MARK.rstrip("\n"),
        f'"""Tool {name!r}, written by writeTool (DESIGN R-4.15). Seed 000 §17 contract."""',
        "",
        "import json",
        "from typing import Any",
        "",
        "from yiemagent import AgentTool, AgentToolResult",
        *import_lines,
        "",
        f"INPUT_SCHEMA: dict[str, Any] = {_literal(input_schema)}",
        "",
        "",
        f"{'async ' if is_async else ''}def _execute(tool_call_id: str, args: dict[str, Any], "
        "signal: Any, on_update: Any) -> Any:",
        execute_body,
        "",
        "",
        f"{'async ' if is_async else ''}def execute(tool_call_id: str, args: dict[str, Any], "
        "signal: Any, on_update: Any) -> Any:",
        f"    value = {'await ' if is_async else ''}_execute(tool_call_id, args, signal, "
        "on_update)",
        "    if isinstance(value, (AgentToolResult, str)):",
        "        return value",
        "    return json.dumps(value, default=str)",
        "",
    ]
    hooks = {"validate_arguments": "None", "prepare_arguments": "None"}
    for part, code, signature in (
        ("validateCode", validate_code, "validate_arguments(args: Any) -> Any"),
        ("prepareCode", prepare_code, "prepare_arguments(args: Any) -> Any"),
    ):
        if code.strip():
            body, part_async = _check_body(part, code)
            if part_async:
                raise WriteToolError(f"{part} cannot use await (it must be a plain function)")
            parts += ["", f"def {signature}:", body, ""]
            function = signature.split("(")[0]
            hooks[function] = function
    parts += [
        "",
        "def get_tool() -> AgentTool:",
        "    return AgentTool(",
        f"        name={name!r},",
        f"        label={label!r},",
        f"        description={description!r},",
        "        input_schema=INPUT_SCHEMA,",
        "        execute=execute,",
        f"        validate_arguments={hooks['validate_arguments']},",
        f"        prepare_arguments={hooks['prepare_arguments']},",
        f"        parallel={parallel!r},",
        f"        timeout_s={timeout_s!r},",
        f"        isolation={isolation!r},",
        "    )",
        "",
    ]
    source = "\n".join(parts)
    try:
        ast.parse(source)
    except SyntaxError as exc:  # pragma: no cover - each part was parsed on its own already
        raise WriteToolError(f"the generated file does not parse: {exc.msg}") from None
    return source


# ── helpers ──────────────────────────────────────────────────────────────


def _check_body(part: str, code: str) -> tuple[str, bool]:
    """Indent `code` as a function body; check it parses; say whether it awaits."""
    body = textwrap.indent(textwrap.dedent(code.expandtabs(4)).strip("\n"), "    ")
    if not body.strip():
        body = "    pass"
    try:
        tree = ast.parse(f"async def _f():\n{body}\n")
    except SyntaxError as exc:
        line = (exc.lineno or 2) - 1
        raise WriteToolError(f"{part} has a syntax error on its line {line}: {exc.msg}") from None
    func = tree.body[0]
    return body, any(
        isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith) for node in _own_nodes(func)
    )


def _own_nodes(func: ast.AST) -> list[ast.AST]:
    """The nodes of a function body, not descending into nested functions or classes."""
    nested = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
    out: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        out.append(node)
        if not isinstance(node, nested):
            stack.extend(ast.iter_child_nodes(node))
    return out


def _check_imports(imports: str) -> list[str]:
    text = textwrap.dedent(imports).strip()
    if not text:
        return []
    try:
        tree = ast.parse(text)
    except SyntaxError as exc:
        raise WriteToolError(
            f"imports has a syntax error on line {exc.lineno}: {exc.msg}"
        ) from None
    for node in tree.body:
        if not isinstance(node, ast.Import | ast.ImportFrom):
            raise WriteToolError("imports may only hold import statements")
    return text.splitlines()


def _literal(value: dict[str, Any]) -> str:
    """A Python literal for a JSON value (falls back to `json.loads` for NaN and the like)."""
    text = pprint.pformat(value, indent=4, width=88, sort_dicts=False)
    try:
        if ast.literal_eval(text) == value:
            return text
    except (ValueError, SyntaxError):
        pass
    return f"json.loads({json.dumps(value)!r})"
