"""A written tool file whose import raises an exception that cannot be turned into text
(DESIGN R-4.13) is refused like any file that fails to import: one `WriteToolError` naming
the exception's class, and nothing is registered."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent import ToolStore, validate_arguments_against_schema, write_tool_tool
from yiemagent.tools import WriteToolError

from ._kit import run_tool

BOOM = """\
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("str exploded")


raise Unprintable()
"""


async def test_an_unprintable_import_error_is_refused_by_its_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    modules = tmp_path / "modules"
    modules.mkdir()
    (modules / "yiem_unprintable_boom.py").write_text(BOOM)
    monkeypatch.syspath_prepend(str(modules))
    store = ToolStore("agent")
    writer = write_tool_tool(store, tmp_path / "tools")
    args = {
        "name": "double",
        "label": "Double",
        "description": "Doubles x",
        "inputSchema": {"type": "object", "properties": {"x": {"type": "integer"}}},
        "imports": "import yiem_unprintable_boom",
        "executeCode": "return str(args.get('x', 0) * 2)",
    }
    checked = validate_arguments_against_schema(writer.input_schema, args, tool_name="writeTool")
    with pytest.raises(WriteToolError) as caught:
        await run_tool(writer, checked)
    assert str(caught.value) == "the new tool file failed to import: Unprintable"
    assert "double" not in store.tools
