"""Loading a tool folder at its edges (DESIGN R-4.13): a file that blocks at import or
raises KeyboardInterrupt is a load error naming the file, within a bound; tool files share
helper modules of their own folder (`from _helpers import ...`) without leaking them to
other folders, stores, or the rest of the program."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from yiemagent import ToolLoadError, ToolStore

from ._kit import run_tool, text_of

ROOT = Path(__file__).resolve().parents[2]

TOOL = """
from yiemagent import AgentTool
{head}

def execute(tool_call_id, args, signal, on_update):
    return {result}


def get_tool():
    {body}
    return AgentTool(name="{name}", label="{name}", description="{name}",
                     input_schema={{"type": "object", "properties": {{}}}}, execute=execute)
"""


def tool_file(name: str, *, head: str = "", result: str = "'ok'", body: str = "pass") -> str:
    return TOOL.format(name=name, head=head, result=result, body=body)


def _modules_from(folder: Path) -> list[str]:
    return [
        name
        for name, module in list(sys.modules.items())
        if str(folder) in str(getattr(module, "__file__", None) or "")
    ]


def test_a_file_that_blocks_at_import_is_a_load_error_within_the_bound(tmp_path: Path) -> None:
    """In a real subprocess: before the bound, `load_dir` never returned."""
    (tmp_path / "a_blocks.py").write_text("import time\ntime.sleep(3600)\n")
    (tmp_path / "b_good.py").write_text(tool_file("good"))
    script = textwrap.dedent(
        f"""
        from yiemagent import ToolLoadError, ToolStore
        store = ToolStore()
        try:
            store.load_dir({str(tmp_path)!r}, timeout_s=1.0)
        except ToolLoadError as exc:
            print("failures:", exc.failures)
        print("tools:", sorted(store.tools))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    assert "a_blocks.py" in done.stdout
    assert "did not finish within 1 s" in done.stdout
    assert "tools: ['good', 'listTools']" in done.stdout


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        (tool_file("ki", body="raise KeyboardInterrupt"), "get_tool() raised KeyboardInterrupt"),
        ("raise KeyboardInterrupt\n", "import failed: KeyboardInterrupt"),
        (tool_file("gx", body="raise GeneratorExit"), "get_tool() raised GeneratorExit"),
    ],
)
def test_a_base_exception_from_a_tool_file_is_a_load_error(
    tmp_path: Path, source: str, reason: str
) -> None:
    (tmp_path / "bad.py").write_text(source)
    (tmp_path / "good.py").write_text(tool_file("good"))
    store = ToolStore()
    with pytest.raises(ToolLoadError) as info:
        store.load_dir(tmp_path)
    ((path, text),) = info.value.failures
    assert path == str(tmp_path / "bad.py")
    assert reason in text
    assert sorted(store.tools) == ["good", "listTools"]


async def test_tool_files_share_a_helper_module_of_their_folder(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    (one / "_helpers.py").write_text("WORD = 'from one'\ncount = [0]\n")
    (one / "_pkg").mkdir()
    (one / "_pkg" / "__init__.py").write_text("from ._inner import VALUE\n")
    (one / "_pkg" / "_inner.py").write_text("VALUE = 'inner'\n")
    (one / "a.py").write_text(
        tool_file("a", head="from _helpers import WORD, count", result="WORD")
    )
    lazy = 'f\'{__import__("_helpers").WORD} {__import__("_pkg").VALUE}\''
    (one / "b.py").write_text(tool_file("b", head="import _helpers, _pkg", result=lazy))
    (two / "_helpers.py").write_text("WORD = 'from two'\n")
    (two / "c.py").write_text(tool_file("c", head="from _helpers import WORD", result="WORD"))
    first, second = ToolStore("first"), ToolStore("second")
    first.load_dir(one)
    second.load_dir(two)
    assert text_of(await run_tool(first.tools["a"], {})) == "from one"
    assert text_of(await run_tool(first.tools["b"], {})) == "from one inner"
    assert text_of(await run_tool(second.tools["c"], {})) == "from two"
    assert "_helpers" not in sys.modules and "_pkg" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        __import__("_helpers")
    assert len(_modules_from(one)) == 5  # a.py, b.py, _helpers.py, _pkg, _pkg._inner
    first.clear()
    assert not [
        m for m in list(sys.modules.values()) if str(one) in str(getattr(m, "__file__", ""))
    ]
