"""What the small model reads of a long tool result: its opening lines and the lines about
the request, in their order, with "…" where lines were left out.

Given a whole 7 KB README, the 0.5B answered "What is the name of the project?" with "I
cannot do it." or a line from the middle; given its first lines and the lines that share a
word with the request, it names the project (measured in docs/local-model.md, "Long
results; numbers in a tool's description"). Lines that are only markup (badges, images,
HTML tags, link targets, rules) neither open an excerpt nor count as being about anything.
"""

from __future__ import annotations

import re

from yiemagent.ai.providers.local.grounding import FILE_NAME, PREFIX, words

__all__ = ["EXCERPT_CHARS", "GAP", "HEAD_LINES", "LONG_RESULT", "about", "excerpt"]

LONG_RESULT = 3000
"""A tool result longer than this (characters) is shown as its excerpt."""
EXCERPT_CHARS = 1500
"""About how many characters of lines about the request an excerpt takes (it stops adding
lines once past this)."""
HEAD_LINES = 3
"""The opening lines every excerpt keeps (a title, what the text is)."""
GAP = "…"
"""The line that stands for lines left out."""

_ASKING_WORDS = (
    "about and are can could did does file find for from give how its open our please "
    "read say says should show tell that the their them there these this those what "
    "which who with would you your"
)
_ASKING = frozenset(_ASKING_WORDS.split())
_MARKUP = re.compile(r"^\s*(\.\. |:\w+:|\[!|!\[|<|\[[^\]]*\]:|\|)")


def about(request: str) -> frozenset[str]:
    """The word stems (first `PREFIX` letters) of what `request` asks about: its words of three
    or more letters, without the ones that only ask ("Read … and tell me what …"), numbers,
    or the words of a file name it gives ("README.md")."""
    named = {w for match in FILE_NAME.finditer(request) for w in words(match.group(0))}
    return frozenset(
        w[:PREFIX]
        for w in words(request)
        if len(w) > 2 and not w.isdigit() and w not in _ASKING and w not in named
    )


def excerpt(text: str, request: str) -> str:
    """`text` shortened for `request` when longer than `LONG_RESULT` characters, else as is.

    The excerpt keeps the first `HEAD_LINES` lines that are not markup, then the lines
    sharing the most word stems with `request` (`about`; earlier lines first among equals),
    each with its neighbours, until about `EXCERPT_CHARS` characters; in the text's order,
    `GAP` where lines other than markup were left out. A text no line of which is about the
    request keeps only its opening lines.
    """
    if len(text) <= LONG_RESULT:
        return text
    wanted = about(request)
    lines = text.splitlines()
    plain = [not _markup(line) for line in lines]
    keep = {i for i, ok in enumerate(plain) if ok}
    keep = set(sorted(keep)[:HEAD_LINES])
    size = sum(len(lines[i]) for i in keep)
    shared = [
        (len({w[:PREFIX] for w in words(line)} & wanted) if plain[i] else 0, i)
        for i, line in enumerate(lines)
    ]
    for count, i in sorted(shared, key=lambda item: (-item[0], item[1])):
        if count == 0 or size > EXCERPT_CHARS:
            break
        for j in (i - 1, i, i + 1):
            if 0 <= j < len(lines) and plain[j] and j not in keep:
                keep.add(j)
                size += len(lines[j])
    out: list[str] = []
    last = -2
    for i in sorted(keep):
        if out and any(plain[last + 1 : i]):  # a line with content left out, not markup
            out.append(GAP)
        out.append(lines[i])
        last = i
    return "\n".join(out)


def _markup(line: str) -> bool:
    # Only markup: an rst directive or field, a badge or image, an HTML tag, a link target,
    # a table of substitutions, or no letter or digit at all (a rule, a fence, a blank).
    return bool(_MARKUP.match(line)) or not re.search(r"[A-Za-z0-9]", line)
