"""DESIGN R-4.15: writeTool writes, checks, imports and registers a tool file; on any failure
the store and the folder are unchanged."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

import pytest

from yiemagent import (
    AgentTool,
    AgentToolResult,
    ToolStore,
    validate_arguments_against_schema,
    write_tool_tool as make_write_tool,
)
from yiemagent.tools import WRITTEN_MARK, WriteToolError

from ._kit import run_tool, text_of

SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
}


def request(**overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": "double",
        "label": "Double",
        "description": "Doubles x",
        "inputSchema": SCHEMA,
        "executeCode": "return str(args['x'] * 2)",
    }
    args.update(overrides)
    return args


@pytest.fixture
def setup(tmp_path: Path) -> tuple[ToolStore, AgentTool, Path]:
    folder = tmp_path / "tools"
    folder.mkdir()
    store = ToolStore("agent")
    writer = store.register(make_write_tool(store, folder))
    return store, writer, folder


async def write(writer: AgentTool, args: dict[str, Any]) -> AgentToolResult:
    checked = validate_arguments_against_schema(writer.input_schema, args, tool_name="writeTool")
    result = await run_tool(writer, checked)
    assert isinstance(result, AgentToolResult)
    return result


async def test_r4_15_writes_registers_and_the_tool_works(
    setup: tuple[ToolStore, AgentTool, Path],
) -> None:
    store, writer, folder = setup
    result = await write(writer, request(parallel=True, imports="import math"))
    assert result.added_tool_names == ["double"]
    assert "registered" in text_of(result)
    assert listing(folder) == ["double.py"]  # no temp file left
    new = store.tools["double"]
    assert (new.label, new.description, new.parallel) == ("Double", "Doubles x", True)
    assert new.input_schema == SCHEMA
    assert await run_tool(new, {"x": 21}) == "42"
    # the file alone is a valid tool file for a fresh store
    fresh = ToolStore("fresh")
    assert list(fresh.load_dir(folder)) == ["double", "listTools"]
    assert await run_tool(fresh.tools["double"], {"x": 2}) == "4"


async def test_r4_15_validate_prepare_and_async_bodies(
    setup: tuple[ToolStore, AgentTool, Path],
) -> None:
    store, writer, _ = setup
    await write(
        writer,
        request(
            name="fetch",
            executeCode="import asyncio\nawait asyncio.sleep(0)\nreturn {'x': args['x']}",
            validateCode="if args['x'] < 0:\n    return 'x must be >= 0'\nreturn None",
            prepareCode="return {'x': args.get('value', args.get('x'))}",
        ),
    )
    tool = store.tools["fetch"]
    assert inspect.iscoroutinefunction(tool.execute)
    assert tool.prepare_arguments is not None and tool.validate_arguments is not None
    assert tool.prepare_arguments({"value": 5}) == {"x": 5}
    assert tool.validate_arguments({"x": -1}) == "x must be >= 0"
    assert text_of(await run_tool(tool, {"x": 3})) == '{"x": 3}'


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def read(path: Path) -> str:
    return path.read_text()


def write_file(path: Path, text: str) -> None:
    path.write_text(text)


def remove(path: Path) -> None:
    path.unlink()


def snapshot(store: ToolStore, folder: Path) -> tuple[list[str], dict[str, bytes], set[str]]:
    written = {m for m in sys.modules if m.startswith("_yiemagent_written_tool")}
    return list(store.tools), {p.name: p.read_bytes() for p in sorted(folder.iterdir())}, written


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"name": "../x"}, "invalid tool name"),
        ({"name": "class"}, "Python keyword"),
        ({"name": "a b"}, "invalid tool name"),
        ({"name": "a" * 65}, "invalid tool name"),
        ({"name": "1abc"}, "Python identifier"),
        ({"name": "my-tool"}, "Python identifier"),
        ({"name": ""}, "name is required"),
        ({"name": "listTools"}, "built-in"),
        ({"executeCode": "return (1,"}, "executeCode has a syntax error on its line 1"),
        ({"executeCode": "x = 1\n  y = 2"}, "executeCode has a syntax error on its line 2"),
        ({"executeCode": "   "}, "executeCode is empty"),
        ({"validateCode": "return ]"}, "validateCode has a syntax error"),
        ({"imports": "import does_not_exist_xyz"}, "ModuleNotFoundError"),
        ({"imports": "x = 1"}, "only hold import statements"),
        ({"inputSchema": {"type": "object", "required": "x"}}, "not a valid JSON Schema"),
        ({"inputSchema": {"type": "string"}}, "must describe the arguments object"),
        (  # the 0.5B's schema in yiem chat: the error shows the object it meant
            {"inputSchema": {"type": "string", "required": ["text"]}},
            'e.g. {"type": "object", "properties": {"text": {"type": "string"}}, '
            '"required": \\["text"\\]}',
        ),
        ({"inputSchema": {"type": "object", "properties": {"x": {"type": "int"}}}}, "JSON Schema"),
    ],
)
async def test_r4_15_refusals_change_nothing(
    setup: tuple[ToolStore, AgentTool, Path], overrides: dict[str, Any], reason: str
) -> None:
    store, writer, folder = setup
    await write(writer, request(name="existing"))
    before = snapshot(store, folder)
    with pytest.raises(WriteToolError, match=reason):
        await write(writer, request(**overrides))
    assert snapshot(store, folder) == before


async def test_r4_15_existing_tool_refused_without_overwrite_replaced_with_it(
    setup: tuple[ToolStore, AgentTool, Path],
) -> None:
    store, writer, folder = setup
    await write(writer, request())
    before = snapshot(store, folder)
    with pytest.raises(WriteToolError, match=r'"double" already exists.*overwrite'):
        await write(writer, request(executeCode="return 'other'"))
    assert snapshot(store, folder) == before
    old_module = store.tools["double"].execute.__module__
    assert old_module in sys.modules
    result = await write(writer, request(executeCode="return 'other'", overwrite=True))
    assert old_module not in sys.modules  # the replaced tool's module is dropped
    assert store.tools["double"].execute.__module__ in sys.modules
    assert result.added_tool_names == ["double"] and result.details["overwritten"] is True
    assert await run_tool(store.tools["double"], {"x": 1}) == "other"
    assert list(store.tools) == ["writeTool", "double"]
    assert "return 'other'" in read(folder / "double.py")


async def test_r4_15_existing_file_not_in_store_is_not_clobbered(
    setup: tuple[ToolStore, AgentTool, Path],
) -> None:
    store, writer, folder = setup
    write_file(folder / "double.py", "# hand-written, not loaded\n")
    with pytest.raises(WriteToolError, match="already exists"):
        await write(writer, request())
    assert read(folder / "double.py") == "# hand-written, not loaded\n"
    assert "double" not in store


async def test_r4_15_import_inside_the_body_fails_at_call_time_only(
    setup: tuple[ToolStore, AgentTool, Path],
) -> None:
    store, writer, _ = setup
    await write(writer, request(executeCode="import does_not_exist_xyz\nreturn 'never'"))
    with pytest.raises(ModuleNotFoundError):  # the pipeline turns this into an error result
        await run_tool(store.tools["double"], {"x": 1})


async def test_r4_15_failed_registration_rolls_the_file_back(tmp_path: Path) -> None:
    class RefusingStore(ToolStore):
        def register(
            self, tool: AgentTool, *, replace: bool = False, module: str | None = None
        ) -> AgentTool:
            if tool.name == "double":
                raise RuntimeError("store is read-only today")
            return super().register(tool, replace=replace, module=module)

    store = RefusingStore()
    old = WRITTEN_MARK + "# old version\n"  # a file writeTool wrote: it may replace it
    write_file(tmp_path / "double.py", old)
    writer = store.register(make_write_tool(store, tmp_path))
    with pytest.raises(WriteToolError, match=r"could not register.*read-only"):
        await write(writer, request(overwrite=True))
    assert listing(tmp_path) == ["double.py"]
    assert read(tmp_path / "double.py") == old
    remove(tmp_path / "double.py")
    with pytest.raises(WriteToolError, match="could not register"):
        await write(writer, request())
    assert listing(tmp_path) == []  # the new file was removed again


async def test_r4_15_folder_created_on_first_use_and_writes_stay_inside(tmp_path: Path) -> None:
    store = ToolStore()
    target = tmp_path / "new" / "tools"
    writer = make_write_tool(store, target)
    assert listing(tmp_path) == []
    await write(writer, request())
    assert listing(target) == ["double.py"]
    assert listing(tmp_path) == ["new"]
