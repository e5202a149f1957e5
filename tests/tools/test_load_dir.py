"""DESIGN R-4.13: loading tool files, each as its own module; broken files reported together."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from yiemagent import ConfigError, ToolLoadError, ToolStore

from ._kit import run_tool, text_of

GOOD = """
from yiemagent import AgentTool

calls = 0


def helper():
    return "{word}"


def execute(tool_call_id, args, signal, on_update):
    global calls
    calls += 1
    return f"{{helper()}} {{calls}}"


def get_tool():
    return AgentTool(name="{name}", label="{label}", description="Says {word}",
                     input_schema={{"type": "object", "properties": {{}}}}, execute=execute)
"""

POISON = 'raise RuntimeError("this file must never be imported")\n'

TWO_TOOLS = '''\
from yiemagent import tool


@tool
def shout(text: str) -> str:
    """Shout."""
    return text.upper()


@tool
def hush(text: str) -> str:
    """Hush."""
    return text.lower()
'''


def good(name: str, word: str, label: str = "Label") -> str:
    return GOOD.format(name=name, word=word, label=label)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "a_time.py").write_text(good("getTime", "tick"))
    (tmp_path / "b_weather.py").write_text(good("getWeather", "sunny"))
    (tmp_path / "c_broken.py").write_text("def get_tool(:\n")
    return tmp_path


async def test_r4_13_good_files_load_broken_one_reported(folder: Path) -> None:
    store = ToolStore("agent")
    with pytest.raises(ToolLoadError) as info:
        store.load_dir(folder)
    assert [Path(p).name for p, _ in info.value.failures] == ["c_broken.py"]
    assert "SyntaxError" in info.value.failures[0][1]
    assert str(folder / "c_broken.py") in str(info.value)
    assert list(store.tools) == ["getTime", "getWeather", "listTools"]
    # Both files define `helper` and `calls` at top level; neither sees the other's.
    assert text_of(await run_tool(store.tools["getTime"], {})) == "tick 1"
    assert text_of(await run_tool(store.tools["getWeather"], {})) == "sunny 1"
    assert text_of(await run_tool(store.tools["getTime"], {})) == "tick 2"


def test_r4_13_returns_tools_and_registers_list_tools(tmp_path: Path) -> None:
    (tmp_path / "one.py").write_text(good("one", "1"))
    store = ToolStore()
    tools = store.load_dir(str(tmp_path))
    assert list(tools) == ["one", "listTools"]


def test_r4_13_skipped_files_are_never_imported(tmp_path: Path) -> None:
    (tmp_path / "__init__.py").write_text(POISON)
    (tmp_path / "_private.py").write_text(POISON)
    (tmp_path / "toolRegistry.py").write_text(POISON)
    (tmp_path / "my_registry_helpers.py").write_text(POISON)
    (tmp_path / "notes.txt").write_text(POISON)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "nested.py").write_text(POISON)
    (tmp_path / "z_last.py").write_text(good("last", "z"))
    (tmp_path / "a_first.py").write_text(good("first", "a"))
    store = ToolStore()
    assert list(store.load_dir(tmp_path)) == ["first", "last", "listTools"]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("x = 1\n", "defines no get_tool() function"),
        (  # a @tool alone: the error said nothing of how to offer it
            "from yiemagent import tool\n\n@tool\ndef shout(text: str) -> str:\n"
            "    '''Shout.'''\n    return text.upper()\n",
            "defines no get_tool() function; to offer its tool shout, add:"
            " get_tool = lambda: shout",
        ),
        ("def get_tool():\n    return 42\n", "get_tool() returned int, not an AgentTool"),
        (  # two tools in one file: "returned list, not an AgentTool" did not say the rule
            TWO_TOOLS + "\ndef get_tool():\n    return [shout, hush]\n",
            "get_tool() returned 2 tools, and a tool file offers one: put shout and hush in "
            "files of their own",
        ),
        (  # ... and without get_tool: offering the first alone would drop the other
            TWO_TOOLS,
            "a tool file offers one tool: put shout and hush in files of their own",
        ),
        ("def get_tool():\n    raise KeyError('boom')\n", "get_tool() raised KeyError"),
        ("import does_not_exist_anywhere\n", "ModuleNotFoundError"),
        ("import sys\nsys.exit(2)\n", "sys.exit(2)"),
    ],
)
def test_r4_13_each_kind_of_failure_names_file_and_reason(
    tmp_path: Path, source: str, reason: str
) -> None:
    (tmp_path / "bad.py").write_text(source)
    (tmp_path / "good.py").write_text(good("fine", "ok"))
    store = ToolStore()
    with pytest.raises(ToolLoadError) as info:
        store.load_dir(tmp_path)
    ((path, text),) = info.value.failures
    assert path == str(tmp_path / "bad.py")
    assert reason in text
    assert list(store.tools) == ["fine", "listTools"]


def test_r4_13_duplicate_name_reported_first_one_kept(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(good("same", "first"))
    (tmp_path / "b.py").write_text(good("same", "second"))
    store = ToolStore()
    with pytest.raises(ToolLoadError) as info:
        store.load_dir(tmp_path)
    ((path, text),) = info.value.failures
    assert path.endswith("b.py") and "duplicate tool name 'same'" in text and "a.py" in text
    assert store.tools["same"].description == "Says first"


async def test_r4_13_each_store_gets_its_own_modules(tmp_path: Path) -> None:
    (tmp_path / "counter.py").write_text(good("count", "n"))
    first, second = ToolStore("agent"), ToolStore("agent")  # same name, still separate
    first.load_dir(tmp_path)
    second.load_dir(tmp_path)
    assert first.tools["count"].execute is not second.tools["count"].execute
    assert text_of(await run_tool(first.tools["count"], {})) == "n 1"
    assert text_of(await run_tool(first.tools["count"], {})) == "n 2"
    assert text_of(await run_tool(second.tools["count"], {})) == "n 1"
    first.unregister("count")
    assert "count" in second
    assert "count" in text_of(await run_tool(second.tools["listTools"], {}))
    assert "count" not in text_of(await run_tool(first.tools["listTools"], {}))


async def test_r4_13_reload_picks_up_changes_and_keeps_good_ones(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(good("alpha", "old"))
    store = ToolStore()
    store.load_dir(tmp_path)
    old_module = store.tools["alpha"].execute.__module__
    (tmp_path / "a.py").write_text(good("alpha", "new"))
    (tmp_path / "b.py").write_text("syntax error here\n")
    with pytest.raises(ToolLoadError):
        store.reload(tmp_path)
    assert list(store.tools) == ["alpha", "listTools"]
    assert text_of(await run_tool(store.tools["alpha"], {})) == "new 1"
    assert old_module not in sys.modules  # the replaced file's module was dropped


def test_r4_13_reload_of_missing_folder_leaves_store_unchanged(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(good("alpha", "x"))
    store = ToolStore()
    store.load_dir(tmp_path)
    before = dict(store.tools)
    with pytest.raises(ConfigError, match="does not exist"):
        store.reload(tmp_path / "missing")
    assert dict(store.tools) == before


def test_r4_13_loading_twice_reports_duplicates(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(good("alpha", "x"))
    store = ToolStore()
    store.load_dir(tmp_path)
    with pytest.raises(ToolLoadError, match="duplicate tool name 'alpha'"):
        store.load_dir(tmp_path)
    assert list(store.tools) == ["alpha", "listTools"]


def test_r4_13_a_broken_link_is_reported_not_skipped(tmp_path: Path) -> None:
    """A `*.py` that cannot be read (a link to nothing) is a reported failure."""
    (tmp_path / "good.py").write_text(good("one", "1"))
    (tmp_path / "gone.py").symlink_to(tmp_path / "does_not_exist.py")
    store = ToolStore()
    with pytest.raises(ToolLoadError) as info:
        store.load_dir(tmp_path)
    assert [Path(p).name for p, _ in info.value.failures] == ["gone.py"]
    assert list(store.tools) == ["one", "listTools"]
