"""The model's own tool format for the embedded model (DESIGN §20): Qwen2.5's chat-template
tool prompt, with a grammar that holds each call to the tools' schemas and leaves the
answer free.

The system prompt lists the tools as the template does (`<tools>` with one JSON function
signature a line, then the instruction to answer calls in `<tool_call>` blocks); earlier
calls are shown as `<tool_call>` blocks, results as `<tool_response>` blocks in a user
turn. The grammar (`native_grammar`, llguidance's lark syntax as llama.cpp's `grammar`)
admits either free text that does not begin like a call, or one or more calls
(`<tool_call>\\n{"name": ..., "arguments": ...}\\n</tool_call>` blocks, or the same JSON
fenced or bare), each held to one tool's schema; while the answer is not offered, only
calls.

`NativeDecoder` reads the reply with the shared text-call parser
(`yiemagent.ai._text_tool_calls`) and runs the policy's call rules on each whole block,
as the JSON reply's decoder does (`decoder.CallGate`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from yiemagent.ai._text_tool_calls import TextPiece, TextToolCallParser, ToolCallPiece
from yiemagent.ai.builder import MessageBuilder, parse_json_object
from yiemagent.ai.providers.local.decoder import CallGate, ReplyKind, new_call_id
from yiemagent.ai.providers.local.prompt import (
    MAX_CALLS,
    NO_TOOL,
    call_branch,
    content_text,
    identity,
    one_call,
)
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.tools import AgentTool

__all__ = [
    "NATIVE_NAME_PREFIX",
    "NativeDecoder",
    "native_extra_grammar",
    "native_grammar",
    "native_messages",
    "native_no_tool_turns",
    "native_system_prompt",
]

_TAG_OPEN, _TAG_CLOSE = "<tool_call>", "</tool_call>"
_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


_TEXT = r"/\s*(?:[^<`{\[\s]|`[^`]|``[^`]|```(?:[^j\s]|j[^s]|js[^o]|jso[^n]|json\S))(.|\n)*/"
"""Free text: anything that does not open a call. A reply that begins (after blanks) like
a call (`<`, `{`, `[`, or a fence with no language or `json`) is a call, held to the
tools' schemas; a fence of another language (```` ```python ````) is text.

Text that holds a call further on (`"name":`, a tool's name and `(`) was excluded too,
with llguidance's `&` and `~` on this lexeme; on BFCL `held` that lexeme overran
llguidance's lexer ("too many expressions constructed") and stalled a reply to the case
limit, and the 0.5B wrote around it (`"name" "get_time"`), so it was taken out."""


def _signature(tool: AgentTool) -> str:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.input_schema}
    return json.dumps({"type": "function", "function": function}, ensure_ascii=False)


def native_system_prompt(base: str, tools: Sequence[AgentTool], model_name: str = "") -> str:
    """The system prompt: the identity (with `model_name`), `base`, then the template's
    tool section (each tool's signature as JSON, and the `<tool_call>` instruction)."""
    parts = [identity(model_name)] if model_name else []
    if base.strip():
        parts.append(base.strip())
    head = "\n".join(parts)
    if not tools:
        return head
    section = _TOOLS_HEAD + "".join("\n" + _signature(t) for t in tools) + _TOOLS_TAIL
    return f"{head}\n\n{section}" if head else section


def _call_block(call: dict[str, Any]) -> str:
    return f"{_TAG_OPEN}\n{json.dumps(call, ensure_ascii=False)}\n{_TAG_CLOSE}"


def native_messages(system: str, messages: Sequence[Message]) -> list[dict[str, str]]:
    """The chat messages as Qwen2.5's template frames them: earlier calls as `<tool_call>`
    blocks after the reply's text, each round's results as one user turn of
    `<tool_response>` blocks (errors prefixed "Error: "), thinking left out."""
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    pending: list[str] = []

    def flush() -> None:
        if pending:
            blocks = [f"<tool_response>\n{text}\n</tool_response>" for text in pending]
            out.append({"role": "user", "content": "\n".join(blocks)})
            pending.clear()

    for message in messages:
        if isinstance(message, ToolResultMessage):
            text = content_text(message.content) or "(no output)"
            pending.append(f"Error: {text}" if message.is_error else text)
            continue
        flush()
        if isinstance(message, UserMessage):
            out.append({"role": "user", "content": content_text(message.content)})
        elif isinstance(message, AssistantMessage):
            parts = [b.text for b in message.content if isinstance(b, TextContent) and b.text]
            parts += [
                _call_block({"name": call.name, "arguments": call.arguments})
                for call in message.tool_calls
            ]
            if parts:
                out.append({"role": "assistant", "content": "\n".join(parts)})
    flush()
    return out


def native_grammar(
    tools: Sequence[AgentTool], *, drop: Collection[str] = (), answer: bool = True
) -> str:
    """The llguidance grammar of one reply: free text that does not begin like a call, or
    one or more calls, each held to the input schema of one of `tools`, in whichever
    framing the model opens it with: a `<tool_call>` block as the template asks, a fenced
    JSON object or list (```` ```json ````), or a bare JSON object, one after another on
    their own lines, at most `prompt.MAX_CALLS` of them (a model repeating a call is
    stopped there, not at the token limit). Small models trained on markdown open a call
    with a fence far more often than with the template's tag; left to free text, that JSON
    was held to nothing.

    Args:
        tools: The tools offered, in order.
        drop: Names of tools left out of the grammar (they stay in the system prompt, so
            its cached prefix is reused).
        answer: Whether free text is admitted (False: only blocks, while a tool the
            request asks for, or a typed run's output tool, is offered). With every tool
            dropped, free text is admitted whatever `answer` says.
    """
    calls = [call_branch(tool) for tool in tools if tool.name not in drop]
    if not calls:
        return f"%llguidance {{}}\nstart: TEXT\nTEXT: {_TEXT}\n"
    item = one_call(calls)
    items = {"type": "array", "items": item, "minItems": 1, "maxItems": MAX_CALLS}
    return (
        "%llguidance {}\n"
        f"start: {'TEXT | calls' if answer else 'calls'}\n"
        f"calls: block (SEP block){{0,{MAX_CALLS - 1}}}\n"
        'block: "<tool_call>\\n" body "\\n</tool_call>" '
        '| FENCE (body | list) "\\n```" | body\n'
        f"body: %json {json.dumps(item, ensure_ascii=False)}\n"
        f"list: %json {json.dumps(items, ensure_ascii=False)}\n"
        "FENCE: /```(json)?\\n/\n"  # one lexeme: the longest match beats free text
        "SEP: /\\n+/\n"
        f"TEXT: {_TEXT}\n"
    )


def native_extra_grammar(tools: Sequence[AgentTool], *, drop: Collection[str] = ()) -> str:
    """The llguidance grammar of one more block after the reply's calls so far, whose
    opening tag the provider has written: exactly a call held to one tool's schema and the
    closing tag (`rules.ExtraCall` in the model's own format)."""
    item = one_call([call_branch(tool) for tool in tools if tool.name not in drop])
    return (
        "%llguidance {}\n"
        'start: body "\\n</tool_call>"\n'
        f"body: %json {json.dumps(item, ensure_ascii=False)}\n"
    )


NATIVE_NAME_PREFIX = _TAG_OPEN + '\n{"name": "'
"""How a call block starts: the free-name probe (`generation.free_name`) writes after it."""


def native_no_tool_turns(name: str) -> list[dict[str, str]]:
    """The two turns that tell the model the tool it reached for, `name`, is not there, in
    its own format: its block as far as the name, then `prompt.NO_TOOL`."""
    return [
        {"role": "assistant", "content": _call_block({"name": name})},
        {"role": "user", "content": NO_TOOL.format(name=name)},
    ]


class NativeDecoder:
    """Turns a streamed reply in the model's own format into builder events (a
    `decoder.Decoder`): text as text deltas, each whole `<tool_call>` block judged by the
    policy's call rules (`decoder.CallGate`: kept, repaired or dropped) before its call is
    emitted.

    Blocks are never streamed: a call is emitted once its block has closed. While a block
    is open its partial JSON is shown to the rules' `stops`. Blank text at the end of the
    text so far (the line between two blocks, before the first, at the end) is held back
    and given out only when more text follows. A reply whose calls were all dropped to be
    asked again, with no text, is a "repeat"; its text, if it wrote any, is the answer. A
    block cut off by the end of generation is emitted as far as it was read (the message
    ends with it partial).
    """

    __slots__ = (
        "_blank",
        "_blocks",
        "_builder",
        "_extra",
        "_gate",
        "_parser",
        "_text",
        "notes",
        "raw",
    )

    def __init__(self, builder: MessageBuilder, gate: CallGate) -> None:
        """Args:
        builder: Receives the message's events.
        gate: The reply's call rules (and the tools offered, the scene).
        """
        self._builder = builder
        self._gate = gate
        self._parser = TextToolCallParser(list(gate.tools))
        self._blank = ""
        """Blank text held back."""
        self._text = False
        """Whether text other than blanks was given out."""
        self._extra = False
        self._blocks = 0
        """How many calls the model wrote (kept or not)."""
        self.raw = ""
        """The reply's text so far (after `resume_with_block`: its calls as tagged
        blocks)."""
        self.notes = self._gate.notes

    @property
    def calls(self) -> int:
        """How many calls the reply has emitted."""
        return len(self._gate.scene.emitted)

    def lone_call(self) -> dict[str, Any] | None:
        """The reply's one call (`name`, `arguments` as emitted) when it wrote exactly one
        call and no text, else None (several are the model's own batch): the provider may
        then ask for more calls (`resume_with_block`)."""
        if self._text or self._blocks != 1 or len(self._gate.scene.calls) != 1:
            return None
        tool, arguments = self._gate.scene.calls[0]
        return {"name": tool.name, "arguments": arguments}

    def resume_with_block(self, first: dict[str, Any]) -> None:
        """Go on as if the reply had been `first`'s block (its call already emitted), in
        the framing the template teaches for several calls; the provider then asks for one
        more block at a time (`open_block`). Each extra call is judged by the call rules as
        its block closes (`adds_part` keeps it only if it adds a part of the request); one
        cut short is dropped, the calls before it stand."""
        self.raw = _call_block(first)
        self._extra = True

    def open_block(self) -> None:
        """Write the next block's opening tag after the reply so far: the text fed next is
        that block's call and closing tag."""
        self._parser = TextToolCallParser(list(self._gate.tools))
        self._parser.feed(_TAG_OPEN + "\n")
        self.raw += f"\n{_TAG_OPEN}\n"

    @property
    def open_chars(self) -> int:
        """Characters of the block still being received (0 when none is open)."""
        return len(self._parser.open_tag or "")

    @property
    def hopeless(self) -> bool:
        """Whether a rule stopped the block being received (`CallRule.stops`)."""
        return self._gate.hopeless is not None

    def feed(self, text: str) -> None:
        """Take the next text delta: give out text, judge and emit each block that closes,
        and show the open block's partial call to the rules."""
        self.raw += text
        if self._extra and self._parser.open_tag is None:
            return  # the extra block has closed: what follows is not a call
        self._put(self._parser.feed(text), judge=True)
        body = self._parser.open_tag
        if body is not None and len(body) > 40 and self._gate.active:
            self._gate.check_open(body.strip())

    def _put(self, pieces: list[TextPiece | ToolCallPiece], *, judge: bool) -> None:
        for piece in pieces:
            if self._extra and not (judge and isinstance(piece, ToolCallPiece)):
                continue  # an extra block is a whole call or nothing: the calls before stand
            if isinstance(piece, TextPiece):
                self._put_text(piece.text)
                continue
            self._blank = ""
            self._blocks += 1
            arguments = parse_json_object(piece.arguments)
            if judge and arguments is not None:
                self._gate.emit(piece.name, arguments)
                continue
            # Unreadable, or cut off by the end of generation: as far as it was read.
            self._builder.tool_call_start(new_call_id(), piece.name)
            self._builder.tool_call_delta(piece.arguments)
            self._builder.end_block()

    def _put_text(self, text: str) -> None:
        text = self._blank + text
        body = text.rstrip()
        self._blank = text[len(body) :]
        if body:
            self._builder.text_delta(body)
            self._text = True

    def finish(self, cut: bool) -> tuple[ReplyKind, set[str]]:
        """Flush what is left (`cut`: generation ended early); returns the reply's kind and,
        when its calls were all dropped to be asked again (and it wrote no text), their
        tool names."""
        if self._gate.hopeless is None and not (self._extra and cut):
            self._put(self._parser.finish(), judge=not cut)
        kind, repeats = self._gate.outcome()
        if kind != "call" and self._text:
            return "answer", set()
        return kind, repeats
