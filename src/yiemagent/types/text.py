"""Text shown to a model in less room than it has: the layers above import it by path."""

from __future__ import annotations


def cut_middle(text: str, limit: int, *, left_out: str = "characters") -> str:
    """`text` whole when it has at most `limit` characters; else its first two thirds of
    `limit` and its last third, with a line between them saying how many characters were
    left out. The end is kept because a text's outcome is often there: a tool result's exit
    status or the error after a traceback, an answer's conclusion.

    Args:
        text: the text to shorten.
        limit: how many of its characters to keep, the note between them not counted.
        left_out: what the note calls the characters it counts ("characters of the
            answer"), so a reader knows whose text was cut.

    Returns:
        `text`, or its head, the line ``[… N characters left out …]`` and its tail.
    """
    if len(text) <= limit:
        return text
    head = limit * 2 // 3
    tail = limit - head
    count = len(text) - head - tail
    return f"{text[:head]}\n[… {count:,} {left_out} left out …]\n{text[len(text) - tail :]}"
