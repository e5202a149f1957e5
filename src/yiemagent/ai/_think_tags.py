"""Reasoning that a model writes into a Chat Completions `content` string between
`<think>` and `</think>`, told apart from the answer while the text streams.

DeepSeek-R1, QwQ and Qwen3 behind a server with no reasoning parser (Ollama's OpenAI API,
vLLM without `--reasoning-parser`, llama.cpp with `--reasoning-format none`) send their
reasoning as the reply's first words, `<think>…</think>`, in the same `content` field as
the answer. `ThinkTagSplitter` reads such a reply as reasoning then answer: a reply whose
first characters, after white space, are `<think>` is reasoning up to its first
`</think>` (to its end when it never closes), the tags left out, and the white space
between the reasoning and the answer dropped. Any other reply is answer text as it comes,
a `<think>` further in included (a model writing about the tag). A reply whose chat
template wrote the `<think>` itself shows only `</think>`: it is passed through as text,
since only its end would tell its reasoning from an answer that streams at once.

The result does not depend on how the text is cut into chunks. Text is held back only
while it may still be the tag: the reply's start until it is or is not `<think>`, and in
the reasoning a tail that may be the start of `</think>`.
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ThinkTagSplitter"]

_OPEN, _CLOSE = "<think>", "</think>"

Kind = Literal["thinking", "text"]


class ThinkTagSplitter:
    """Splits streamed `content` text into reasoning and answer pieces.

    Single consumer: call `feed` with each content delta, then `finish` once; each returns
    the pieces completed so far as `(kind, text)`, kind "thinking" or "text", in order.
    """

    __slots__ = ("_buf", "_closed", "_state")

    def __init__(self) -> None:
        self._buf = ""
        self._state: Literal["start", "opened", "thinking", "after", "text"] = "start"
        """Where the reply is: "start", it may still open with `<think>`; "opened": it did, and no
        reasoning but white space has come; "thinking": in the reasoning; "after": past
        `</think>`, no answer but white space yet; "text": the answer (or a reply with no
        reasoning)."""
        self._closed = False

    @property
    def reasoning_closed(self) -> bool:
        """Whether the reply opened with `<think>` and its `</think>` has come: what follows
        is the answer."""
        return self._closed

    def feed(self, text: str) -> list[tuple[Kind, str]]:
        """Take the next content delta; returns the pieces it completes."""
        if self._state == "text":
            return [("text", text)] if text else []
        self._buf += text
        return self._read(final=False)

    def finish(self) -> list[tuple[Kind, str]]:
        """The reply has ended: returns what was held (unclosed reasoning stays reasoning)."""
        return self._read(final=True)

    def _read(self, *, final: bool) -> list[tuple[Kind, str]]:
        out: list[tuple[Kind, str]] = []
        if self._state == "start":
            head = self._buf.lstrip()
            if head.startswith(_OPEN):
                self._state, self._buf = "opened", head[len(_OPEN) :]
            elif _OPEN.startswith(head) and not final:
                return out  # still maybe `<think>`
            else:
                self._state = "text"
        if self._state == "opened":
            self._buf = self._buf.lstrip()
            if not self._buf:
                return out
            self._state = "thinking"
        if self._state == "thinking":
            at = self._buf.find(_CLOSE)
            if at < 0:
                cut = len(self._buf) - (0 if final else _tail_of(self._buf, _CLOSE))
                thought, self._buf = self._buf[:cut], self._buf[cut:]
                if thought:
                    out.append(("thinking", thought))
                return out
            if at:
                out.append(("thinking", self._buf[:at]))
            self._state, self._buf = "after", self._buf[at + len(_CLOSE) :]
            self._closed = True
        if self._state == "after":
            self._buf = self._buf.lstrip()
            if not self._buf:
                return out
            self._state = "text"
        if self._buf:
            out.append(("text", self._buf))
            self._buf = ""
        return out


def _tail_of(text: str, tag: str) -> int:
    """How many of `text`'s last characters are the start of `tag` (held: the next delta
    may complete it)."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0
