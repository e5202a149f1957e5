"""The import rule of docs/architecture.md (DESIGN §2), checked on the source: every
`yiemagent` import — top-level, function-local and `TYPE_CHECKING` ones — goes from a layer to
a lower one (or stays inside its package), the module graph has no cycle, no module imports
another module's `_private` name. Modules are split by concept, not by size, so
there is no cap on their length."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import yiemagent

SRC = Path(yiemagent.__file__).parent

LAYERS: dict[str, float] = {
    "errors": 0,
    "files": 0,
    "types": 1,
    "ai": 2,
    "tools": 3,
    "sessions": 3,
    "loop": 4,
    "agent": 5,
    "compaction": 6,
    "mcp": 6,
    "telemetry": 6,
    "batch": 6,
    "teams": 6.5,  # agent files: build Agents with tools and MCP servers
    "(root)": 7,  # yiemagent/__init__.py: the re-exports of every layer's public names
    "serve": 7,  # `yiem serve`: serves agents and shows telemetry's timeline
    "evals": 7,  # runs on the batch engine and draws the telemetry timeline
    "cli": 8,
}
"""Rank of each package (docs/architecture.md, "Layers"): an import must go to a lower rank.
A package not listed is an integration (rank 6, DESIGN §2 layer 6)."""


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[str, list[str], int]]:
    """(module imported, names imported from it, line) for each `yiemagent` import."""
    found: list[tuple[str, list[str], int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] == "yiemagent":
                found.append((node.module, [a.name for a in node.names], node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "yiemagent":
                    found.append((alias.name, [], node.lineno))
    return found


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def source_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_the_source_is_where_this_test_looks() -> None:
    assert (SRC / "agent" / "_agent.py").is_file()
    assert len(source_files()) > 50


def test_every_import_goes_to_a_lower_layer() -> None:
    wrong: list[str] = []
    for path in source_files():
        here = package_of(module_name(path))
        for target, _, line in imports_of(path):
            there = package_of(target)
            if there == here:
                continue
            if LAYERS.get(there, 6) >= LAYERS.get(here, 6):
                wrong.append(f"{path.relative_to(SRC)}:{line} ({here}) imports {target}")
    assert not wrong, "imports against the layer rule:\n" + "\n".join(wrong)


def test_the_module_graph_has_no_cycle() -> None:
    modules = {module_name(p): p for p in source_files()}
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for target, names, _ in imports_of(path):
            # `from package import module` imports the module
            for candidate in [f"{target}.{n}" for n in names] + [target]:
                if candidate in modules and candidate != name:
                    graph[name].add(candidate)
                    break
    # a package imports its `__init__` re-exports: an edge to a parent package is not a cycle
    # through the child unless the parent imports it back, which the search below finds.
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append([*trail[trail.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*trail, nxt])
        state[node] = 2

    for start in sorted(modules):
        if start not in state:
            visit(start, [start])

    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_no_module_imports_another_modules_private_name() -> None:
    wrong: list[str] = []
    for path in source_files():
        for target, names, line in imports_of(path):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private:
                wrong.append(f"{path.relative_to(SRC)}:{line} imports {private} from {target}")
    assert not wrong, "\n".join(wrong)


REFERENCE = re.compile(
    r"\bR-\d+\.\d+b?|\bDESIGN §\d+(?:\.\d+)?|§\d+(?:\.\d+)?|\bseed 00\d(?: §\d+(?:\.\d+)?)?",
    re.IGNORECASE,
)
"""A rule (`R-4.1`), a design section (`DESIGN §17`, or a bare `§17` after one) or a seed
section (`seed 000 §8.1`)."""


def architecture_headings() -> tuple[set[str], dict[str, str]]:
    """The rules and design sections docs/architecture.md states under a heading of their
    own, and the text of each seed's section there."""
    doc = SRC.parent.parent / "docs" / "architecture.md"
    assert doc.is_file(), f"{doc} is missing (the tests run on the repository's checkout)"
    text = doc.read_text(encoding="utf-8")
    headings = set(re.findall(r"^### (R-\d+\.\d+b?|§\d+)\b", text, re.M))
    seeds = dict(re.findall(r"^### Seed (00\d)\b[^\n]*\n(.*?)(?=^##|\Z)", text, re.M | re.S))
    return headings, seeds


def resolves(reference: str, headings: set[str], seeds: dict[str, str]) -> bool:
    seed = re.match(r"seed (00\d)(?: (§[\d.]+))?", reference, re.IGNORECASE)
    if seed:
        number, section = seed.groups()
        return number in seeds and (section is None or section in seeds[number])
    if reference.startswith("R-"):
        return reference in headings
    return "§" + reference.split("§")[1].split(".")[0] in headings


def test_every_reference_resolves_in_the_architecture_doc() -> None:
    """Every rule, design section or seed section the code and the tests cite is stated in
    docs/architecture.md, so a reader with only the repository can follow it."""
    headings, seeds = architecture_headings()
    root = SRC.parent.parent
    unresolved: list[str] = []
    for folder in ("src", "tests"):
        for path in sorted((root / folder).rglob("*.py")):
            for match in REFERENCE.finditer(path.read_text(encoding="utf-8")):
                if not resolves(match.group(0), headings, seeds):
                    unresolved.append(f"{path.relative_to(root)}: {match.group(0)}")
    assert not unresolved, "references docs/architecture.md does not state:\n" + "\n".join(
        unresolved
    )


def test_a_module_cites_at_most_one_reference_in_its_docstring() -> None:
    """A module may name its rule or section once, in its docstring; the rest of it says in
    words what the code does and why."""
    wrong: list[str] = []
    for path in source_files():
        text = path.read_text(encoding="utf-8")
        found = list(REFERENCE.finditer(text))
        if not found:
            continue
        docstring = ast.get_docstring(ast.parse(text), clean=False) or ""
        if len(found) > 1 or found[0].group(0) not in docstring:
            cited = ", ".join(m.group(0) for m in found)
            wrong.append(f"{path.relative_to(SRC)}: {cited}")
    assert not wrong, "more than one reference, or one outside the docstring:\n" + "\n".join(wrong)
