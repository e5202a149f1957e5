"""docs/architecture.md "Where each concept lives" sends a maintainer to a module for each
concept: every class a row names is defined in one of the modules that row lists, so a
class that moved (an error to `mcp/_errors.py`, say) moves in the table too."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import yiemagent

SRC = Path(yiemagent.__file__).parent
DOC = SRC.parent.parent / "docs" / "architecture.md"


def _rows() -> list[tuple[int, list[str]]]:
    """(line number, cells) of each row of the table under "Where each concept lives"."""
    lines = DOC.read_text(encoding="utf-8").splitlines()
    start = lines.index("## Where each concept lives")
    rows: list[tuple[int, list[str]]] = []
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        if line.startswith("## "):
            break
        if line.startswith("| ") and not line.startswith("|---"):
            rows.append((number, [cell.strip() for cell in line.strip().strip("|").split("|")]))
    return rows


def _classes(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}


def _modules(cell: str) -> list[Path]:
    """The source files a row names (`loop/_tool_calls.py`, `mcp/`)."""
    found: list[Path] = []
    for name in re.findall(r"`([a-z_/]+(?:\.py|/))", cell):
        path = SRC / name
        found.extend(sorted(path.glob("*.py")) if name.endswith("/") else [path])
    return found


def test_the_table_is_where_this_test_looks() -> None:
    assert len(_rows()) > 40


def test_every_class_a_row_names_is_defined_in_a_module_of_that_row() -> None:
    everywhere: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for name in _classes(path):
            everywhere.setdefault(name, []).append(str(path.relative_to(SRC)))
    wrong: list[str] = []
    for number, cells in _rows():
        modules = _modules(" ".join(cells[1:]))  # a name's own module may follow it
        defined = set().union(*(_classes(path) for path in modules if path.is_file()))
        named = re.findall(r"`([A-Z][A-Za-z0-9]*)`", " ".join(cells[1:]))
        for name in named:
            if name in everywhere and name not in defined:
                wrong.append(f"line {number}: {name} is defined in {everywhere[name]}")
    assert not wrong, "\n".join(wrong)
