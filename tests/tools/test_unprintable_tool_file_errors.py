"""A tool file whose error cannot be turned into text (DESIGN R-4.13, §8), after
openai-agents' tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises:
a file that raises at import, or whose `get_tool()` raises, an exception whose `__str__`
raises is reported like any broken file, named by the exception's class, and the good
files load. The import failure killed the loading thread and `load_dir` raised a bare
`IndexError`, loading nothing; the `get_tool()` one was reported as the `RuntimeError`
met while writing its text."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent import ToolLoadError, ToolStore

UNPRINTABLE = """\
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("str exploded")
"""

GOOD = """\
from yiemagent import tool


@tool
def good() -> str:
    \"\"\"Answer ok.\"\"\"
    return "ok"


def get_tool():
    return good
"""


def test_unprintable_errors_in_tool_files_are_reported_and_the_good_files_load(
    tmp_path: Path,
) -> None:
    (tmp_path / "a_raises_at_import.py").write_text(UNPRINTABLE + "raise Unprintable()\n")
    (tmp_path / "b_good.py").write_text(GOOD)
    (tmp_path / "c_get_tool_raises.py").write_text(
        UNPRINTABLE + "def get_tool():\n    raise Unprintable()\n"
    )
    store = ToolStore("files")
    with pytest.raises(ToolLoadError) as caught:
        store.load_dir(tmp_path)
    assert caught.value.failures == [
        (str(tmp_path / "a_raises_at_import.py"), "import failed: Unprintable"),
        (str(tmp_path / "c_get_tool_raises.py"), "get_tool() raised Unprintable"),
    ]
    assert set(store.tools) == {"good", "listTools"}
