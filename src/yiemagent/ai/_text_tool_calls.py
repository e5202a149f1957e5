"""Tool calls that a model writes as text, recovered while the text streams (DESIGN §21).

Small models served by llama.cpp, vLLM or Ollama often answer a tool request with the call
written into the content instead of the API's `tool_calls`. `TextToolCallParser` reads the
streamed content and splits it into text and calls as it arrives, in these forms:

- Qwen / Hermes tags: `<tool_call>{"name": "f", "arguments": {...}}</tool_call>` (several
  JSON objects in one tag, or several tags; a missing closing tag at the end is forgiven),
  and in the same tags Qwen3-Coder's XML,
  `<function=f><parameter=x>value</parameter></function>` (each value a string, less the
  newline after its opening and before its closing tag; the tool's schema coerces it);
- Llama 3 JSON: a reply line that is `{"name": "f", "parameters": {...}}` (also after
  `<|python_tag|>`, or Llama 4's `<|python_start|>` with its `<|python_end|>` left out, and
  several on one line separated by `;`), and the same with "arguments" (Qwen's bare JSON);
- Llama 3.1's custom tool format, `<function=f>{"x": 1}</function>`, and the same tag
  holding Qwen3-Coder's `<parameter=x>` elements without the `<tool_call>` around them;
- Llama 3.2's Python calls: a reply line that is `[f(x=1, y="a"), g()]` (keyword
  arguments, each a Python literal), and Gemma's, the same calls in a `tool_code` block
  (one a line, `print(...)` around it or not);
- Mistral: `[TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]` and the newer
  `[TOOL_CALLS]f[ARGS]{...}` (with an optional `[CALL_ID]id`);
- fenced JSON: a ```` ``` ```` / ```` ```json ```` block holding one call or a list of calls.

Reasoning written into the content — a reply that opens with `<think>`, as Qwen3, QwQ and
DeepSeek-R1 write it when no reasoning parser takes it out, or one whose chat template
wrote the `<think>` (R1 distills), so that only its `</think>` shows — is text up to its
first `</think>`: a call drafted there is not one (a server's reasoning parser never lets
one through). A `</think>` in a call's arguments ends the reasoning too.

Text before, between and after calls stays text. A bare or fenced JSON object becomes a call
only when it has the shape of one (a string "name" and an object of arguments, nothing
else) and, when the tool names are known, names a tool (as must each Python call of a
line); a code block or JSON that is not a call is given back as text, unchanged. A tagged
call ("<tool_call>", "[TOOL_CALLS]") is a call whatever it names; tagged text that cannot
be read as a call is given back as text, and so is a tag right after a backtick: quoted in
inline code (a model telling the user how calls are written), it is prose, not a call.

The result does not depend on how the text is cut into chunks: feeding it piece by piece
gives the same pieces (adjacent texts joined) as feeding it whole. Text is held back only
while it may still turn out to be a call (a marker's first characters, a JSON object that
has not closed yet), so prose streams at once; a call, and what follows it, is held until
a `</think>` or the reply's end shows whether it was reasoning.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from yiemagent.types.json_text import json_like, read_python_literal

__all__ = [
    "TextPiece",
    "TextToolCallParser",
    "ToolCallPiece",
    "join_text",
    "python_literal_object",
]


@dataclass(frozen=True, slots=True)
class TextPiece:
    """Text of the reply (not a call)."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallPiece:
    """One call written as text."""

    name: str
    arguments: str
    """The arguments as JSON text (normally an object; the raw text written when it could
    not be read, so the tool pipeline can tell the model what was wrong)."""


Piece = TextPiece | ToolCallPiece

_TAG_OPEN, _TAG_CLOSE = "<tool_call>", "</tool_call>"
_MISTRAL = "[TOOL_CALLS]"
_PYTHON_TAG = "<|python_tag|>"
_PYTHON_START, _PYTHON_END = "<|python_start|>", "<|python_end|>"
_FENCE = "```"
_FUNCTION_OPEN, _FUNCTION_CLOSE = "<function=", "</function>"
_THINK_OPEN, _THINK_CLOSE = "<think>", "</think>"
_MARKERS = (_TAG_OPEN, _MISTRAL, _PYTHON_TAG, _PYTHON_START, _PYTHON_END, _FENCE, _FUNCTION_OPEN)
_JSON_FENCES = {"", "json", "json5", "jsonc", "tool_call", "tool_calls", "tool_code"}
_CALL_KEYS = {"name", "arguments", "parameters", "type", "id"}
_NAME = re.compile(r'^\{\s*"name"\s*:\s*"([^"\\]+)"')
_MAX_NAME = 200
"""Characters a `[TOOL_CALLS]name[CALL_ID]id` head may take before its `[ARGS]`."""
_XML_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|\Z)", re.DOTALL)
_XML_PARAMETER = re.compile(
    r"<parameter=([^>]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL
)

_Mode = Literal[
    "opening",
    "think",
    "text",
    "bare",
    "calls",
    "tag",
    "function",
    "mistral",
    "fence_head",
    "fence_json",
    "fence_text",
]
_CALL_LIST_HEAD = re.compile(r"\[\s*[A-Za-z_][\w.]*\s*\(")
"""How a line of Python calls begins: `[name(`."""
_CALL_LIST_START = re.compile(r"\[\s*(?:[A-Za-z_][\w.]*\s*)?")
"""What may still grow into `_CALL_LIST_HEAD` (the whole text read so far)."""


def join_text(pieces: list[Piece]) -> list[Piece]:
    """`pieces` with adjacent texts joined and empty texts dropped."""
    out: list[Piece] = []
    for piece in pieces:
        if isinstance(piece, TextPiece):
            if not piece.text:
                continue
            if out and isinstance(out[-1], TextPiece):
                out[-1] = TextPiece(out[-1].text + piece.text)
                continue
        out.append(piece)
    return out


class TextToolCallParser:
    """Splits streamed reply text into `TextPiece`s and `ToolCallPiece`s.

    Single consumer: call `feed` with each text delta, then `finish` once; each returns the
    pieces completed by that call, in order.

    A reply whose chat template opened `<think>` itself (DeepSeek-R1 distills) shows only
    the reasoning's `</think>`: everything up to the reply's first `</think>` is reasoning,
    and the calls read there are text. So while no `</think>` has come (and the reply did
    not open with `<think>`), the first call read and all that follows it are held: given
    out as they are at `finish`, or, when a `</think>` comes, given out as text up to it,
    and what follows it read afresh.
    """

    __slots__ = ("_held", "_names", "_raw", "_reader", "_settled")

    def __init__(self, tool_names: Collection[str] | None = None) -> None:
        """Args:
        tool_names: The tools offered; a bare or fenced JSON object becomes a call only
            when it names one of them (None: any name).
        """
        self._names = tool_names
        self._reader = _ReplyReader(tool_names)
        self._raw = ""
        """The reply so far, while no `</think>` has settled it."""
        self._settled = False
        """Whether the reasoning question is decided: the reply opened with `<think>`
        (the reader handles it) or its first `</think>` has come."""
        self._held: list[Piece] | None = None
        """The pieces from the first call read while unsettled on (None: no call yet)."""

    def feed(self, text: str) -> list[Piece]:
        """Take the next delta of the reply's text; returns the pieces it completes."""
        if self._settled:
            return self._reader.feed(text)
        before = len(self._raw)
        self._raw += text
        if self._raw.lstrip().startswith(_THINK_OPEN):
            self._settled = True
            return join_text(self._release() + self._reader.feed(text))
        at = self._raw.find(_THINK_CLOSE, max(0, before - len(_THINK_CLOSE) + 1))
        if at < 0:
            return self._keep(self._reader.feed(text))
        # the reasoning ends here: what the reader had not given out up to it is text
        out = self._keep(self._reader.feed(self._raw[before:at]))
        end = at + len(_THINK_CLOSE)
        start = self._reader.consumed
        if self._held is not None and self._reader.first_call_at is not None:
            start = self._reader.first_call_at
        out.append(TextPiece(self._raw[start:end]))
        self._settled, self._held = True, None
        self._reader = _ReplyReader(self._names, mode="text")
        out += self._reader.feed(self._raw[end:])
        self._raw = ""
        return join_text(out)

    def answer_follows(self) -> None:
        """The reply's reasoning was read apart before its text came here (its
        `<think>…</think>` taken out, `ai._think_tags`): the text is the answer, so each
        call read in it is given out at once. No effect once text has been fed."""
        if not self._raw:
            self._settled = True

    def finish(self) -> list[Piece]:
        """The reply has ended: returns the remaining pieces (held text given out, an
        unclosed tag read as far as it goes)."""
        return join_text(self._release() + self._reader.finish())

    @property
    def open_tag(self) -> str | None:
        """The text after the opening `<tool_call>` of a tag still open (a call being
        written), or None when no tag is open."""
        return self._reader.open_tag

    def _keep(self, pieces: list[Piece]) -> list[Piece]:
        # The pieces to give out now; from the first call on, held.
        out: list[Piece] = []
        for piece in pieces:
            if self._held is not None:
                self._held.append(piece)
            elif isinstance(piece, ToolCallPiece):
                self._held = [piece]
            else:
                out.append(piece)
        return out

    def _release(self) -> list[Piece]:
        held, self._held = self._held or [], None
        return held


class _ReplyReader:
    """`TextToolCallParser` without the reasoning whose `<think>` the template wrote: the
    state machine that reads text and calls."""

    __slots__ = (
        "_blank",
        "_buf",
        "_closed",
        "_fed",
        "_mode",
        "_names",
        "_python",
        "_scan",
        "_start",
        "_tick",
        "first_call_at",
    )

    def __init__(self, tool_names: Collection[str] | None, mode: _Mode = "opening") -> None:
        self._names = frozenset(tool_names) if tool_names is not None else None
        self._buf = ""
        """Text received and not yet given out."""
        self._fed = 0
        """Characters received."""
        self.first_call_at: int | None = None
        """Where in the text received the block of the first call read begins."""
        self._mode: _Mode = mode
        self._blank = True
        """Whether the text given out so far ends on a line that is empty or blank."""
        self._tick = False
        """Whether the text given out so far ends with a backtick."""
        self._scan = _JsonScan()
        self._python = _PythonScan()
        self._start = 0
        """In "bare"/"mistral"/"fence_json" modes: where the held construct's body begins."""
        self._closed = 0
        """In "bare" mode: where the last object read so far ends (0: none closed yet)."""

    def feed(self, text: str) -> list[Piece]:
        """Take the next delta of the reply's text; returns the pieces it completes."""
        self._buf += text
        self._fed += len(text)
        out: list[Piece] = []
        self._run(out, final=False)
        return join_text(out)

    def finish(self) -> list[Piece]:
        """The reply has ended: returns the remaining pieces (held text given out, an
        unclosed tag read as far as it goes)."""
        out: list[Piece] = []
        self._run(out, final=True)
        return join_text(out)

    @property
    def open_tag(self) -> str | None:
        """The text after the opening `<tool_call>` of a tag still open (a call being
        written), or None when no tag is open."""
        return self._buf[len(_TAG_OPEN) :] if self._mode == "tag" else None

    # ── the state machine ────────────────────────────────────────────────────

    def _run(self, out: list[Piece], *, final: bool) -> None:
        while True:
            step = getattr(self, "_" + self._mode)
            if not step(out, final):
                return

    def _emit_text(self, out: list[Piece], text: str) -> None:
        if not text:
            return
        out.append(TextPiece(text))
        self._tick = text.endswith("`")
        if "\n" in text:
            self._blank = not text.rsplit("\n", 1)[1].strip()
        else:
            self._blank = self._blank and not text.strip()

    @property
    def consumed(self) -> int:
        """Characters of the text received that were given out (as text or calls) or
        dropped (a marker)."""
        return self._fed - len(self._buf)

    def _emit_calls(self, out: list[Piece], calls: list[ToolCallPiece]) -> None:
        if self.first_call_at is None:  # the block begins the text still held
            self.first_call_at = self.consumed
        out.extend(calls)
        self._blank = True
        self._tick = False

    def _settle(self, out: list[Piece], calls: list[ToolCallPiece], buf: str, end: int) -> bool:
        # A read block ends: its calls, or its text when it held none; then text again.
        if calls:
            self._emit_calls(out, calls)
        else:
            self._emit_text(out, buf[:end])
        self._buf, self._mode = buf[end:], "text"
        return True

    def _opening(self, out: list[Piece], final: bool) -> bool:
        # Whether the reply opens with reasoning: held while its start may still be `<think>`.
        head = self._buf.lstrip()
        if not final and _THINK_OPEN.startswith(head):
            return False
        self._mode = "think" if head.startswith(_THINK_OPEN) else "text"
        return True

    def _think(self, out: list[Piece], final: bool) -> bool:
        # Reasoning: text up to and with `</think>` (to the end when it never closes).
        buf = self._buf
        at = buf.find(_THINK_CLOSE)
        if at < 0:
            keep = 0 if final else _partial(buf, (_THINK_CLOSE,))
            self._emit_text(out, buf[: len(buf) - keep])
            self._buf = buf[len(buf) - keep :]
            return False
        end = at + len(_THINK_CLOSE)
        self._emit_text(out, buf[:end])
        self._buf, self._mode = buf[end:], "text"
        return True

    def _text(self, out: list[Piece], final: bool) -> bool:
        buf = self._buf
        at, marker = self._next_marker(buf)
        if marker is None:
            keep = 0 if final else _partial_marker(buf)
            self._emit_text(out, buf[: len(buf) - keep])
            self._buf = buf[len(buf) - keep :]
            return False
        self._emit_text(out, buf[:at])
        if marker in (_TAG_OPEN, _MISTRAL) and self._tick:  # `<tool_call>…`: quoted
            self._emit_text(out, marker)
            self._buf = buf[at + len(marker) :]
        elif marker == "{":
            self._buf = buf[at:]
            self._mode, self._scan, self._start, self._closed = "bare", _JsonScan(), 0, 0
        elif marker == "[":
            self._buf = buf[at:]
            self._mode, self._python = "calls", _PythonScan()
        elif marker in (_PYTHON_TAG, _PYTHON_START):  # a special token: what follows opens a line
            self._buf = buf[at + len(marker) :]
            self._blank = True
        elif marker == _PYTHON_END:  # the special token that closes `<|python_start|>`
            self._buf = buf[at + len(marker) :]
        elif marker == _TAG_OPEN:
            self._buf = buf[at:]
            self._mode, self._scan = "tag", _JsonScan()
        elif marker == _MISTRAL:
            self._buf = buf[at:]
            self._mode, self._scan, self._start = "mistral", _JsonScan(), len(marker)
        elif marker == _FUNCTION_OPEN:
            self._buf = buf[at:]
            self._mode = "function"
        else:
            self._buf = buf[at:]
            self._mode = "fence_head"
        return True

    def _next_marker(self, buf: str) -> tuple[int, str | None]:
        """The first marker in `buf`: a tag, a fence, or a `{` or `[` opening a line."""
        best, found = len(buf), None
        for marker in _MARKERS:
            at = buf.find(marker, 0, best + len(marker) - 1)
            if 0 <= at < best:
                best, found = at, marker
        for opener in ("{", "["):
            at = buf.find(opener, 0, best)
            while at >= 0:
                line = buf[:at].rsplit("\n", 1)
                if not line[-1].strip() and (len(line) == 2 or self._blank):
                    best, found = at, opener
                    break
                at = buf.find(opener, at + 1, best)
        return best, found

    def _calls(self, out: list[Piece], final: bool) -> bool:
        # `[f(x=1), g()]` opening a line: Python calls, read once the list closes.
        buf = self._buf
        if buf.startswith(_MARKERS):  # `[TOOL_CALLS]`: the text mode reads it
            self._mode = "text"
            return True
        if not final and any(marker.startswith(buf) for marker in _MARKERS):
            return False
        if _CALL_LIST_HEAD.match(buf) is None:
            start = _CALL_LIST_START.match(buf)
            if not final and start is not None and start.end() == len(buf):
                return False  # `[`, `[ get_`: it may still be a call
            self._emit_text(out, "[")  # `[1, 2]`, `[link](url)`: prose
            self._buf, self._mode = buf[1:], "text"
            return True
        end = self._python.end(buf)
        if end is None and not final:
            return False
        end = len(buf) if end is None else end
        return self._settle(out, _python_calls(buf[:end], self._names), buf, end)

    def _bare(self, out: list[Piece], final: bool) -> bool:
        buf = self._buf
        body = buf[1:].lstrip()
        if not body and not final:
            return False
        if not body.startswith('"'):  # `{x}`, `{ }` and such: prose, not JSON
            self._emit_text(out, "{")
            self._buf, self._mode = buf[1:], "text"
            return True
        # Llama 3.2 writes parallel calls on one line: `{...}; {...}`. Each closed object
        # is kept in `_closed` while what follows it is read.
        while True:
            end = self._closed or self._scan.advance(buf, self._start)
            if end is None:
                if not final:
                    return False
                end = len(buf)
                break
            self._closed = end
            following = _after_semicolon(buf, end)
            if following is None and not final:
                return False
            if following is None or following < 0:
                break
            self._scan, self._start, self._closed = _JsonScan(), following, 0
        self._start = self._closed = 0
        calls = _read_calls(buf[:end], self._names, tagged=False)
        return self._settle(out, calls, buf, end)

    def _tag(self, out: list[Piece], final: bool) -> bool:
        # The tag ends at the first `</tool_call>` outside a JSON string: one inside a
        # string value is part of the arguments (a file that mentions the tag, say).
        buf = self._buf
        found: int | None
        if buf[len(_TAG_OPEN) :].lstrip().startswith("<"):  # XML: no JSON strings to skip
            at = buf.find(_TAG_CLOSE, len(_TAG_OPEN))
            found = at if at >= 0 else None
        else:
            found = self._scan.find(buf, len(_TAG_OPEN), _TAG_CLOSE)
        if found is None and not final:
            return False
        close = buf.find(_TAG_CLOSE, len(_TAG_OPEN)) if found is None else found
        # (None at the end: quotes out of balance, so the first closing tag there is)
        end = len(buf) if close < 0 else close + len(_TAG_CLOSE)
        inner = buf[len(_TAG_OPEN) : close if close >= 0 else len(buf)]
        xml = inner.lstrip().startswith("<function=")
        calls = _xml_calls(inner) if xml else _read_calls(inner, None, tagged=True)
        return self._settle(out, calls, buf, end)

    def _function(self, out: list[Piece], final: bool) -> bool:
        # `<function=f>` outside a `<tool_call>`: it ends at its `</function>` (or the end).
        buf = self._buf
        close = buf.find(_FUNCTION_CLOSE, len(_FUNCTION_OPEN))
        if close < 0 and not final:
            return False
        end = len(buf) if close < 0 else close + len(_FUNCTION_CLOSE)
        return self._settle(out, _function_calls(buf[:end]), buf, end)

    def _mistral(self, out: list[Piece], final: bool) -> bool:
        buf = self._buf
        rest = buf[len(_MISTRAL) :]
        body = rest.lstrip()
        if not body and not final:
            return False
        if body[:1] in ("[", "{"):  # `[TOOL_CALLS] [{...}, ...]`
            start = len(buf) - len(body)
            end = self._scan.advance(buf, start)
            if end is None and not final:
                return False
            end = len(buf) if end is None else end
            calls = _read_calls(buf[start:end], None, tagged=True)
        else:  # `[TOOL_CALLS]name[CALL_ID]id[ARGS]{...}`
            newline = buf.find("\n", len(_MISTRAL))
            limit = len(_MISTRAL) + _MAX_NAME if newline < 0 else newline
            args = buf.find("[ARGS]", len(_MISTRAL), limit + len("[ARGS]") - 1)
            if args < 0:
                if not final and newline < 0 and len(buf) < limit + len("[ARGS]"):
                    return False
                end, calls = len(_MISTRAL), []
            else:
                name = buf[len(_MISTRAL) : args].split("[CALL_ID]", 1)[0].strip()
                start = args + len("[ARGS]")
                end_or_none = self._scan.advance(buf, start)
                if end_or_none is None and not final:
                    return False
                end = len(buf) if end_or_none is None else end_or_none
                arguments = buf[start:end].strip()
                calls = [ToolCallPiece(name, arguments or "{}")] if _is_name(name) else []
        return self._settle(out, calls, buf, end)

    def _fence_head(self, out: list[Piece], final: bool) -> bool:
        buf = self._buf
        newline = buf.find("\n", len(_FENCE))
        if newline < 0:
            if not final:
                return False
            self._emit_text(out, buf)
            self._buf, self._mode = "", "text"
            return False
        info = buf[len(_FENCE) : newline].strip().lower()
        if info in _JSON_FENCES:
            self._mode, self._start = "fence_json", newline + 1
        else:
            self._emit_text(out, buf[: newline + 1])
            self._buf, self._mode = buf[newline + 1 :], "fence_text"
        return True

    def _fence_json(self, out: list[Piece], final: bool) -> bool:
        buf = self._buf
        body = buf[self._start :]
        first = body.lstrip()[:1]
        # Gemma writes its calls as Python in a `tool_code` block: `f(x=1)`, `print(f(x=1))`
        python = buf[len(_FENCE) : self._start].strip().lower() == "tool_code"
        if first and first not in "{[" and not (python and (first.isalpha() or first == "_")):
            self._emit_text(out, buf[: self._start])  # code, not a call: stream it as text
            self._buf, self._mode = body, "fence_text"
            return True
        # The closing fence opens a line: a ``` inside a JSON string value does not close it.
        close = body.find("\n" + _FENCE)
        if close < 0 and not final:
            return False
        end = len(buf) if close < 0 else self._start + close + 1 + len(_FENCE)
        text = body if close < 0 else body[:close]
        calls = _read_calls(text, self._names, tagged=False)
        if not calls and (python or first == "["):
            calls = _python_calls(_call_list(text), self._names)
        return self._settle(out, calls, buf, end)

    def _fence_text(self, out: list[Piece], final: bool) -> bool:
        buf = self._buf
        close = buf.find(_FENCE)
        if close < 0:
            keep = 0 if final else len(buf) - len(buf.rstrip("`"))
            self._emit_text(out, buf[: len(buf) - keep])
            self._buf = buf[len(buf) - keep :]
            return False
        self._emit_text(out, buf[: close + len(_FENCE)])
        self._buf, self._mode = buf[close + len(_FENCE) :], "text"
        return True


def _after_semicolon(buf: str, end: int) -> int | None:
    """Where the next object of `{...}; {...}` begins after the object ending at `end`: -1
    when something else follows, None when the text so far does not tell."""
    at = end
    while at < len(buf) and buf[at] == " ":
        at += 1
    if at == len(buf):
        return None
    if buf[at] != ";":
        return -1
    at += 1
    while at < len(buf) and buf[at] == " ":
        at += 1
    if at == len(buf):
        return None
    return at if buf[at] == "{" else -1


def _partial_marker(buf: str) -> int:
    """The length of the longest end of `buf` that may be the start of a marker."""
    return _partial(buf, _MARKERS)


def _partial(buf: str, markers: tuple[str, ...]) -> int:
    """The length of the longest end of `buf` that may be the start of one of `markers`."""
    for size in range(min(len(buf), max(map(len, markers)) - 1), 0, -1):
        tail = buf[-size:]
        if any(marker.startswith(tail) for marker in markers):
            return size
    return 0


def python_literal_object(raw: str) -> dict[str, Any] | None:
    """The object text holds when a model wrote it as a Python literal, not JSON
    (`read_python_literal`); None when it holds none."""
    try:
        value = read_python_literal(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _is_name(name: str) -> bool:
    return bool(name) and len(name) <= 128 and not any(c.isspace() for c in name)


def _read_calls(text: str, names: frozenset[str] | None, *, tagged: bool) -> list[ToolCallPiece]:
    """The calls `text` holds (JSON objects one after another, or lists of them); [] when it
    is anything else. Untagged text must hold calls only, each shaped as one and naming a
    known tool; tagged text may hold a call whose arguments cannot be read."""
    decoder = json.JSONDecoder()
    values: list[Any] = []
    at, size = 0, len(text)
    while True:
        # between calls: separators, and in a tag the stray closers of a call closed once
        # too often (`{"name": ..., "arguments": {...}}}`)
        while at < size and (
            text[at].isspace() or text[at] in ",;" or (tagged and values and text[at] in "}]")
        ):
            at += 1
        if at >= size:
            break
        try:
            value, at = decoder.raw_decode(text, at)
        except ValueError:
            if not (tagged and not values):
                return []
            # a call written as a Python literal (`{'name': 'f', 'arguments': {...}}`)
            literal = python_literal_object(text[at:])
            if literal is None:
                return _unreadable_call(text[at:])
            values.append(literal)
            break
        values.extend(value if isinstance(value, list) else [value])
    calls = [_call(value, names, tagged=tagged) for value in values]
    if not calls or any(call is None for call in calls):
        return []
    return [call for call in calls if call is not None]


def _xml_calls(text: str) -> list[ToolCallPiece]:
    """The calls of Qwen3-Coder's XML in a tag: `<function=f>` holding `<parameter=x>`
    elements, each value a string (its closing tag may be missing before the next
    parameter or at the end); [] when `text` holds no function, or one with a bad name."""
    calls: list[ToolCallPiece] = []
    for function in _XML_FUNCTION.finditer(text):
        name = function[1].strip()
        if not _is_name(name):
            return []
        arguments: dict[str, str] = {}
        for parameter in _XML_PARAMETER.finditer(function[2]):
            value = parameter[2].removeprefix("\n")
            arguments[parameter[1].strip()] = value.removesuffix("\n")
        calls.append(ToolCallPiece(name, json.dumps(arguments, ensure_ascii=False)))
    return calls


class _PythonScan:
    """Reads Python text left to right, each character once however the text arrives
    (`buf` only grows between calls): where the bracket opening it closes, brackets
    inside strings (either quote, escapes included) not counting."""

    __slots__ = ("_depth", "_escape", "_pos", "_quote")

    def __init__(self) -> None:
        self._pos = self._depth = 0
        self._quote, self._escape = "", False

    def end(self, buf: str) -> int | None:
        """The index just after the bracket closing the one `buf` opens with, or None
        while it is still open."""
        at, depth, quote, escape = self._pos, self._depth, self._quote, self._escape
        found = None
        while at < len(buf):
            char = buf[at]
            at += 1
            if quote:
                if escape:
                    escape = False
                elif char == "\\":
                    escape = True
                elif char == quote:
                    quote = ""
            elif char in "'\"":
                quote = char
            elif char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    found = at
                    break
        self._pos, self._depth, self._quote, self._escape = at, depth, quote, escape
        return found


def _call_list(text: str) -> str:
    """The Python calls of a `tool_code` block as one list: `[...]` as written, else its
    lines, each `f(...)` or `print(f(...))`, in one."""
    body = text.strip()
    if body.startswith("["):
        return body
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    calls = [
        line[len("print(") : -1] if line.startswith("print(") and line.endswith(")") else line
        for line in lines
    ]
    return "[" + ", ".join(calls) + "]"


def _python_calls(text: str, names: frozenset[str] | None) -> list[ToolCallPiece]:
    """The calls of a Python list of calls (`[f(x=1, y="a"), g()]`), each named for a tool
    when the names are known and given keyword arguments that are Python literals; [] when
    `text` is anything else (it is then text). Nothing in it runs: the list is parsed, and
    each argument read by `ast.literal_eval`."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return []
    if not isinstance(tree.body, ast.List) or not tree.body.elts:
        return []
    calls: list[ToolCallPiece] = []
    for node in tree.body.elts:
        if not isinstance(node, ast.Call) or node.args:
            return []
        func = node.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
        if not isinstance(name, str) or (names is not None and name not in names):
            return []
        arguments: dict[str, Any] = {}
        for keyword in node.keywords:
            if keyword.arg is None:  # `**kwargs`
                return []
            try:
                arguments[keyword.arg] = ast.literal_eval(keyword.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                return []
        if not json_like(arguments):
            return []
        calls.append(ToolCallPiece(name, json.dumps(arguments, ensure_ascii=False)))
    return calls


def _function_calls(text: str) -> list[ToolCallPiece]:
    """The call of a `<function=f>...</function>` block: its body a JSON object (Llama
    3.1) or `<parameter=x>` elements (Qwen3-Coder); [] when the name is not one, or the
    body neither."""
    head, _, body = text[len(_FUNCTION_OPEN) :].partition(">")
    name = head.strip()
    if not _is_name(name) or not _:
        return []
    body = body.removesuffix(_FUNCTION_CLOSE).strip()
    if not body.startswith("{"):
        return _xml_calls(text) if not body or body.startswith("<parameter=") else []
    arguments = _json_object(body) or python_literal_object(body)
    if arguments is None:  # unreadable: the tool pipeline tells the model what it sent
        return [ToolCallPiece(name, body)]
    return [ToolCallPiece(name, json.dumps(arguments, ensure_ascii=False))]


def _call(value: Any, names: frozenset[str] | None, *, tagged: bool) -> ToolCallPiece | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("function"), dict):  # `{"type": "function", "function": {...}}`
        value = value["function"]
    name = value.get("name")
    if not isinstance(name, str) or not _is_name(name):
        return None
    if not tagged and (not set(value) <= _CALL_KEYS or (names is not None and name not in names)):
        return None
    arguments = value.get("arguments", value.get("parameters", {}))
    if arguments is None:
        arguments = {}
    if isinstance(arguments, str):
        parsed = _json_object(arguments) if arguments.strip() else {}
        if parsed is None:
            return ToolCallPiece(name, arguments) if tagged else None
        arguments = parsed
    if not isinstance(arguments, dict):
        return ToolCallPiece(name, json.dumps(arguments)) if tagged else None
    return ToolCallPiece(name, json.dumps(arguments, ensure_ascii=False))


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _unreadable_call(text: str) -> list[ToolCallPiece]:
    """A tagged call whose JSON is broken: the name, when it can be read, with the raw text
    as its arguments (the tool pipeline then tells the model what it sent)."""
    raw = text.strip()
    found = _NAME.search(raw)
    if found is None or not _is_name(found[1]):
        return []
    name = found[1]
    for key in ('"arguments"', '"parameters"'):
        at = raw.find(key)
        if at >= 0:
            colon = raw.find(":", at + len(key))
            if colon >= 0:
                raw = raw[colon + 1 :].strip().removesuffix("}").strip()
                break
    return [ToolCallPiece(name, raw)]


class _JsonScan:
    """Reads JSON text left to right, each character once however the text arrives (`buf`
    only grows between calls): whether it is inside a string (escapes included) and, outside
    strings, how deep it is. One scanner for the two questions the parser asks: where a
    value ends (`advance`) and where a closing tag outside strings begins (`find`)."""

    __slots__ = ("_depth", "_escape", "_pos", "_string")

    def __init__(self) -> None:
        self._pos = -1
        self._depth = 0
        self._string = False
        self._escape = False

    def advance(self, buf: str, start: int = 0) -> int | None:
        """The index just after the value opening at `buf[start]` ends, or None while it
        is still open."""
        return self._scan(buf, start, "")

    def find(self, buf: str, start: int, needle: str) -> int | None:
        """Where `needle` (not empty) first begins in `buf` from `start`, outside JSON
        strings; None while it has not come (a start of it at the end of `buf` is read again
        with the next text)."""
        return self._scan(buf, start, needle)

    def _scan(self, buf: str, start: int, needle: str) -> int | None:
        """`find` of `needle`, or with "" `advance`; the same string state for both."""
        if self._pos < 0:
            self._pos = start
        at, depth, string, escape = self._pos, self._depth, self._string, self._escape
        first, size, end = needle[:1], len(buf), None
        while at < size:
            char = buf[at]
            if string:
                if escape:
                    escape = False
                elif char == "\\":
                    escape = True
                elif char == '"':
                    string = False
            elif char == '"':
                string = True
            elif char in "{[":
                depth += 1
            elif char in "}]":
                depth -= 1
                if depth <= 0 and not needle:
                    end = at = at + 1
                    break
            elif char == first:
                seen = buf[at : at + len(needle)]
                if needle.startswith(seen):  # it, or its start at the end: stay here
                    end = at if seen == needle else None
                    break
            at += 1
        self._pos, self._depth, self._string, self._escape = at, depth, string, escape
        return end
