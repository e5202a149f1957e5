"""`tool`'s typing overloads accept every form its docs and its error messages advise.

A callable with no `__name__` is refused with advice to call `tool(obj, name=...)`; that call
works at run time, so mypy (strict, as the project runs it) must accept it too, and see an
`AgentTool` come back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mypy import api as mypy_api

from yiemagent import AgentTool, ConfigError, tool

pytestmark = pytest.mark.slow  # one mypy run over yiemagent, about 20 s

USER_FILE = """\
from __future__ import annotations

import functools

from yiemagent import AgentTool, tool


class Adder:
    def __call__(self, a: int, b: int) -> int:
        \"\"\"Add two numbers.\"\"\"
        return a + b


def scale(x: float, factor: float) -> float:
    return x * factor


@tool
def plain(x: int) -> int:
    return x


@tool(name="named", parallel=True)
def decorated(x: int) -> int:
    return x


advised: AgentTool = {advice}
partial_tool: AgentTool = tool(functools.partial(scale, factor=2.0), name="double", timeout_s=5)
checks: list[AgentTool] = [plain, decorated, advised, partial_tool]
reveal_type(tool(Adder(), name="add", label="Add", requires_approval=True))
"""


class Adder:
    def __call__(self, a: int, b: int) -> int:
        """Add two numbers."""
        return a + b


def _advice() -> str:
    """The call the refusal of a nameless callable advises, with its placeholders filled."""
    with pytest.raises(ConfigError) as refused:
        tool(Adder())
    found = re.search(r"tool\(obj, name=\.\.\.\)", str(refused.value))
    assert found, str(refused.value)
    return found.group(0).replace("obj", "Adder()").replace("...", '"add"')


def test_the_advised_call_works_at_run_time() -> None:
    made = eval(_advice(), {"tool": tool, "Adder": Adder})
    assert isinstance(made, AgentTool) and made.name == "add"
    assert set(made.input_schema["properties"]) == {"a", "b"}


def test_mypy_accepts_the_advised_call_and_every_documented_form(tmp_path: Path) -> None:
    user = tmp_path / "user.py"
    user.write_text(USER_FILE.format(advice=_advice()))
    out, err, status = mypy_api.run(
        ["--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache"), str(user)]
    )
    lines = [line for line in out.splitlines() if line.strip()]
    revealed = [line for line in lines if "Revealed type" in line]
    errors = [line for line in lines if "Revealed type" not in line]
    assert errors == [], out + err
    assert len(revealed) == 1 and "yiemagent.types.tools.AgentTool" in revealed[0], out
    assert status == 0, out + err  # reveal_type is a note, not an error
