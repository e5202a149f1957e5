"""`Compactor`: a `transform_context` that keeps a conversation inside the model's context
window (DESIGN §15).

Before each model call the loop hands the transform the whole transcript. While its
estimated size stays under `context_window - reserve_tokens`, it is returned as is. Past
that, the older turns are replaced by one `CompactionSummaryMessage` whose text the model
writes (given the previous summary, if any, and the turns being folded in), and the most
recent `keep_recent_tokens` of the transcript follow it unchanged. The cut is never between
an assistant message and its tool results, so calls and results stay in pairs. Only the model's
view changes: the agent's transcript (and a stored session) keeps
every message.

The summary is remembered (keyed by the conversation's first message and the last message it
covers), so it is written once per compaction, not once per model call; a later compaction
folds the previous summary and the next turns into a new one. When the model cannot write a
summary (an error, an empty answer), the older turns are still dropped and a plain note says
how many, so the conversation keeps going; a run aborted while its summary is written keeps
nothing of it, and the next call writes the summary. What a summary costs (`count_spending`) counts
against the `UsageLimits` of the run it is written for and is in that run's usage, on the
message of the model call it was written for (`AssistantMessage.compaction_usage`);
`usage` adds up what this compactor has spent.

At the window's edges: a fold whose summary request would pass the window is summarised in
parts that each fit, oldest first; a tool result that could never stay verbatim is shortened
in the view (start and end kept, a note of what was cut), and kept results further when
they alone pass the threshold; a message of the last turn that no compaction can fit raises
`ContextWindowExceeded` before any model call; images and PDFs of folded turns are named in
the summary request, and each folded message shows the summarizer as much as its window
gives it (`Compactor._item_chars`: start and end kept, a line of what was left out); a view
the provider refuses as longer than the window lowers the threshold to 3/4 and the loop
asks for the view again (`Compactor.context_overflowed`).

Sizes are estimates in tokens: 4 ASCII characters a token; beyond ASCII, as byte-level
tokenizers spend on scripts they have few merges for, a token per 3 bytes of UTF-8 (a CJK,
Thai or emoji character about a token, a Cyrillic, Arabic or Hebrew letter two thirds), a
Greek letter a token, an Indic character a token and a half; plus a few tokens per message.
What the call sends beside the messages, its system prompt and the tools
(`yiemagent.loop.preparing_prompt`; each tool as the function JSON a chat template renders,
at 3.5 characters a token, and a preamble on calling them), counts against the threshold
too, so many tools leave less room for the transcript instead of pushing the request past
the window.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.errors import ConfigError, YiemAgentError, exception_summary
from yiemagent.loop import count_spending, preparing_api_key, preparing_prompt
from yiemagent.types import (
    AbortSignal,
    AgentMessage,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Context,
    DocumentContent,
    ImageContent,
    Model,
    StreamFn,
    StreamOptions,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.text import cut_middle

__all__ = [
    "CompactionInfo",
    "Compactor",
    "ContextWindowExceeded",
    "answer_tokens",
    "estimate_tokens",
]

logger = logging.getLogger(__name__)

SUMMARY_SYSTEM_PROMPT = (
    "You summarise conversations between a user and an AI assistant so that the assistant "
    "can continue them. Write a short summary: the user's goals and questions, facts and "
    "numbers established (tool results included), decisions made, and what is still open. "
    "Plain text, no preamble."
)
_CHARS_PER_TOKEN = 4
_GREEK = re.compile("[\u0370-\u03ff]")
"""Greek letters: two bytes each, yet split about a token a letter (Qwen2.5: 79 tokens for
94 letters), where Cyrillic, Arabic and Hebrew take about three letters a token."""
_INDIC = re.compile("[\u0900-\u0dff]")
"""The scripts of India and Sri Lanka (Devanagari to Sinhala): three bytes each, split into
more than a token a character (Qwen2.5: 84 tokens for a Hindi sentence of 92)."""
_MESSAGE_TOKENS = 4
_IMAGE_TOKENS = 1200
_DOCUMENT_MIN_TOKENS = 1500
"""A PDF's least: a page of text."""
_DOCUMENT_BYTES_PER_TOKEN = 50
"""A PDF's size in tokens grows with its file (pages cost 1,500-3,000 tokens of text and
often an image each; a file's bytes are the one measure at hand without parsing it)."""
_ITEM_CHARS = 1200
"""The most characters of one message the embedded model is shown in a summary request:
its 8,192-token window holds a few such beside the summary, and its CPU reads a long
request slowly."""
_MAX_CACHED = 64
_SUMMARY_WRAPPER_CHARS = 140
"""The text `convert_to_llm` puts around a summary ("The conversation history before...")."""
_LEFT_OUT = re.compile(r"\n?\[(\d+) earlier messages were left out to fit the context window\.\]$")
"""The note that stands for turns no summary was written for, at the end of a summary."""
_TOOLS_PREAMBLE_TOKENS = 100
"""What a chat template or API adds when tools are sent, on how to call them (Qwen2.5's
template: about 75 tokens)."""
_RESULT_MIN_TOKENS = 32
"""The least a shortened tool result keeps: its note of what was cut and a few words."""
_REQUEST_FRAME_CHARS = 80
"""The words around the parts of a summary request ("Summary so far:", ...)."""
_LEAST_ROOM = 0.25
"""The least share of its first threshold a compactor keeps after the provider refused
its views as too long (`Compactor.context_overflowed`)."""


class ContextWindowExceeded(YiemAgentError, ValueError):
    """The last turn cannot fit the model's context window however much is compacted: a
    message of it (a prompt, the model's own call) with the system prompt and the tools
    leaves less than a sixteenth of the window for the answer. Raised by `Compactor`
    before any model call; the loop ends the run with it as an error message (stop reason
    "error"), and the transcript keeps every message."""


def answer_tokens(model: Model, window: int) -> int:
    """The tokens a call may ask `model` to write (`Model.max_tokens`, the `max_tokens`
    a provider sends unless told less), at most half of `window`: room the compacted view
    must leave free, since an API refuses a request whose prompt and `max_tokens` together
    pass the window ("input length and `max_tokens` exceed context limit")."""
    return min(model.max_tokens, window // 2)


def estimate_tokens(messages: Sequence[AgentMessage]) -> int:
    """Estimated tokens of `messages` as a model sees them (4 ASCII characters a token,
    other text a token per 3 bytes of UTF-8, a Greek letter a token, an Indic character a
    token and a half; 4 tokens a message, 1,200 an image, a PDF a token per 50 bytes of
    its file and at least 1,500)."""
    return sum(_message_tokens(message) for message in messages)


def _chars(text: str) -> int:
    """`text`'s size in quarter tokens: an ASCII character one (4 a token); any other
    four for every three bytes of its UTF-8, as byte-level tokenizers spend on scripts
    they have few merges for (a CJK, Devanagari or Thai character or an emoji, 3-4
    bytes: about a token; Cyrillic, Arabic or Hebrew, 2 bytes: two thirds), a Greek letter
    four, an Indic character six. The estimate must never fall short of what a byte-level
    tokenizer spends, or a compacted view could still pass the window (`docs/chat.md`)."""
    if text.isascii():
        return len(text)
    ascii_count = len(text.encode("ascii", "ignore"))
    other_bytes = len(text.encode("utf-8", "surrogatepass")) - ascii_count
    # a Greek letter 8/3 + 4/3 = a token; an Indic character 4 + 2 = a token and a half
    extra = _CHARS_PER_TOKEN * len(_GREEK.findall(text)) + 6 * len(_INDIC.findall(text))
    return ascii_count + math.ceil((_CHARS_PER_TOKEN * other_bytes + extra) / 3)


def _message_tokens(message: AgentMessage) -> int:
    chars = 0
    images = 0
    documents = 0
    for block in _blocks(message):
        if isinstance(block, TextContent):
            chars += _chars(block.text)
        elif isinstance(block, ThinkingContent):
            chars += _chars(block.thinking)
        elif isinstance(block, ToolCall):
            arguments = json.dumps(block.arguments, default=str, ensure_ascii=False)
            chars += len(block.name) + _chars(arguments)
        elif isinstance(block, ImageContent):
            images += 1
        elif isinstance(block, DocumentContent):
            pdf_bytes = len(block.data) * 3 // 4  # base64: 4 characters for 3 bytes
            documents += max(_DOCUMENT_MIN_TOKENS, pdf_bytes // _DOCUMENT_BYTES_PER_TOKEN)
    if isinstance(message, (CompactionSummaryMessage, BranchSummaryMessage)):
        chars += _chars(message.summary) + _SUMMARY_WRAPPER_CHARS
    elif isinstance(message, BashExecutionMessage):
        chars += _chars(message.command) + _chars(message.output)
    return (
        math.ceil(chars / _CHARS_PER_TOKEN) + _MESSAGE_TOKENS + images * _IMAGE_TOKENS + documents
    )


def _beside_tokens() -> int:
    """Estimated tokens of what the model call being prepared sends beside its messages
    (0 outside a loop's `transform_context`): the system prompt as a message, and, when
    there are tools, each as the function JSON a chat template or API renders it
    (`{"type": "function", "function": {name, description, parameters}}`) at 3.5
    characters a token, as JSON is denser than prose, and `_TOOLS_PREAMBLE_TOKENS` for
    the words on how to call them."""
    prompt = preparing_prompt()
    if prompt is None:
        return 0
    system, tools = prompt
    tokens = math.ceil(_chars(system) / _CHARS_PER_TOKEN) + _MESSAGE_TOKENS
    if tools:
        chars = 0
        for tool in tools:
            function = {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.input_schema,
            }
            declared = {"type": "function", "function": function}
            chars += _chars(json.dumps(declared, default=str, ensure_ascii=False))
        tokens += math.ceil(chars * 2 / 7) + _TOOLS_PREAMBLE_TOKENS  # quarter tokens / 3.5
    return tokens


def _blocks(message: AgentMessage) -> list[Any]:
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return [TextContent(content)]
    return list(content) if isinstance(content, list) else []


@dataclass(slots=True, frozen=True)
class CompactionInfo:
    """What one compaction did (passed to `on_compact`)."""

    turns: int
    """User turns folded into the summary."""
    messages: int
    """Transcript messages folded into the summary."""
    tokens_before: int
    """Estimated tokens of the model's view before, and after (`tokens_after`)."""
    tokens_after: int
    summary: CompactionSummaryMessage
    """The summary (or the plain note) that stands for the folded messages."""
    summarised_by_model: bool
    """False when the model could not write the summary and a plain note stands in."""


@dataclass(slots=True)
class _Covered:
    """What a summary stands for in a conversation: its first `count` messages, the last of
    them `last` (so a transcript cut back into them is seen as changed)."""

    count: int
    last: AgentMessage
    summary: CompactionSummaryMessage


class Compactor:
    """A `transform_context` (plain `(messages, signal)` coroutine) for any `Agent` or loop.

    Args:
        model: the model that writes the summaries (usually the agent's; assign `model` to
            follow a switch). Its `context_window` is the window unless `context_window` is
            given.
        stream_fn: how to call `model` (default `yiemagent.ai.stream`).
        context_window: the window in tokens (e.g. the embedded runtime's 8,192).
        reserve_tokens: tokens kept free for the answer (default a quarter of the window,
            or, when more, room for the longest answer a call may ask for
            (`Model.max_tokens`, at most half the window) and a sixteenth of the window
            beside it: the APIs refuse a request whose prompt and `max_tokens` together
            pass the window). The call's system prompt and tool schemas are counted as
            well, as the messages are, when the loop runs the compactor.
        keep_recent_tokens: about how much of the latest transcript stays verbatim (default
            a quarter of the window); at least the last turn stays.
        summary_max_tokens: output cap of a summary (default min(1024, window / 8)).
        on_compact: called with a `CompactionInfo` after each compaction.

    Raises:
        ConfigError: (a `ValueError`) a window under 256 tokens or a reserve that leaves no
            room.
    """

    def __init__(
        self,
        model: Model,
        *,
        stream_fn: StreamFn | None = None,
        context_window: int | None = None,
        reserve_tokens: int | None = None,
        keep_recent_tokens: int | None = None,
        summary_max_tokens: int | None = None,
        on_compact: Callable[[CompactionInfo], Any] | None = None,
    ) -> None:
        self.model = model
        self.stream_fn = stream_fn
        self.on_compact = on_compact
        self._window = context_window
        self._reserve = reserve_tokens
        self._keep = keep_recent_tokens
        self._summary_max = summary_max_tokens
        self.usage = Usage()
        """Tokens and cost spent writing summaries (added up)."""
        self.compactions = 0
        """How many times the view was compacted (summaries written, or notes in their place)."""
        self._room = 1.0
        self._covered: dict[int, _Covered] = {}
        self.threshold  # noqa: B018  (checks the sizes now)

    @property
    def context_window(self) -> int:
        """The window in tokens."""
        return self._window or self.model.context_window

    @context_window.setter
    def context_window(self, value: int | None) -> None:
        self._window = value

    @property
    def threshold(self) -> int:
        """Estimated tokens above which the view is compacted (less after the provider
        refused a view as too long: `context_overflowed`)."""
        window = self.context_window
        if window < 256:
            raise ConfigError(f"context_window must be at least 256 tokens, not {window}")
        reserve = self._reserve
        if reserve is None:
            reserve = max(window // 4, answer_tokens(self.model, window) + window // 16)
        if reserve >= window:
            raise ConfigError(f"reserve_tokens {reserve} leaves no room in a {window} window")
        return int((window - reserve) * self._room)

    def context_overflowed(self, error_message: str) -> bool:
        """The provider refused a view as longer than the model's context window: its
        tokenizer counts more than `estimate_tokens` does. From now on the threshold is 3/4
        of what it was, so the next view (the loop asks for one at once, and calls the model
        once more) is compacted further; the agent's transcript is untouched.

        Args:
            error_message: the provider's error, for the log.

        Returns:
            True, or False when the threshold is already down to a quarter of the first:
            an estimate that far off is no estimate, and the error stands.
        """
        if self._room <= _LEAST_ROOM:
            return False
        self._room = max(self._room * 3 / 4, _LEAST_ROOM)
        logger.info(
            "the provider refused a view as too long (%s); compacting to %d tokens",
            error_message,
            self.threshold,
        )
        return True

    @property
    def keep_recent_tokens(self) -> int:
        """Tokens of the latest transcript kept verbatim."""
        return self._keep if self._keep is not None else self.context_window // 4

    @property
    def summary_max_tokens(self) -> int:
        """Output cap of one summary, in tokens."""
        return self._summary_max or min(1024, self.context_window // 8)

    async def __call__(
        self, messages: list[AgentMessage], signal: AbortSignal | None = None
    ) -> list[AgentMessage]:
        """The model's view of `messages`: unchanged while it and what the call sends beside
        it (the system prompt and the tools' schemas, `preparing_prompt`, when the loop
        runs the compactor) stay under the threshold, else a summary of the older turns
        followed by the recent ones (a new list; `messages` is untouched). Past the
        threshold, a tool result larger than `keep_recent_tokens` (it could never stay
        verbatim) is shortened in the view to half of that (its start and end kept, a note
        says how much was cut), and the kept results are shortened further, to one common
        size, when they alone still pass the threshold.

        Raises:
            ContextWindowExceeded: a message of the last turn, with the system prompt and
                the tools, leaves less than a sixteenth of the window for the answer
                (raised before any model call).
        """
        start, summary = self._view_start(messages)
        view = ([summary] if summary is not None else []) + messages[start:]
        before = estimate_tokens(view)
        beside = _beside_tokens()
        budget = self.threshold - beside
        if before <= budget:
            return view
        keep = min(self.keep_recent_tokens, budget - self.summary_max_tokens)
        # the same positions as `messages`; a tool result that could never stay verbatim
        # is shortened to half of what stays, so that its turn's prompt can stay beside it
        most = max(keep, _RESULT_MIN_TOKENS)
        least = max(most // 2, _RESULT_MIN_TOKENS)
        shown = [m if _message_tokens(m) <= most else _shortened(m, least) for m in messages]
        view = ([summary] if summary is not None else []) + shown[start:]
        if estimate_tokens(view) <= budget:
            return view
        cut = self._cut(shown, start, keep)
        self._check_fits(shown, start, beside, summarised=cut is not None or summary is not None)
        if cut is None or (signal is not None and signal.aborted):
            return _fitted(view, budget)
        folded = messages[start:cut]
        text, by_model = await self._summarise(summary, folded, signal)
        if signal is not None and signal.aborted:
            # the run stops here: no summary was written, and a note remembered in its
            # place would stand for the older turns in every later call
            return view
        new = CompactionSummaryMessage(text, tokens_before=before)
        self._remember(messages, cut, new)
        result = _fitted([new, *shown[cut:]], budget)
        window = self.context_window
        over = estimate_tokens(result) + beside + window // 16 - window
        if over > 0:  # a long summary beside a large last turn: this view has less of it
            room = (_message_tokens(new) - over - _MESSAGE_TOKENS) * _CHARS_PER_TOKEN
            room -= _SUMMARY_WRAPPER_CHARS
            shorter = dataclasses.replace(new, summary=_fit_text(new.summary, max(room, 0)))
            result = [shorter, *result[1:]]
        self.compactions += 1
        info = CompactionInfo(
            turns=sum(1 for m in folded if isinstance(m, UserMessage)),
            messages=len(folded),
            tokens_before=before,
            tokens_after=estimate_tokens(result),
            summary=new,
            summarised_by_model=by_model,
        )
        if self.on_compact is not None:
            try:
                self.on_compact(info)
            except Exception:
                logger.exception("on_compact raised; the compaction stands")
        return result

    def _check_fits(
        self, messages: list[AgentMessage], start: int, beside: int, *, summarised: bool
    ) -> None:
        """Raise `ContextWindowExceeded` when the least view of `messages[start:]` (its
        last turn from its last message that is not a tool result, the results shortened
        to the least, a summary's least when `summarised`) and `beside` leave less than a
        sixteenth of the window for the answer: no compaction can make that request fit.
        (Between that and the full `answer_tokens` the request is sent: an API that is
        not sent `max_tokens`, or is sent less, may still answer.)"""
        last = len(messages)
        while last > start and isinstance(messages[last - 1], ToolResultMessage):
            last -= 1
        if last == start:
            return
        window = self.context_window
        largest = messages[last - 1]
        need = _message_tokens(largest) + _RESULT_MIN_TOKENS * (len(messages) - last)
        if summarised:  # a summary's frame, and a note of what was cut from it
            need += _SUMMARY_WRAPPER_CHARS // _CHARS_PER_TOKEN + _RESULT_MIN_TOKENS
        if need + beside + window // 16 <= window:
            return
        if beside + window // 16 > window:  # no message could fit: name what to cut
            prompt = preparing_prompt()
            tools = len(prompt[1]) if prompt is not None else 0
            if tools:
                what = f"the system prompt and the {tools} tools are about {beside:,} tokens"
                alone, cut = "alone they leave", "offer fewer tools"
            else:
                what = f"the system prompt is about {beside:,} tokens"
                alone, cut = "alone it leaves", "shorten it"
            raise ContextWindowExceeded(
                f"{what}: {alone} no room for an answer in the model's {window:,}-token "
                f"context window; {cut}, or use a model with a larger window"
            )
        article = "an" if largest.role[0] in "aeiou" else "a"
        what = "the last message" if last == len(messages) else f"{article} {largest.role} message"
        raise ContextWindowExceeded(
            f"{what} is about {_message_tokens(largest):,} tokens: with the system prompt "
            f"and tools ({beside:,}) it leaves no room for an answer in the model's "
            f"{window:,}-token context window; shorten it, or use a model with a larger window"
        )

    # ── where the summary starts and ends ──────────────────────────────────

    def _view_start(
        self, messages: list[AgentMessage]
    ) -> tuple[int, CompactionSummaryMessage | None]:
        """Where the view starts after the remembered summary of this conversation (keyed
        by its first message), and that summary; (0, None) when none covers `messages` as
        they are now."""
        if not messages:
            return 0, None
        covered = self._covered.get(id(messages[0]))
        if covered is None or len(messages) < covered.count:
            return 0, None
        if messages[covered.count - 1] is not covered.last:  # e.g. an undo cut into it
            return 0, None
        return covered.count, covered.summary

    def _remember(
        self, messages: list[AgentMessage], cut: int, summary: CompactionSummaryMessage
    ) -> None:
        """Keep `summary` as standing for `messages[:cut]`, the oldest remembered
        conversation forgotten past `_MAX_CACHED`."""
        if len(self._covered) >= _MAX_CACHED:
            self._covered.pop(next(iter(self._covered)))
        self._covered[id(messages[0])] = _Covered(cut, messages[cut - 1], summary)

    def _cut(self, messages: list[AgentMessage], start: int, keep: int) -> int | None:
        """The first kept message: the earliest place after `start` where the rest fits in
        `keep` tokens, never a tool result (its call stays with it); else the last such
        place. None when there is nothing older than the last turn to fold."""
        suffix = 0
        best: int | None = None
        last_allowed: int | None = None
        for index in range(len(messages) - 1, start, -1):
            suffix += _message_tokens(messages[index])
            if isinstance(messages[index], ToolResultMessage):
                continue
            if last_allowed is None:
                last_allowed = index
            if suffix <= keep:
                best = index
            else:
                break
        return best if best is not None else last_allowed

    # ── the summary ────────────────────────────────────────────────────────

    async def _summarise(
        self,
        previous: CompactionSummaryMessage | None,
        folded: list[AgentMessage],
        signal: AbortSignal | None,
    ) -> tuple[str, bool]:
        """The summary of `previous` and `folded`, and whether the model wrote it. A fold
        whose request would pass the window is summarised in parts that each fit, the
        oldest first, each part's summary carried into the next, so nothing of it is left
        out unsaid; a part the model cannot summarise ends it with a note of how many
        messages were left out."""
        text = previous.summary if previous is not None else None
        for part, count, rest in self._parts(previous, folded):
            parts = []
            if text is not None:
                parts.append(f"Summary so far:\n{text}\n")
            parts.append(f"Conversation to add:\n{part}\n")
            parts.append("Write the updated summary.")
            written = await self._write(parts, signal)
            if written is None:  # one note, however many summaries failed before
                left = count + rest
                noted = _LEFT_OUT.search(text or "")
                if text is not None and noted is not None:
                    text, left = text[: noted.start()], left + int(noted.group(1))
                note = f"[{left} earlier messages were left out to fit the context window.]"
                return (f"{text}\n{note}" if text else note), False
            text = written
            if signal is not None and signal.aborted:
                break  # the caller keeps nothing of it
        return text or "", True

    def _parts(
        self, previous: CompactionSummaryMessage | None, folded: list[AgentMessage]
    ) -> list[tuple[str, int, int]]:
        """`folded` rendered in parts that each fit one summary request beside the system
        prompt, the summary so far and the answer: (text, messages in it, messages after)."""
        summary_chars = self.summary_max_tokens * _CHARS_PER_TOKEN
        room = (
            (self.context_window - self.summary_max_tokens - 2 * _MESSAGE_TOKENS) * _CHARS_PER_TOKEN
            - _chars(SUMMARY_SYSTEM_PROMPT)
            - max(summary_chars, _chars(previous.summary) if previous is not None else 0)
            - _REQUEST_FRAME_CHARS
        )
        room = max(room, _REQUEST_FRAME_CHARS)
        parts: list[tuple[str, int]] = []
        lines: list[str] = []
        used = count = 0
        for message in folded:
            block = _fit_text(_render([message], self._item_chars()), room)
            size = _chars(block) + 1
            if lines and used + size > room:
                parts.append(("\n".join(lines), count))
                lines, used, count = [], 0, 0
            if block:
                lines.append(block)
                used += size
            count += 1
        if count:
            parts.append(("\n".join(lines), count))
        after = len(folded)
        result = []
        for text, count in parts:
            after -= count
            result.append((text, count, after))
        return result

    def _item_chars(self) -> int:
        """The most characters of one message (a prompt, an answer, a call's arguments, a
        tool result) a summary request shows: `_ITEM_CHARS` for the embedded model; for any
        other, as many as the window has tokens (a quarter of it), and never fewer. Cut
        shorter, a summarizer with room to read a tool result summarises its first lines,
        and what the result established past them is gone from the conversation."""
        if self.model.api == "local":
            return _ITEM_CHARS
        return max(_ITEM_CHARS, self.context_window)

    async def _write(self, parts: list[str], signal: AbortSignal | None) -> str | None:
        """The model's summary for the request `parts`, or None when it wrote none (an
        error, an abort, an empty answer). What it spent is counted either way."""
        context = Context(SUMMARY_SYSTEM_PROMPT, [UserMessage("\n".join(parts))], [])
        try:
            # The key is the one the run's config gives; its `get_api_key` may fail as the
            # request may.
            api_key = await preparing_api_key(self.model.provider)
        except Exception as exc:
            failed = f"get_api_key({self.model.provider!r}) failed: {exception_summary(exc)}"
            reply = AssistantMessage(stop_reason="error", error_message=failed)
        else:
            # Sent once and never again as it is: a cache write would be paid for (more
            # than the input's price) and never read.
            options = StreamOptions(
                signal=signal,
                api_key=api_key,
                max_tokens=self.summary_max_tokens,
                temperature=0,
                cache_retention="none",
            )
            try:
                reply = await self._complete(context, options)
            except Exception as exc:
                reply = AssistantMessage(stop_reason="error", error_message=str(exc))
        self.usage.add(reply.usage)
        count_spending(reply.usage)  # against the run's usage limits, as its calls are
        text = "".join(b.text for b in reply.content if isinstance(b, TextContent)).strip()
        if reply.stop_reason in ("error", "aborted") or not text:
            reason = reply.error_message or "the model wrote no summary"
            logger.warning("compaction: no summary (%s); older turns are dropped", reason)
            return None
        # a model (or stream_fn) that wrote past the cap: the summary keeps to it
        return _fit_text(text, self.summary_max_tokens * _CHARS_PER_TOKEN)

    async def _complete(self, context: Context, options: StreamOptions) -> AssistantMessage:
        if self.stream_fn is not None:
            stream = await maybe_await(self.stream_fn(self.model, context, options))
            answer: AssistantMessage = await stream.result()
            return answer
        from yiemagent.ai import complete

        return await complete(self.model, context, options)


def _render(messages: Sequence[AgentMessage], item_chars: int) -> str:
    """`messages` as the lines of a summary request, each message's text shortened to
    `item_chars` characters (`_cut_text`)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"User: {_cut_text(_text(message), item_chars)}{_media(message)}")
        elif isinstance(message, AssistantMessage):
            text = _text(message)
            if text:
                lines.append(f"Assistant: {_cut_text(text, item_chars)}")
            for call in message.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False, default=str)
                lines.append(f"Assistant called {call.name}({_cut_text(args, item_chars)})")
        elif isinstance(message, ToolResultMessage):
            kind = "error" if message.is_error else "result"
            text = _cut_text(_text(message), item_chars)
            lines.append(f"Tool {message.tool_name} {kind}: {text}{_media(message)}")
        elif isinstance(message, (CompactionSummaryMessage, BranchSummaryMessage)):
            # whole, as the summary so far is: it holds what earlier turns established
            lines.append(f"Earlier summary: {message.summary}")
        elif isinstance(message, BashExecutionMessage):
            lines.append(f"Ran `{message.command}`: {_cut_text(message.output, item_chars)}")
    return "\n".join(lines)


def _media(message: AgentMessage) -> str:
    """A mark for each image (`[image]`) and PDF (`[PDF]`) of `message`, each after a
    space: the summary request names what it cannot show."""
    names = {ImageContent: " [image]", DocumentContent: " [PDF]"}
    return "".join(names.get(type(b), "") for b in _blocks(message))


def _text(message: AgentMessage) -> str:
    return "\n".join(b.text for b in _blocks(message) if isinstance(b, TextContent))


def _cut_text(text: str, limit: int) -> str:
    """`text` on one line (its whitespace runs made single spaces: a message's own lines
    cannot pass for the request's), cut to `limit` characters in its middle (`cut_middle`)."""
    return cut_middle(" ".join(text.split()), limit)


def _fit_text(text: str, room: int) -> str:
    """`text` in at most `room` quarter tokens (`_chars`): its start and its end (a third)
    and, between them, a note of how many characters were cut."""
    size = _chars(text)
    if size <= room:
        return text
    keep = room * len(text) // size
    while True:
        tail = keep // 3
        note = f"\n[… {len(text) - keep:,} characters cut to fit the context window …]\n"
        fitted = text[: keep - tail] + note + text[len(text) - tail :]
        if keep == 0 or _chars(fitted) <= room:
            return fitted
        keep = min(keep - 1, keep * 9 // 10)


def _shortened(message: AgentMessage, limit: int) -> AgentMessage:
    """`message` itself, or, for a tool result over `limit` tokens, a copy whose text is
    cut to fit (`_fit_text`) and whose images and PDFs are named instead of sent."""
    if not isinstance(message, ToolResultMessage) or _message_tokens(message) <= limit:
        return message
    media = _media(message).strip()
    text = _text(message) + (f"\n[left out to fit the context window: {media}]" if media else "")
    room = max(limit - _MESSAGE_TOKENS, 1) * _CHARS_PER_TOKEN
    return dataclasses.replace(message, content=[TextContent(_fit_text(text, room))])


def _fitted(view: list[AgentMessage], budget: int) -> list[AgentMessage]:
    """`view`, its tool results shortened (`_shortened`) to one common limit, the
    largest first, so that the view fits `budget` tokens where they can."""
    over = estimate_tokens(view) - budget
    sizes = sorted(_message_tokens(m) for m in view if isinstance(m, ToolResultMessage))
    if over <= 0 or not sizes:
        return view
    room = sum(sizes) - over
    limit = sizes[-1]
    for index, size in enumerate(sizes):
        share = room // (len(sizes) - index)
        if size > share:
            limit = share
            break
        room -= size
    limit = max(limit, _RESULT_MIN_TOKENS)
    return [_shortened(m, limit) for m in view]
