"""Rendering a tool file from the code parts `writeTool` receives (DESIGN R-4.15),
following the tool file contract.

`render_tool_file` wraps the model's code bodies into a module whose `get_tool()` returns an
`AgentTool`; each part is parsed on its own first, so a syntax error names the part and its line.

A code part is the body of its function (`execute(tool_call_id, args, signal, on_update)`,
`validate_arguments(args)`, `prepare_arguments(args)`). Models often write the whole function
instead (`def execute(tool_call_id, args, signal, on_update): ...`, or `def word_count(text):
...`): a part that only defines functions (besides imports and a docstring) is kept as written
and the body calls the one it means (`function_source`).
"""

from __future__ import annotations

import ast
import json
import pprint
import re
import textwrap
from typing import Any

from yiemagent.errors import YiemAgentError

__all__ = ["WRITTEN_MARK", "WriteToolError", "function_source", "render_tool_file"]

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
    """The text of a tool file (contract: `get_tool() -> AgentTool`), starting
    with `WRITTEN_MARK`; `timeout_s` and `isolation` go into its `AgentTool`.

    A code part that is one or more whole function definitions is called (module docstring;
    `function_source`).

    Raises:
        WriteToolError: `execute_code` is empty, a code part does not parse (the text names the
            part and its line), a defined function's parameter is neither an `input_schema`
            property nor the part's own argument, or `imports` holds anything but import
            statements.
    """
    if not execute_code.strip():
        raise WriteToolError("executeCode is empty: give the body of execute(...)")
    import_lines = _check_imports(imports)
    execute_body, is_async = _check_body("executeCode", execute_code, input_schema, name)
    parts = [
        WRITTEN_MARK.rstrip("\n"),
        f'"""Tool {name!r}, written by writeTool; get_tool() returns it."""',
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
        "    return json.dumps(value, default=str, ensure_ascii=False)",
        "",
    ]
    hooks = {"validate_arguments": "None", "prepare_arguments": "None"}
    for part, code, signature in (
        ("validateCode", validate_code, "validate_arguments(args: Any) -> Any"),
        ("prepareCode", prepare_code, "prepare_arguments(args: Any) -> Any"),
    ):
        if code.strip():
            body, part_async = _check_body(part, code, input_schema, name)
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


_SIGNATURES = {
    "executeCode": ("execute", ("tool_call_id", "args", "signal", "on_update")),
    "validateCode": ("validate_arguments", ("args",)),
    "prepareCode": ("prepare_arguments", ("args",)),
}
"""Each code part's function and the arguments its body sees."""


def function_source(
    part: str, code: str, input_schema: dict[str, Any] | None = None, tool_name: str = ""
) -> str:
    """The function a code part becomes in the written file, as text (what a person approving
    the write should read): `def execute(tool_call_id, args, signal, on_update):` and the body.

    Args:
        part: "executeCode", "validateCode" or "prepareCode".
        code: the model's text: a body, or whole function definitions (then the body ends by
            calling one: the part's own name (`execute`), else `tool_name`, else the last one
            defined; each of its parameters gets the `input_schema` property of that name,
            else the part's argument of that name (`args`, `signal`, ...), else its default).
        input_schema: the tool's arguments schema (its `properties` and `required`).
        tool_name: the tool's name.

    Raises:
        WriteToolError: as `render_tool_file`, for this part.
    """
    function, params = _SIGNATURES[part]
    body, is_async = _check_body(part, code, input_schema, tool_name)
    head = f"{'async ' if is_async else ''}def {function}({', '.join(params)}):"
    return f"{head}\n{body}"


def _check_body(
    part: str, code: str, input_schema: dict[str, Any] | None = None, tool_name: str = ""
) -> tuple[str, bool]:
    """Indent `code` as a function body; check it parses; say whether it awaits. A body that
    only defines functions gets a last line calling the one it means (`function_source`)."""
    _check_characters(part, code)
    body = textwrap.indent(textwrap.dedent(code.expandtabs(4)).strip("\n"), "    ")
    if not body.strip():
        body = "    pass"
    try:
        tree = ast.parse(f"async def _f():\n{body}\n")
    except SyntaxError as exc:
        line = (exc.lineno or 2) - 1
        raise WriteToolError(f"{part} has a syntax error on its line {line}: {exc.msg}") from None
    func = tree.body[0]
    assert isinstance(func, ast.AsyncFunctionDef)
    function, own = _SIGNATURES.get(part, ("", ()))
    defined = _defined_function(func.body, (function, tool_name))
    if defined is not None:
        call = _call(part, defined, own, input_schema or {})
        is_async = isinstance(defined, ast.AsyncFunctionDef)
        return f"{body}\n    return {'await ' if is_async else ''}{call}", is_async
    nodes = _own_nodes(func)
    bound = _read_arguments(nodes, own, input_schema or {})
    return bound + body, any(
        isinstance(node, ast.Await | ast.AsyncFor | ast.AsyncWith) for node in nodes
    )


def _read_arguments(nodes: list[ast.AST], own: tuple[str, ...], schema: dict[str, Any]) -> str:
    """Lines binding the inputSchema properties a body reads by bare name (`return celsius *
    9 / 5 + 32`, as the 1.5B wrote it) but never assigns: `celsius = args['celsius']`."""
    properties = schema.get("properties")
    if not isinstance(properties, dict) or "args" not in own:
        return ""
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    loaded = {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    stored = {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for node in nodes:
        if isinstance(node, ast.Import | ast.ImportFrom):
            stored |= {(a.asname or a.name).split(".")[0] for a in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stored.add(node.name)
    names = [n for n in properties if n in loaded - stored - set(own) and n.isidentifier()]
    return "".join(
        f"    {n} = args[{n!r}]\n" if n in required else f"    {n} = args.get({n!r})\n"
        for n in names
    )


_DefinedFunction = ast.FunctionDef | ast.AsyncFunctionDef


def _defined_function(
    statements: list[ast.stmt], preferred: tuple[str, ...]
) -> _DefinedFunction | None:
    """The function a body that only defines functions (besides imports and strings) means:
    the first of `preferred` it defines, else its last one. None for any other body."""
    functions: list[_DefinedFunction] = []
    for node in statements:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.append(node)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            continue
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            return None
    if not functions:
        return None
    by_name = {f.name: f for f in functions}
    return next((by_name[n] for n in preferred if n in by_name), functions[-1])


def _call(
    part: str, function: _DefinedFunction, own: tuple[str, ...], schema: dict[str, Any]
) -> str:
    """The call of `function` with what its parameters name: an argument the schema has
    (`args["text"]`), the part's own argument (`args`, `signal`), or the parameter's default."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = schema.get("required")
    required = set(required) if isinstance(required, list) else set()
    spec = function.args
    positional = [*spec.posonlyargs, *spec.args]
    defaults: dict[str, ast.expr | None] = dict.fromkeys(p.arg for p in positional)
    for param, value in zip(reversed(positional), reversed(spec.defaults), strict=False):
        defaults[param.arg] = value
    for param, kw_default in zip(spec.kwonlyargs, spec.kw_defaults, strict=True):
        defaults[param.arg] = kw_default
    values: dict[str, str] = {}
    for name, default in defaults.items():
        if name in properties:
            fallback = "None" if default is None else ast.unparse(default)
            values[name] = (
                f"args[{name!r}]" if name in required else f"args.get({name!r}, {fallback})"
            )
        elif name in own:
            values[name] = name
        elif default is not None:
            values[name] = ast.unparse(default)
        else:
            raise WriteToolError(
                f"{part} defines {function.name}({', '.join(defaults)}), but {name!r} is "
                f"neither an inputSchema property ({', '.join(properties) or 'none'}) nor an "
                f"argument of {_SIGNATURES[part][0]}({', '.join(own)}); name the parameters "
                f"after the inputSchema properties, or write only the body that reads `args`"
            )
    posonly = {p.arg for p in spec.posonlyargs}
    pieces = [values[p] if p in posonly else f"{p}={values[p]}" for p in defaults]
    if spec.kwarg is not None:
        pieces.append(f"**{{k: v for k, v in args.items() if k not in {sorted(defaults)!r}}}")
    return f"{function.name}({', '.join(pieces)})"


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
    _check_characters("imports", imports)
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


def _check_characters(part: str, code: str) -> None:
    """Refuse a lone surrogate (U+D800 to U+DFFF, as a model's JSON escape `\\ud800` gives
    it): it is half of a character, no UTF-8 file can hold it and Python cannot parse it.
    Inside a string, the escape written as code (`'\\ud800'`) is what keeps it."""
    found = _SURROGATE.search(code)
    if found is None:
        return
    index, char = found.start(), found.group()
    line = code.count("\n", 0, index) + 1
    column = index - code.rfind("\n", 0, index)
    raise WriteToolError(
        f"{part} holds a lone surrogate (U+{ord(char):04X}, line {line} column {column}), "
        "half of a character that no file can hold: write the whole character, or inside a "
        f"string the escape \\u{ord(char):04x}"
    )


_SURROGATE = re.compile("[\ud800-\udfff]")


def _literal(value: dict[str, Any]) -> str:
    """A Python literal for a JSON value (falls back to `json.loads` for NaN and the like)."""
    text = pprint.pformat(value, indent=4, width=88, sort_dicts=False)
    try:
        if ast.literal_eval(text) == value:
            return text
    except (ValueError, SyntaxError):
        pass
    return f"json.loads({json.dumps(value)!r})"
