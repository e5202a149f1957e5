"""`stream_local`: the embedded model as a provider (DESIGN §7, §11, seed 002 §3).

One call: load the runtime (cached per process, on a worker thread), render the context to
chat messages, generate on a worker thread and turn the streamed chunks into builder events
on the event loop. With tools, the reply is JSON-schema-constrained (see `prompt`): a growing
answer streams as text deltas; each call (one, or several in a list) is emitted as toolcall_*
events once complete, and a reply with calls ends with stop reason "toolUse" (several calls in
one reply are one batch, R-11.1). A call identical to one already answered, or repeated in
the same reply, is never emitted (R-11.2). Without tools it is plain streamed text.

Bounded (R-11.3): every generation has a token cap (`max_tokens`, else the model's) and a
wall-clock deadline (`$YIEMAGENT_LOCAL_DEADLINE_S`, default `DEADLINE_S`); a reply cut by
either, or one caught repeating itself, ends with "length" (or "error" when nothing came at
all). Abort stops generation (the chunk callback tells llama.cpp to stop) and ends with
"aborted". Never raises: every failure ends the stream with an `error` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.local.prompt import (
    ANSWER_TEXT,
    answer_name,
    answered_calls,
    call_key,
    chat_messages,
    reply_schema,
    system_prompt,
    tool_rounds,
)
from yiemagent.ai.local.runtime import N_CTX_ENV, LocalRuntime, get_runtime
from yiemagent.ai.local.weights import local_spec
from yiemagent.ai.partial_json import parse_partial_json
from yiemagent.ai.sanitize import sanitize_surrogates
from yiemagent.ai.transform import transform_messages
from yiemagent.errors import ProviderError
from yiemagent.types.messages import Usage
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions
from yiemagent.types.output import OUTPUT_TOOL_LABEL
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import AgentTool

__all__ = ["DEADLINE_ENV", "DEADLINE_S", "stream_local"]

logger = logging.getLogger(__name__)

DEADLINE_ENV = "YIEMAGENT_LOCAL_DEADLINE_S"
DEADLINE_S = 300.0
"""Seconds one generation may take, prompt included, unless `$YIEMAGENT_LOCAL_DEADLINE_S`
says otherwise (2048 tokens at ~22 tokens/s on 2 idle cores take ~95 s; a machine shared
with other work is several times slower)."""
REPEAT_WINDOW = 240
"""A reply whose last `REPEAT_WINDOW` characters are one short piece (≤ 1/4 of the window)
over and over is stopped as runaway ("length")."""

_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_CLOSERS = "}] \t\r\n"
_tasks: set[asyncio.Task[None]] = set()
_DONE = object()
_ABORTED = object()


def stream_local(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one answer of the embedded model `model.id` (e.g. "qwen2.5-coder-0.5b").

    Must be called with a running event loop; returns at once and works in a task.
    """
    stream = AssistantMessageEventStream()
    task = asyncio.get_running_loop().create_task(
        _run(model, context, options or StreamOptions(), stream)
    )
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return stream


def deadline_s() -> float:
    """The wall-clock limit of one generation (seconds), from `$YIEMAGENT_LOCAL_DEADLINE_S`.

    Raises:
        ProviderError: the variable is set but not a positive number.
    """
    raw = os.environ.get(DEADLINE_ENV, "")
    if not raw:
        return DEADLINE_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ProviderError(f"${DEADLINE_ENV} must be a positive number of seconds, not {raw!r}")
    return value


@dataclass(slots=True)
class _Outcome:
    kind: Literal["text", "answer", "call", "repeat", "none"]
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    repeated: set[str] = field(default_factory=set)
    aborted: bool = False
    error: str | None = None
    received: bool = False


async def _run(
    model: Model, context: Context, options: StreamOptions, stream: AssistantMessageEventStream
) -> None:
    builder = MessageBuilder(model, stream)
    builder.start()
    signal = options.signal
    try:
        if signal is not None and signal.aborted:
            builder.fail("aborted", "Request was aborted")
            return
        spec = local_spec(model.id)
        limit = deadline_s()
        runtime = await get_runtime(spec)
        rounds = spec.max_tool_rounds
        await _generate_reply(runtime, builder, model, context, options, rounds, limit)
    except Exception as exc:  # the stream must end with an event, whatever happened
        logger.debug("local provider failed", exc_info=True)
        builder.fail("error", str(exc) or type(exc).__name__)
    finally:
        if not stream.done:
            builder.fail("error", "the local provider ended without a result")


def _model_label(model: Model) -> str:
    # "Qwen2.5-Coder-0.5B-Instruct Q4_K_M" → "Qwen2.5-Coder-0.5B-Instruct"
    return (model.name or model.id).split(" ")[0]


async def _generate_reply(
    runtime: LocalRuntime,
    builder: MessageBuilder,
    model: Model,
    context: Context,
    options: StreamOptions,
    max_tool_rounds: int,
    limit_s: float,
) -> None:
    signal = options.signal
    tools = list(context.tools or [])
    messages = transform_messages(context.messages, model)
    system = system_prompt(context.system_prompt, tools, _model_label(model))
    answer = answer_name(tools) if tools else ""
    # Lone surrogates (a file name decoded with surrogateescape) cannot reach the runtime.
    chat = sanitize_surrogates(chat_messages(system, messages, answer))
    answered = answered_calls(messages) if tools else set()
    request: dict[str, Any] = {
        "messages": chat,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": options.max_tokens or model.max_tokens,
        # Greedy by default: reproducible tool calls from a small model.
        "temperature": 0.0 if options.temperature is None else options.temperature,
        "cache_prompt": True,  # reuse the KV cache of the shared prefix
    }
    usage = Usage()
    # The round budget: after it only the answer is left (the tools stay in the system
    # prompt, so its cached prefix is reused).
    dropped = {t.name for t in tools} if tool_rounds(messages) >= max_tool_rounds else set()
    # A typed run (DESIGN §14, tool mode): its output tool is never dropped, and the free-text
    # answer is left out, so constrained decoding gives a value of the output type.
    output_tools = {t.name for t in tools if t.label == OUTPUT_TOOL_LABEL}
    dropped -= output_tools
    deadline = time.monotonic() + limit_s
    while True:
        decoder = _Decoder(builder, tools, answered) if tools else None
        if tools:
            schema = reply_schema(tools, drop=dropped, answer=not output_tools)
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema},
            }
        outcome = await _stream_chunks(runtime, request, builder, decoder, signal, deadline)
        _add_usage(usage, outcome.usage)
        if outcome.kind == "repeat" and outcome.finish_reason != "length":
            logger.info("local model repeated answered calls of %s; asking again", outcome.repeated)
            dropped |= outcome.repeated
            continue
        break
    builder.set_usage(usage)
    if outcome.aborted:
        builder.fail("aborted", "Request was aborted")
    elif outcome.error is not None:
        builder.fail("error", outcome.error)
    elif outcome.finish_reason == "length":
        builder.done("length")  # a cut-off call is not run
    elif outcome.kind == "call":
        builder.done("toolUse")
    elif outcome.kind in ("none", "repeat"):
        builder.fail("error", "the local model produced no answer and no tool call")
    else:
        builder.done("stop")


def _add_usage(total: Usage, raw: dict[str, Any]) -> None:
    prompt = int(raw.get("prompt_tokens") or 0)
    details = raw.get("prompt_tokens_details") or {}
    cached = int(details.get("cached_tokens") or 0) if isinstance(details, dict) else 0
    output = int(raw.get("completion_tokens") or 0)
    total.input += prompt - cached
    total.cache_read += cached
    total.output += output
    total.total_tokens += prompt + output


def runaway(text: str, window: int = REPEAT_WINDOW) -> bool:
    """Whether `text` ends in one piece of at most `window // 4` characters repeated to fill
    the last `window` characters (a small model stuck in a loop)."""
    if len(text) < window:
        return False
    tail = text[-window:]
    return any(tail[period:] == tail[:-period] for period in range(1, window // 4 + 1))


async def _stream_chunks(
    runtime: LocalRuntime,
    request: dict[str, Any],
    builder: MessageBuilder,
    decoder: _Decoder | None,
    signal: AbortSignal | None,
    deadline: float,
) -> _Outcome:
    """Generate on a worker thread; feed chunks to `decoder` (or as text) on this loop, until
    the end, an abort, an error, the `deadline` (`time.monotonic()`) or a runaway loop."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    stop = False

    def on_chunk(chunk: dict[str, Any]) -> bool:
        if stop or (signal is not None and signal.aborted):
            return True
        try:
            loop.call_soon_threadsafe(queue.put_nowait, chunk)
        except RuntimeError:  # the event loop is gone
            return True
        return False

    def work() -> Any:
        try:
            return runtime.chat(request, on_chunk)
        finally:
            with contextlib.suppress(RuntimeError):  # the event loop is gone
                loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    def on_abort(reason: str | None) -> None:
        # Wake the reader at once, not at llama.cpp's next token (slow on a busy machine).
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(queue.put_nowait, _ABORTED)

    detach = signal.add_listener(on_abort) if signal is not None else (lambda: None)
    future = loop.run_in_executor(None, work)
    outcome = _Outcome(kind="text" if decoder is None else "none")
    text = ""
    ended = False
    try:
        while True:
            remaining = deadline - time.monotonic()
            try:
                chunk = await asyncio.wait_for(queue.get(), max(remaining, 0.0))
            except TimeoutError:
                logger.info("local generation hit its deadline")
                outcome.finish_reason = "length"
                if not outcome.received:
                    outcome.error = "local model error: no reply before the deadline"
                break
            if chunk is _DONE:
                ended = True
                break
            if chunk is _ABORTED or (signal is not None and signal.aborted):
                break
            error = _chunk_error(chunk)
            if error is not None:
                outcome.error = error
                break
            if usage := chunk.get("usage"):
                outcome.usage = usage
            for choice in chunk.get("choices") or ():
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    outcome.received = True
                    text += delta
                    if decoder is None:
                        builder.text_delta(delta)
                    else:
                        decoder.feed(delta)
                if choice.get("finish_reason"):
                    outcome.finish_reason = choice["finish_reason"]
            if runaway(text):
                logger.info("local model repeats itself; reply stopped")
                outcome.finish_reason = "length"
                break
    finally:
        stop = True
        detach()
    if ended:
        result = await future
        if isinstance(result, dict) and outcome.error is None:
            outcome.error = _chunk_error(result)
    # Otherwise the worker stops at llama.cpp's next token; we do not wait for it.
    outcome.aborted = signal is not None and signal.aborted
    if decoder is not None and not outcome.aborted and outcome.error is None:
        outcome.kind, outcome.repeated = decoder.finish(outcome.finish_reason == "length")
    return outcome


def _chunk_error(chunk: Any) -> str | None:
    if not isinstance(chunk, dict) or "error" not in chunk:
        return None
    error = chunk["error"]
    message = error.get("message") if isinstance(error, dict) else error
    if "exceeds the available context size" in str(message):
        # llama.cpp's own advice ("try increasing it") does not say how (DESIGN §8).
        message = (
            f"{message}: shorten the prompt or set ${N_CTX_ENV} "
            f"(the model allows up to {CONTEXT_LIMIT} tokens)"
        )
    return f"local model error: {message}"


CONTEXT_LIMIT = 32_768
"""The embedded Qwen2.5-Coder models' trained context (tokens)."""


class _ItemScanner:
    """Splits a streamed reply into the raw text of its items: the reply itself when it is
    an object, each top-level element when it is a list."""

    __slots__ = ("_depth", "_escape", "_in_string", "_item_depth", "_start", "raw")

    def __init__(self) -> None:
        self.raw = ""
        self._depth = 0
        self._item_depth = -1  # 0: the reply is the item; 1: the list's elements are
        self._in_string = False
        self._escape = False
        self._start = -1

    def feed(self, text: str) -> list[str]:
        """Add `text`; returns the items completed by it, in order."""
        done: list[str] = []
        base = len(self.raw)
        self.raw += text
        for offset, char in enumerate(text):
            if self._in_string:
                if self._escape:
                    self._escape = False
                elif char == "\\":
                    self._escape = True
                elif char == '"':
                    self._in_string = False
                continue
            if char == '"':
                self._in_string = True
            elif char in "[{":
                if self._item_depth < 0:
                    self._item_depth = 1 if char == "[" else 0
                if char == "{" and self._depth == self._item_depth:
                    self._start = base + offset
                self._depth += 1
            elif char in "]}":
                self._depth -= 1
                if self._depth == self._item_depth and self._start >= 0:
                    done.append(self.raw[self._start : base + offset + 1])
                    self._start = -1
        return done

    @property
    def open_item(self) -> str:
        """The raw text of the item still being received ("" between items)."""
        return self.raw[self._start :] if self._start >= 0 else ""


class _Decoder:
    """Turns the streamed JSON reply into builder calls.

    The answer's `text` is emitted as text deltas as it grows. A call is opened as soon as
    its name is complete (the `"arguments"` key follows it) and its argument text is
    forwarded as it arrives, holding back trailing `}`/`]`/whitespace that may close the
    item. A call of a tool in `held` (tools with an answered call, and tools already called
    in this reply) is held back until complete, so a repeat of an answered call or of an
    earlier item is dropped without having been shown. A call cut off by the end of
    generation stays open with the arguments received (the message ends with it partial).
    """

    __slots__ = (
        "_answer",
        "_answer_name",
        "_answered",
        "_builder",
        "_emitted",
        "_held",
        "_items",
        "_open",
        "_repeats",
        "_sent",
        "_tools",
    )

    def __init__(
        self,
        builder: MessageBuilder,
        tools: Sequence[AgentTool],
        answered: set[tuple[str, str]],
    ) -> None:
        self._builder = builder
        self._tools = {tool.name for tool in tools}
        self._answer_name = answer_name(tools)
        self._answered = answered
        self._held = {name for name, _ in answered}
        self._items = _ItemScanner()
        self._emitted: set[tuple[str, str]] = set()
        self._answer: str | None = None
        self._repeats: set[str] = set()
        self._open: tuple[str, int] | None = None
        """The call being streamed: its name and where its arguments start in the item."""
        self._sent = 0

    def feed(self, text: str) -> None:
        for item in self._items.feed(text):
            self._complete(item)
        current = self._items.open_item
        if current:
            self._progress(current)

    def _progress(self, raw: str) -> None:
        if self._open is None:
            parsed = parse_partial_json(raw)
            name = parsed.get("name")
            if name == self._answer_name:
                self._emit_answer(raw)
                return
            match = _ARGUMENTS.search(raw)
            if match is None or name not in self._tools or name in self._held:
                return
            self._open = (name, match.end())
            self._sent = 0
            self._builder.tool_call_start(_new_id(), name)
        args = raw[self._open[1] :]
        end = len(args.rstrip(_CLOSERS))
        if end > self._sent:
            self._builder.tool_call_delta(args[self._sent : end])
            self._sent = end

    def _complete(self, raw: str) -> None:
        streamed, self._open = self._open, None
        try:
            item = json.loads(raw)
        except ValueError:
            item = None
        if not isinstance(item, dict):
            logger.debug("local reply item is not a JSON object: %.200s", raw)
            if streamed is not None:
                self._builder.end_block()
            return
        name = item.get("name")
        if name == self._answer_name:
            self._emit_answer(raw)
            return
        arguments = item.get("arguments")
        if not isinstance(name, str) or not isinstance(arguments, dict):
            if streamed is not None:
                self._builder.end_block()
            return
        key = call_key(name, arguments)
        if streamed is None:
            if key in self._answered:
                self._repeats.add(name)
                return
            if key in self._emitted:
                return
            self._builder.tool_call_start(_new_id(), name)
            self._builder.tool_call_delta(json.dumps(arguments, ensure_ascii=False))
        else:
            args = raw[streamed[1] :].rstrip()
            args = args[:-1].rstrip() if args.endswith("}") else args  # the item's own brace
            if len(args) > self._sent:
                self._builder.tool_call_delta(args[self._sent :])
        self._builder.end_block()
        self._emitted.add(key)
        self._held.add(name)

    def _emit_answer(self, raw: str) -> None:
        parsed = parse_partial_json(raw)
        if parsed.get("name") != self._answer_name:
            return
        answer = parsed.get(ANSWER_TEXT)
        if not isinstance(answer, str):
            return
        sent = self._answer or ""
        if self._answer is None:
            self._answer = ""
        # A half-received escape can make the partial string differ from the last one;
        # emit only when it extends what was already sent.
        if len(answer) > len(sent) and answer.startswith(sent):
            self._builder.text_delta(answer[len(sent) :])
            self._answer = answer

    def finish(self, cut: bool) -> tuple[Literal["answer", "call", "repeat", "none"], set[str]]:
        """Flush what is left (`cut`: generation ended early); returns the reply's kind and,
        when it held only repeats of answered calls, their tool names."""
        current = self._items.open_item
        if self._answer is not None:
            if current:
                self._emit_answer(current)
            return "answer", set()
        if cut and current:
            if self._open is not None:
                return "call", set()  # left open: the message ends with it partial
            parsed = parse_partial_json(current)
            match = _ARGUMENTS.search(current)
            if isinstance(parsed.get("name"), str) and match is not None:
                self._builder.tool_call_start(_new_id(), parsed["name"])
                self._builder.tool_call_delta(current[match.end() :].rstrip(_CLOSERS))
                return "call", set()
        if self._emitted:
            return "call", set()
        if self._repeats:
            return "repeat", set(self._repeats)
        return "none", set()


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
