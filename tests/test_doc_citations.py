"""Where the code sends a reader to the docs, the place is there: every `docs/NAME.md` the
source and the tests cite is a file of `docs/`, and every part named after it in quotes
(`docs/sessions.md "One writer"`) is a heading or a bold label of that file."""

from __future__ import annotations

import re
from pathlib import Path

import yiemagent

ROOT = Path(yiemagent.__file__).parent.parent.parent
DOCS = ROOT / "docs"

CITATION = re.compile(
    r"(?<![\w/\"'])docs/(?P<file>[a-z][a-z0-9-]*\.md)`?[,:;]?[\s#]*\(?"
    r'(?P<parts>(?:"[^"]{1,80}"(?:[\s#]*(?:,|and)?[\s#]*))*)'
)
"""A cited doc file, and the quoted parts named right after it (a comment or a docstring
may break a part over two lines); not a path inside a string, which is data."""


def words(text: str) -> str:
    return " ".join(text.split()).lower()


def labels(doc: Path) -> list[str]:
    """The headings and bold labels (`**Label.**`) of `doc`, whitespace collapsed."""
    text = doc.read_text(encoding="utf-8")
    headings = [line.lstrip("#") for line in text.splitlines() if line.startswith("#")]
    bold = re.findall(r"\*\*(.+?)\*\*", text, re.S)
    return [words(label) for label in headings + bold]


def test_the_docs_are_where_this_test_looks() -> None:
    assert (DOCS / "architecture.md").is_file()


def test_every_cited_doc_and_part_exists() -> None:
    cited = 0
    wrong: list[str] = []
    found: dict[str, list[str]] = {}
    for folder in ("src", "tests"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for match in CITATION.finditer(path.read_text(encoding="utf-8")):
                where = f"{path.relative_to(ROOT)}: docs/{match['file']}"
                doc = DOCS / match["file"]
                if not doc.is_file():
                    wrong.append(f"{where}: no such file")
                    continue
                known = found.setdefault(match["file"], labels(doc))
                for part in re.findall(r'"([^"]+)"', match["parts"]):
                    cited += 1
                    if not any(words(part) in label for label in known):
                        wrong.append(f'{where} "{words(part)}": no such heading or bold label')
    assert cited > 10, "the pattern no longer finds the citations"
    assert not wrong, "citations of the docs that lead nowhere:\n" + "\n".join(wrong)


DOTTED = re.compile(r"`(yiemagent(?:\.[A-Za-z_][A-Za-z0-9_]*)+)(?:\(|`)")
"""A dotted name of the package in backticks (`yiemagent.types.text_of`), in a docstring or
a comment."""


def test_every_dotted_name_the_source_cites_is_there() -> None:
    """A docstring that says `yiemagent.x.y` names a module and an attribute a reader can
    import; names the code uses as keys (OpenTelemetry attributes such as
    "yiemagent.end_reason") are not paths."""
    import importlib

    source = {path: path.read_text(encoding="utf-8") for path in (ROOT / "src").rglob("*.py")}
    keys = {
        key
        for text in source.values()
        for key in re.findall(r"[\"'](yiemagent\.[\w.]+)[\"']", text)
    }
    wrong: list[str] = []
    cited = 0
    for path, text in sorted(source.items()):
        for dotted in {m[1] for m in DOTTED.finditer(text)} - keys:
            cited += 1
            parts = dotted.split(".")
            for depth in range(len(parts), 0, -1):
                try:
                    found: object = importlib.import_module(".".join(parts[:depth]))
                except ImportError:
                    continue
                break
            for name in parts[depth:]:
                found = getattr(found, name, None)
                if found is None:
                    wrong.append(f"{path.relative_to(ROOT)}: {dotted}")
                    break
    assert cited > 10, "the pattern no longer finds the dotted names"
    assert not wrong, "dotted names that lead nowhere:\n" + "\n".join(sorted(wrong))
