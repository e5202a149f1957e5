"""Text cut short, and what says so: a text cut in its middle to fit a model's room
(`cut_middle`, and `kept_length`, what such a text kept), and the note after an answer the
output limit cut off (`cut_off_note`, one wording for `yiem run`, `yiem chat` and the
serve page). The layers above import it by path."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yiemagent.types.messages import AssistantMessage

CUT_OFF = "⋯ cut off: the answer reached the model's output limit"
"""Said after an answer whose stop reason is "length" when no output limit was set: it
ended mid-sentence ("...which is connected to a crank") as if it were whole."""


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


def kept_length(text: str, *, left_out: str = "characters") -> int:
    """How many characters of `text` are its own: its length less that of each line
    `cut_middle` (called with the same `left_out`) put in it, so a text cut once is
    measured as what was kept and is not cut again at the same limit."""
    note = re.compile(rf"\n\[… [\d,]+ {re.escape(left_out)} left out …\]\n")
    return len(text) - sum(len(found) for found in note.findall(text))


def cut_off_note(
    message: AssistantMessage, max_tokens: int | None, *, named: str = "--max-tokens"
) -> str:
    """The note said after `message`, whose stop reason is "length", naming the limit that
    cut it.

    Args:
        message: the answer that was cut off.
        max_tokens: the output limit the user set (tokens), None when none was set.
        named: how the user set it: `--max-tokens` on the command line, `max_tokens` for
            an Agent's or a server's.

    Returns:
        "the answer reached `named` N; raise it for a longer answer" when `max_tokens` was
        set (unless the usage shows fewer output tokens than N, so the model's own limit
        came first), else `CUT_OFF`; an answer with no text says the limit was reached
        before any (a model writing its reply inside a JSON envelope spends its first
        tokens on that), and a message with a tool call that it came in the middle of one
        (the call is not run; the model is asked again).
    """
    usage = message.usage.output
    if max_tokens is not None and not 0 < usage < max_tokens:
        limit = f"{named} {max_tokens}"
        raise_it = "; raise it for a longer answer"
    else:
        limit, raise_it = "the model's output limit", ""
    if message.tool_calls:
        raise_it = raise_it and "; raise it so calls fit"
        return f"⋯ cut off: {limit} was reached in the middle of a tool call{raise_it}"
    if not message.text.strip():
        return f"⋯ cut off: {limit} was reached before any text of the answer{raise_it}"
    if raise_it:
        return f"⋯ cut off: the answer reached {limit}{raise_it}"
    return CUT_OFF
