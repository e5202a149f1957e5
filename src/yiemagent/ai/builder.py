"""`MessageBuilder`: the one place that grows a partial `AssistantMessage` and pushes the
matching events of the provider event stream (DESIGN §7).

Every provider (and the faux one) drives a builder: `start()`, then deltas of text, thinking
and tool calls, then `done(stop_reason)` or `fail(reason, error_message)`. Events carry the
same growing message object (`partial`); a tool call's `arguments` in it are always a dict,
re-parsed from the partial JSON after each fragment.

Tool-call arguments contract (what the loop sees in the final message):
- the argument text was a complete JSON object (or empty, meaning `{}`; or an object encoded
  twice; or one with a slip `yiemagent.types.json_text` forgives, as it does in a typed
  answer: stray closing braces or brackets after it, a comma before a closing brace or
  bracket, line breaks or tabs written as is inside a string, a string's backslashes not
  escaped, a Python literal with single quotes and True/None) → `arguments` is it and
  `partial_json` is `None`;
- otherwise (malformed JSON, a non-object such as `[1]`, text cut off by the token limit) →
  `arguments` is the best partial parse (a dict, possibly `{}`) and `partial_json` keeps the
  raw text received, so the tool pipeline can report "arguments are not valid JSON" with the
  text the model sent.

The partial parse is `jiter`'s partial mode (native code); an incomplete trailing string is
kept as far as it arrived. `parse_partial_json` and `parse_json_object` are the two readings
of argument text, also used by providers that assemble calls themselves.

Streamed text is kept in linear time: while a block is open, its text (a tool call's
`partial_json`) is held as the list of its deltas, joined when read and kept joined until
the next delta, so a reply of n characters costs O(n) however finely it is streamed (a
string grown by `+=` is copied whole on every delta). Readers see a plain `str` at any
moment; `end_block` makes the block a plain `TextContent` / `ThinkingContent` / `ToolCall`
again (the same object, so a reader that kept it sees its final state).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Mapping
from dataclasses import fields
from types import MemberDescriptorType
from typing import Any, ClassVar, Literal, cast

import jiter

from yiemagent.ai._text_tool_calls import (
    TextPiece,
    TextToolCallParser,
    ToolCallPiece,
)
from yiemagent.ai.models import calculate_cost
from yiemagent.types.json_text import (
    error_offset,
    infinite_number_at,
    read_model_json,
    read_strict_json,
)
from yiemagent.types.messages import (
    AssistantMessage,
    Cost,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)
from yiemagent.types.model import (
    AssistantMessageEventStream,
    AssistantStartEvent,
    DoneEvent,
    ErrorEvent,
    Model,
    ModelCost,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)

__all__ = [
    "DoneReason",
    "MessageBuilder",
    "complete_arguments",
    "parse_json_object",
    "parse_partial_json",
]

logger = logging.getLogger(__name__)

DoneReason = Literal["stop", "length", "toolUse"]
"""The stop reasons of a message that ended well (`DoneEvent.reason`)."""

_Block = TextContent | ThinkingContent | ToolCall

_ALWAYS_PARSE = 32 * 1024
"""Argument text up to this length is re-parsed after every fragment."""


class MessageBuilder:
    """Builds one assistant message from provider deltas and pushes its events.

    Single producer, used from the event loop thread that owns `stream`. At most one content
    block is open at a time: a delta of another kind closes the open block first. After
    `done` or `fail` the stream has ended and further calls are ignored by the stream.
    """

    __slots__ = (
        "_block",
        "_index",
        "_model",
        "_parsed",
        "_size",
        "_stream",
        "_text_calls",
        "message",
        "reprice",
    )

    def __init__(self, model: Model, stream: AssistantMessageEventStream) -> None:
        self._model = model
        self._stream = stream
        self._block: _Block | None = None
        self._index = -1
        self._size = 0
        self._parsed = 0
        self._text_calls: TextToolCallParser | None = None
        self.message = AssistantMessage(api=model.api, provider=model.provider, model=model.id)
        """The partial message; final once `done`/`fail` has been called."""
        self.reprice: Callable[[Cost, ModelCost], None] | None = None
        """Set by a provider whose API charges some tokens at a rate the model's prices do
        not hold (Anthropic's one-hour cache writes): called with the message's cost, once
        computed from the prices, and the prices; it changes the cost in place."""

    @property
    def open_block(self) -> _Block | None:
        """The block the next delta of its kind goes to; None when none is open."""
        return self._block

    def start(self) -> None:
        """Push the `start` event (call once, first)."""
        self._stream.push(AssistantStartEvent(self.message))

    def _open(self, block: _Block) -> int:
        if self._block is not None:
            self.end_block()
        self.message.content.append(block)
        self._block = block
        self._index = len(self.message.content) - 1
        return self._index

    def recover_text_tool_calls(self, tool_names: Collection[str] | None) -> None:
        """From now on, read tool calls the model writes into its text: text
        deltas go through a `TextToolCallParser`, its calls become tool-call blocks (with
        new ids) as soon as each is complete, the rest stays text.

        Args:
            tool_names: The tools offered (untagged JSON must name one); None: any name.
        """
        self._text_calls = TextToolCallParser(tool_names)

    def answer_follows(self) -> None:
        """The reasoning the model wrote into its text has been taken out as thinking (a
        `<think>…</think>` opening): the text from now on is the answer, whose tool calls
        (with `recover_text_tool_calls`) become blocks as soon as each is read."""
        if self._text_calls is not None:
            self._text_calls.answer_follows()

    def text_delta(self, text: str) -> None:
        """Append text, opening a text block when the open block is not one (with
        `recover_text_tool_calls`: the text's tool calls become tool-call blocks)."""
        if self._text_calls is None:
            self._append_text(text)
            return
        self._put_pieces(self._text_calls.feed(text))

    def _put_pieces(self, pieces: list[TextPiece | ToolCallPiece]) -> None:
        for piece in pieces:
            if isinstance(piece, TextPiece):
                self._append_text(piece.text)
            else:
                self.tool_call_start(f"call_{uuid.uuid4().hex[:24]}", piece.name)
                self.tool_call_delta(piece.arguments)
                self.end_block()

    def _append_text(self, text: str) -> None:
        block = self._block
        if not isinstance(block, TextContent):
            block = _GrowingText("")
            self._stream.push(TextStartEvent(self._open(block), self.message))
        if text:
            _append(block, _TEXT_SLOT, text)
            self._stream.push(TextDeltaEvent(self._index, text, self.message))

    def thinking_delta(self, text: str, signature: str | None = None) -> None:
        """Append thinking text (and a signature fragment, concatenated), opening a thinking
        block when the open block is not one."""
        block = self._block
        if not isinstance(block, ThinkingContent):
            block = _GrowingThinking("")
            self._stream.push(ThinkingStartEvent(self._open(block), self.message))
        if signature:
            block.signature = (block.signature or "") + signature
        if text:
            _append(block, _THINKING_SLOT, text)
            self._stream.push(ThinkingDeltaEvent(self._index, text, self.message))

    def tool_call_start(self, id: str, name: str) -> None:
        """Open a tool-call block with empty arguments.

        An `id` or `name` that is not text (a server that sent a number, `null` or a list:
        the SDKs pass the JSON through unchecked) is made text (`None`: ""), so the call
        reaches the tool pipeline as an unknown tool or with its id, and the message can be
        stored and loaded again; as a number it ended the run in a TypeError and a stored
        session skipped the message on resume."""
        call = _GrowingCall(id=_as_text(id), name=_as_text(name), arguments={}, partial_json="")
        index = self._open(call)  # closes the previous block first, with its own arguments
        self._size = 0
        self._parsed = 0
        self._stream.push(ToolCallStartEvent(index, self.message))

    def tool_call_delta(self, json_fragment: str) -> None:
        """Append argument JSON text to the open tool call and re-parse it (always a dict).

        Raises:
            RuntimeError: no tool call is open (a provider bug; providers turn it into `fail`).
        """
        call = self._block
        if not isinstance(call, ToolCall):
            raise RuntimeError("tool_call_delta without an open tool call")
        if not json_fragment:
            return
        _append(call, _PARTIAL_JSON_SLOT, json_fragment)
        size = self._size = self._size + len(json_fragment)
        # Re-parsing everything after every fragment is quadratic: past 32 KiB the partial
        # arguments are refreshed once the text has grown by a sixteenth (linear in all).
        if size <= _ALWAYS_PARSE or size - self._parsed >= size >> 4:
            call.arguments = parse_partial_json(call.partial_json or "")
            self._parsed = size
        self._stream.push(ToolCallDeltaEvent(self._index, json_fragment, self.message))

    def end_block(self) -> None:
        """Close the open block (no-op when none is open) and push its end event."""
        block = self._block
        if block is None:
            return
        self._block = None
        index = self._index
        raw = (block.partial_json or "") if isinstance(block, ToolCall) else ""
        if isinstance(block, _Growing):
            block.stop_growing()
        if isinstance(block, TextContent):
            self._stream.push(TextEndEvent(index, block, self.message))
        elif isinstance(block, ThinkingContent):
            self._stream.push(ThinkingEndEvent(index, block, self.message))
        else:
            parsed = _final_arguments(raw) if raw.strip() else {}
            if parsed is None:
                logger.debug("tool call %s: arguments are not a JSON object: %.200s", block.id, raw)
                block.arguments = parse_partial_json(raw)
                block.partial_json = raw
            else:
                block.arguments = parsed
                block.partial_json = None
            self._stream.push(ToolCallEndEvent(index, block, self.message))

    def set_usage(self, usage: Usage) -> None:
        """Replace the message's usage (token counts; cost is computed at the end)."""
        self.message.usage = usage

    def _flush_text_calls(self) -> None:
        if self._text_calls is not None:
            parser, self._text_calls = self._text_calls, None
            self._put_pieces(parser.finish())

    def _finish(self, stop_reason: StopReason) -> AssistantMessage:
        self._flush_text_calls()
        self.end_block()
        message = self.message
        message.stop_reason = stop_reason
        price = self._model.cost
        if price.input or price.output or price.cache_read or price.cache_write:
            calculate_cost(self._model, message.usage)
            if self.reprice is not None:
                self.reprice(message.usage.cost, price)
        return message

    def done(self, stop_reason: DoneReason) -> AssistantMessage:
        """Close open blocks, compute the cost, push `done`; returns the final message."""
        message = self._finish(stop_reason)
        self._stream.push(DoneEvent(stop_reason, message))
        return message

    def done_by_content(self, stop_reason: DoneReason) -> AssistantMessage:
        """`done`, with the stop reason following the content: "length" stays (a cut-off
        call is not run); otherwise "toolUse" exactly when the message holds a tool
        call, else "stop" (servers, proxies and `llm_call`s get it wrong both ways: "stop"
        with calls, "tool_calls" with none). Returns the final message."""
        self._flush_text_calls()
        if stop_reason != "length":
            has_calls = any(isinstance(block, ToolCall) for block in self.message.content)
            stop_reason = "toolUse" if has_calls else "stop"
        return self.done(stop_reason)

    def done_by_wire_reason(
        self, reason: str, table: Mapping[str, DoneReason], *, field: str
    ) -> AssistantMessage:
        """`done_by_content` with the stop reason `table` gives the API's own `reason` (the
        value of its `field`, such as "finish_reason"); an unknown one is taken as "stop"
        and logged. Returns the final message."""
        stop = table.get(reason)
        if stop is None:
            logger.info("unknown %s %r treated as stop", field, reason)
            stop = "stop"
        return self.done_by_content(stop)

    def fail(
        self,
        reason: Literal["error", "aborted"],
        error_message: str,
        *,
        error_type: str | None = None,
    ) -> AssistantMessage:
        """Close open blocks, set stop reason and `error_message`, push `error` (with the
        failure's class `error_type`, see `ErrorEvent`); returns the final message."""
        message = self._finish(reason)
        message.error_message = error_message or reason
        self._stream.push(ErrorEvent(reason, message, error_type=error_type))
        return message


# ── blocks while they grow ───────────────────────────────────────────────────

_TEXT_SLOT = cast(MemberDescriptorType, TextContent.__dict__["text"])
_THINKING_SLOT = cast(MemberDescriptorType, ThinkingContent.__dict__["thinking"])
_PARTIAL_JSON_SLOT = cast(MemberDescriptorType, ToolCall.__dict__["partial_json"])


def _append(block: object, slot: MemberDescriptorType, text: str) -> None:
    """Add `text` to the growing text `slot` of `block` (its parts: O(len(text))).

    Raises:
        TypeError: `text` is not a str (a provider or an edited cassette sent another
            value): refused here, as `+=` refused it, not at the join that reads it.
    """
    if not isinstance(text, str):
        raise TypeError(f"a streamed delta is text, not {type(text).__name__}")
    value = slot.__get__(block)
    if isinstance(value, list):
        value.append(text)
    else:
        slot.__set__(block, [value or "", text])


def _joined(block: object, slot: MemberDescriptorType) -> Any:
    """The text in `slot` of `block`, its parts joined once and kept joined."""
    value = slot.__get__(block)
    if isinstance(value, list):
        value = "".join(value)
        slot.__set__(block, value)
    return value


class _Growing:
    """A content block the builder is still appending to: its streamed text field holds the
    list of parts until read. Equal to, and shown as, the plain block it stands for."""

    __slots__ = ()
    _plain: ClassVar[type[_Block]]
    _slot: ClassVar[MemberDescriptorType]

    def stop_growing(self) -> None:
        """Join the parts and make this object the plain block class again (same layout)."""
        _joined(self, type(self)._slot)  # through the class: the slot's descriptor itself
        self.__class__ = self._plain  # type: ignore[assignment]

    def as_plain(self) -> _Block:
        """A plain block holding this one's current fields."""
        values = {f.name: getattr(self, f.name) for f in fields(self._plain)}
        return self._plain(**values)

    def __eq__(self, other: object) -> bool:
        return self.as_plain() == other

    def __repr__(self) -> str:
        return repr(self.as_plain())

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclasses it stands for


class _GrowingText(_Growing, TextContent):
    __slots__ = ()
    _plain = TextContent
    _slot = _TEXT_SLOT

    @property
    def text(self) -> str:
        return cast(str, _joined(self, _TEXT_SLOT))

    @text.setter
    def text(self, value: str) -> None:
        _TEXT_SLOT.__set__(self, value)


class _GrowingThinking(_Growing, ThinkingContent):
    __slots__ = ()
    _plain = ThinkingContent
    _slot = _THINKING_SLOT

    @property
    def thinking(self) -> str:
        return cast(str, _joined(self, _THINKING_SLOT))

    @thinking.setter
    def thinking(self, value: str) -> None:
        _THINKING_SLOT.__set__(self, value)


class _GrowingCall(_Growing, ToolCall):
    __slots__ = ()
    _plain = ToolCall
    _slot = _PARTIAL_JSON_SLOT

    @property
    def partial_json(self) -> str | None:
        return cast("str | None", _joined(self, _PARTIAL_JSON_SLOT))

    @partial_json.setter
    def partial_json(self, value: str | None) -> None:
        _PARTIAL_JSON_SLOT.__set__(self, value)


# ── argument text ────────────────────────────────────────────────────────────


def complete_arguments(call: ToolCall, raw: str) -> None:
    """Set the arguments of a tool call that is not the open block (a late fragment of a
    call already closed, or of one of several calls a server streams at once) from all of
    its argument text `raw`: the object when `raw` is one (`partial_json` None), else what
    parses so far (`partial_json` keeps `raw`). No event is pushed."""
    parsed = _final_arguments(raw)
    call.arguments = parsed if parsed is not None else parse_partial_json(raw)
    call.partial_json = None if parsed is not None else raw


def _final_arguments(raw: str) -> dict[str, Any] | None:
    """The object a finished call's argument text holds: `parse_json_object`'s (an object
    encoded twice too), else `read_model_json`'s, the reading a typed answer in text gets,
    which forgives the slips models make (a stray closer, a trailing comma, a Python
    literal, ...); None when neither reads an object."""
    parsed = parse_json_object(raw)
    if parsed is not None:
        return parsed
    try:
        value = read_model_json(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _as_text(value: object) -> str:
    """`value` as text: itself when it is a str, "" for None, else `str(value)`."""
    if isinstance(value, str):
        return value
    return "" if value is None else str(value)


def parse_partial_json(text: str) -> dict[str, Any]:
    """Parse a possibly incomplete JSON object.

    Args:
        text: JSON text, complete or cut off anywhere (a prefix of a JSON object).

    Returns:
        The object parsed so far (incomplete strings kept as received, incomplete numbers and
        literals left out; from a number too large for a float, `1e400`, on, nothing: JSON
        has no infinity). `{}` for empty text, a non-object value, or text that is not JSON
        at all. Never raises.
    """
    if not text:
        return {}
    data = text.encode(errors="replace")  # a lone surrogate becomes "?"
    huge = infinite_number_at(data)
    data = data if huge is None else data[:huge]
    try:
        value = jiter.from_json(data, partial_mode="trailing-strings", allow_inf_nan=False)
    except ValueError as exc:
        # Garbage after a good start (`{"a": 1, oops`): keep what came before the bad token.
        end = error_offset(data, str(exc))
        if end <= 0:
            return {}
        try:
            value = jiter.from_json(
                data[:end], partial_mode="trailing-strings", allow_inf_nan=False
            )
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def parse_json_object(text: str) -> dict[str, Any] | None:
    """Parse complete JSON text that must be an object; `None` when it is not (never raises).

    An object encoded twice (a JSON string holding the object's JSON text, as some models
    served over OpenAI-compatible APIs send their arguments) counts as the object. A number
    too large for a float (`1e400`) is refused, as `Infinity` is (`read_strict_json`).
    """
    if not text:
        return None
    try:
        value = read_strict_json(text.encode(errors="replace"))
        if isinstance(value, str) and value.lstrip().startswith("{"):
            value = read_strict_json(value.encode(errors="replace"))
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
