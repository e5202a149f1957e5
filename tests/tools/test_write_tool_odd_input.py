"""writeTool given what no tool file can be: a named pipe where the file would go, and code
holding lone surrogates (a model's JSON may carry `\\ud800` escapes). Each is one clear
refusal; the folder and the store stay as they were (DESIGN §8)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import ToolStore, validate_arguments_against_schema, write_tool_tool
from yiemagent.tools import WriteToolError

from ._kit import run_tool, text_of

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}


def request(**overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": "double",
        "label": "Double",
        "description": "Doubles x",
        "inputSchema": SCHEMA,
        "executeCode": "return str(args.get('x', 0) * 2)",
    }
    args.update(overrides)
    return args


def listing(folder: Path) -> dict[str, str]:
    """Each entry of `folder` and what kind it is (a pipe is never opened)."""
    return {p.name: "pipe" if p.is_fifo() else p.read_text() for p in sorted(folder.iterdir())}


@pytest.fixture
def store(tmp_path: Path) -> ToolStore:
    store = ToolStore("agent")
    store.register(write_tool_tool(store, tmp_path / "tools"))
    return store


async def write(store: ToolStore, args: dict[str, Any]) -> str:
    writer = store.tools["writeTool"]
    checked = validate_arguments_against_schema(writer.input_schema, args, tool_name="writeTool")
    return text_of(await run_tool(writer, checked))


@pytest.mark.skipif(sys.platform == "win32", reason="named pipes in a folder are POSIX")
@pytest.mark.timeout(60)
@pytest.mark.parametrize("overwrite", [False, True])
async def test_a_named_pipe_where_the_file_goes_is_refused_without_blocking(
    store: ToolStore, tmp_path: Path, overwrite: bool
) -> None:
    folder = tmp_path / "tools"
    folder.mkdir()
    os.mkfifo(folder / "double.py")
    before = (listing(folder), dict(store.tools))
    with pytest.raises(WriteToolError) as refused:
        await write(store, request(overwrite=overwrite))
    text = str(refused.value)
    assert "\n" not in text and "double" in text
    if overwrite:
        assert "is not a regular file" in text
    assert (listing(folder), dict(store.tools)) == before


CODE_PARTS = ("executeCode", "imports", "validateCode", "prepareCode")
SURROGATE_CODE = {
    "executeCode": "return 'a\ud800b'",
    "imports": "import os  # \udcff",
    "validateCode": "return None  # \udfff",
    "prepareCode": "return dict(args, note='\ud83d')",
}


@pytest.mark.parametrize("part", CODE_PARTS)
async def test_a_lone_surrogate_in_code_is_one_clear_refusal(
    store: ToolStore, tmp_path: Path, part: str
) -> None:
    with pytest.raises(WriteToolError) as refused:
        await write(store, request(**{part: SURROGATE_CODE[part]}))
    text = str(refused.value)
    assert text.startswith(f"{part} holds a lone surrogate (U+D") and "line 1" in text
    assert "\n" not in text
    assert not (tmp_path / "tools").exists() and list(store.tools) == ["writeTool"]


async def test_a_surrogate_written_as_an_escape_in_a_string_is_kept(store: ToolStore) -> None:
    """What the refusal asks for works: the escape `\\ud800` inside a string literal."""
    await write(store, request(executeCode="return repr('a\\ud800b')"))
    assert text_of(await run_tool(store.tools["double"], {})) == repr("a\ud800b")


surrogates = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    part=st.sampled_from(CODE_PARTS),
    before=st.text(st.characters(codec="utf-8"), max_size=20),
    bad=surrogates,
    after=st.text(st.characters(codec="utf-8"), max_size=20),
)
async def test_any_surrogate_anywhere_in_code_is_refused_and_changes_nothing(
    store: ToolStore, tmp_path: Path, part: str, before: str, bad: str, after: str
) -> None:
    with pytest.raises(WriteToolError, match=f"^{part} holds a lone surrogate") as refused:
        await write(store, request(**{part: f"{before}{bad}{after}"}))
    assert f"U+{ord(bad):04X}" in str(refused.value)
    assert not (tmp_path / "tools").exists() and list(store.tools) == ["writeTool"]
