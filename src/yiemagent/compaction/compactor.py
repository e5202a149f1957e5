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

Sizes are estimates in tokens: 4 characters a token, a CJK character (Chinese, Japanese,
Korean, full-width forms) a token of its own as tokenizers spend on it, plus a few tokens per
message. What the call sends beside the messages, its system prompt and the tools' schemas
(`yiemagent.loop.preparing_prompt`), counts against the threshold too, so many tools leave
less room for the transcript instead of pushing the request past the window.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.loop import count_spending, preparing_prompt
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

__all__ = ["CompactionInfo", "Compactor", "answer_tokens", "estimate_tokens"]

logger = logging.getLogger(__name__)

SUMMARY_SYSTEM_PROMPT = (
    "You summarise conversations between a user and an AI assistant so that the assistant "
    "can continue them. Write a short summary: the user's goals and questions, facts and "
    "numbers established (tool results included), decisions made, and what is still open. "
    "Plain text, no preamble."
)
_CHARS_PER_TOKEN = 4
_WIDE = re.compile(
    "[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f"
    "\uff00-\uff60\uffe0-\uffe6\U00020000-\U0003fffd]"
)
"""CJK characters (Hangul, CJK ideographs and punctuation, kana, full-width forms): about a
token each, where other text takes four characters to a token."""
_MESSAGE_TOKENS = 4
_IMAGE_TOKENS = 1200
_DOCUMENT_MIN_TOKENS = 1500
"""A PDF's least: a page of text."""
_DOCUMENT_BYTES_PER_TOKEN = 50
"""A PDF's size in tokens grows with its file (pages cost 1,500-3,000 tokens of text and
often an image each; a file's bytes are the one measure at hand without parsing it)."""
_ITEM_CHARS = 1200
_MAX_CACHED = 64
_SUMMARY_WRAPPER_CHARS = 140
"""The text `convert_to_llm` puts around a summary ("The conversation history before...")."""


def answer_tokens(model: Model, window: int) -> int:
    """The tokens a call may ask `model` to write (`Model.max_tokens`, the `max_tokens`
    a provider sends unless told less), at most half of `window`: room the compacted view
    must leave free, since an API refuses a request whose prompt and `max_tokens` together
    pass the window ("input length and `max_tokens` exceed context limit")."""
    return min(model.max_tokens, window // 2)


def estimate_tokens(messages: Sequence[AgentMessage]) -> int:
    """Estimated tokens of `messages` as a model sees them (4 characters a token, a CJK
    character a token, 4 tokens a message, 1,200 an image, a PDF a token per 50 bytes of
    its file and at least 1,500)."""
    return sum(_message_tokens(message) for message in messages)


def _chars(text: str) -> int:
    """`text`'s length in quarter tokens: a character each, a CJK character four."""
    if text.isascii():
        return len(text)
    return len(text) + (_CHARS_PER_TOKEN - 1) * len(_WIDE.findall(text))


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
    """Estimated tokens of what the model call being prepared sends beside its messages:
    the system prompt, and each tool's name, description and schema (0 outside a loop's
    `transform_context`)."""
    prompt = preparing_prompt()
    if prompt is None:
        return 0
    system, tools = prompt
    chars = _chars(system)
    for tool in tools:
        schema = json.dumps(tool.input_schema, default=str, ensure_ascii=False)
        chars += len(tool.name) + _chars(tool.description) + _chars(schema)
    return math.ceil(chars / _CHARS_PER_TOKEN) + _MESSAGE_TOKENS * len(tools)


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
    summarised_by_model: bool
    """False when the model could not write the summary and a plain note stands in."""


@dataclass(slots=True)
class _Covered:
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
        ValueError: a window under 256 tokens or a reserve that leaves no room.
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
        """Estimated tokens above which the view is compacted."""
        window = self.context_window
        if window < 256:
            raise ValueError(f"context_window must be at least 256 tokens, not {window}")
        reserve = self._reserve
        if reserve is None:
            reserve = max(window // 4, answer_tokens(self.model, window) + window // 16)
        if reserve >= window:
            raise ValueError(f"reserve_tokens {reserve} leaves no room in a {window} window")
        return window - reserve

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
        followed by the recent ones (a new list; `messages` is untouched)."""
        start, summary = self._view_start(messages)
        view = ([summary] if summary is not None else []) + messages[start:]
        before = estimate_tokens(view)
        budget = self.threshold - _beside_tokens()
        if before <= budget:
            return view
        keep = min(self.keep_recent_tokens, budget - self.summary_max_tokens)
        cut = self._cut(messages, start, keep)
        if cut is None or (signal is not None and signal.aborted):
            return view
        folded = messages[start:cut]
        text, by_model = await self._summarise(summary, folded, signal)
        if signal is not None and signal.aborted:
            # the run stops here: no summary was written, and a note remembered in its
            # place would stand for the older turns in every later call
            return view
        new = CompactionSummaryMessage(text, tokens_before=before)
        self._remember(messages, cut, new)
        result: list[AgentMessage] = [new, *messages[cut:]]
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

    # ── where the summary starts and ends ──────────────────────────────────

    def _view_start(
        self, messages: list[AgentMessage]
    ) -> tuple[int, CompactionSummaryMessage | None]:
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
        transcript = _render(folded)
        budget = max(1000, (self.context_window - self.summary_max_tokens - 200) * _CHARS_PER_TOKEN)
        if previous is not None:
            budget -= len(previous.summary)
        if len(transcript) > budget:  # keep the most recent part of what is folded
            transcript = "…" + transcript[-max(500, budget) :]
        parts = []
        if previous is not None:
            parts.append(f"Summary so far:\n{previous.summary}\n")
        parts.append(f"Conversation to add:\n{transcript}\n")
        parts.append("Write the updated summary.")
        context = Context(SUMMARY_SYSTEM_PROMPT, [UserMessage("\n".join(parts))], [])
        options = StreamOptions(signal=signal, max_tokens=self.summary_max_tokens, temperature=0)
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
            note = f"[{len(folded)} earlier messages were left out to fit the context window.]"
            return (f"{previous.summary}\n{note}" if previous is not None else note), False
        return text, True

    async def _complete(self, context: Context, options: StreamOptions) -> AssistantMessage:
        if self.stream_fn is not None:
            stream: Any = self.stream_fn(self.model, context, options)
            if inspect.isawaitable(stream):
                stream = await stream
            answer: AssistantMessage = await stream.result()
            return answer
        from yiemagent.ai import complete

        return await complete(self.model, context, options)


def _render(messages: Sequence[AgentMessage]) -> str:
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            lines.append(f"User: {_cut_text(_text(message))}")
        elif isinstance(message, AssistantMessage):
            text = _text(message)
            if text:
                lines.append(f"Assistant: {_cut_text(text)}")
            for call in message.tool_calls:
                args = json.dumps(call.arguments, ensure_ascii=False, default=str)
                lines.append(f"Assistant called {call.name}({_cut_text(args)})")
        elif isinstance(message, ToolResultMessage):
            kind = "error" if message.is_error else "result"
            lines.append(f"Tool {message.tool_name} {kind}: {_cut_text(_text(message))}")
        elif isinstance(message, (CompactionSummaryMessage, BranchSummaryMessage)):
            lines.append(f"Earlier summary: {_cut_text(message.summary)}")
        elif isinstance(message, BashExecutionMessage):
            lines.append(f"Ran `{message.command}`: {_cut_text(message.output)}")
    return "\n".join(lines)


def _text(message: AgentMessage) -> str:
    return "\n".join(b.text for b in _blocks(message) if isinstance(b, TextContent))


def _cut_text(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _ITEM_CHARS else flat[: _ITEM_CHARS - 1] + "…"
