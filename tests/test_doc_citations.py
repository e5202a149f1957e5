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
