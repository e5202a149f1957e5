"""The Python samples of README.md and docs/*.md show what they use: a reader who pastes a
page's samples into a file, in order, gets no NameError. Each name a ```python block reads
is a builtin, or bound in the block (an import, an assignment, a definition), or in an
earlier block of the same page; top-level `await` is allowed, as in `python -m asyncio`."""

from __future__ import annotations

import ast
import builtins
import re
import textwrap
from pathlib import Path

import yiemagent

ROOT = Path(yiemagent.__file__).parent.parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

BLOCK = re.compile(r"^ *```python\n(?P<code>.*?)^ *```", re.S | re.M)
"""A fenced Python sample, also one indented under a list item."""


def parse(code: str) -> ast.Module:
    """The sample's syntax tree; raises SyntaxError for one that is not Python."""
    tree = compile(code, "<sample>", "exec", ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    assert isinstance(tree, ast.Module)
    return tree


def bound(tree: ast.Module) -> set[str]:
    """Every name the sample binds anywhere: imports, assignments, definitions, parameters,
    loop and `with` targets, caught exceptions."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(alias.asname or alias.name).split(".")[0] for alias in node.names}
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def unbound_names(text: str) -> list[str]:
    """`line: names` for each sample of a page's `text` that reads a name nothing bound."""
    known = set(dir(builtins)) | {"__file__"}
    found: list[str] = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        tree = parse(textwrap.dedent(match["code"]))
        known |= bound(tree)
        read = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        if missing := sorted(read - known):
            found.append(f"{line}: {', '.join(missing)}")
    return found


def test_the_pages_have_samples() -> None:
    samples = sum(len(BLOCK.findall(page.read_text(encoding="utf-8"))) for page in PAGES)
    assert samples > 20, "the pattern no longer finds the samples"


def test_every_name_a_sample_reads_is_bound_on_its_page() -> None:
    wrong = [
        f"{page.relative_to(ROOT)}:{entry}"
        for page in PAGES
        for entry in unbound_names(page.read_text(encoding="utf-8"))
    ]
    assert not wrong, "samples reading a name they never import or define:\n" + "\n".join(wrong)


def test_a_sample_missing_an_import_is_found() -> None:
    page = (
        "```python\nfrom yiemagent import Agent\n```\n\ntext\n\n"
        "  ```python\n  agent = Agent(model=get_model('x'))\n  ```\n"
    )
    assert unbound_names(page) == ["7: get_model"]
