"""The import rule of docs/architecture.md (DESIGN §2, §10), checked on the source: every
`yiemagent` import — top-level, function-local and `TYPE_CHECKING` ones — goes from a layer to
a lower one (or stays inside its package), the module graph has no cycle, no module imports
another module's `_private` name. Modules are split by concept, not by size (DESIGN §22), so
there is no cap on their length."""

from __future__ import annotations

import ast
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
    "teams": 6.5,  # agent files: build Agents with tools and MCP servers (DESIGN §17)
    "(root)": 7,  # yiemagent/__init__.py: the re-exports of every layer's public names
    "serve": 7,  # `yiem serve` (DESIGN §18): serves agents and shows telemetry's timeline
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
    assert (SRC / "agent" / "agent.py").is_file()
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


def test_every_cited_rule_has_a_heading_in_the_architecture_doc() -> None:
    """docs/architecture.md states every `R-x.y` the code and the tests cite."""
    import re

    root = SRC.parent.parent
    doc = root / "docs" / "architecture.md"
    assert doc.is_file(), f"{doc} is missing (the tests run on the repository's checkout)"
    headings = set(re.findall(r"^### (R-\d+\.\d+b?)\b", doc.read_text(encoding="utf-8"), re.M))
    cited: set[str] = set()
    for folder in ("src", "tests"):
        for path in (root / folder).rglob("*.py"):
            cited |= set(re.findall(r"\bR-\d+\.\d+b?", path.read_text(encoding="utf-8")))
    assert cited - headings == set(), f"rules cited but not stated: {sorted(cited - headings)}"
