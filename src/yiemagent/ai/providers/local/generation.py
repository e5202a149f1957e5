"""One generation of the embedded model on a worker thread (DESIGN §11):
`stream_chunks` feeds llama.cpp's streamed chunks to a reply decoder (or the builder, as
text) on the event loop, bounded by a deadline, an abort and the runaway checks;
`free_name` reads the tool name the model writes with no grammar. The reply's policy (what
is asked, kept or dropped) is `provider`'s."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any, Literal

from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.providers.local.decoder import Decoder
from yiemagent.ai.providers.local.prompt import NAME_PREFIX
from yiemagent.ai.providers.local.runtime import N_CTX_ENV, ChatRuntime
from yiemagent.types.model import StreamOptions

__all__ = [
    "CONTEXT_LIMIT",
    "MAX_ITEM_CHARS",
    "NAME_TOKENS",
    "RAMBLE_WORDS",
    "REPEATS",
    "REPEAT_WINDOW",
    "Outcome",
    "chunk_error",
    "free_name",
    "rambling",
    "runaway",
    "stream_chunks",
]

logger = logging.getLogger(__name__)

REPEAT_WINDOW = 480
"""A reply whose last `REPEAT_WINDOW` characters are one piece (at most a `REPEATS`-th of
the window) over and over is stopped as runaway ("length"): the 0.5B model loops on
sentences of ~70 characters ("It is the only planet in our solar system that is not…")."""
REPEATS = 3

RAMBLE_WORDS = 48
"""A reply whose last `RAMBLE_WORDS` words are mostly (`RAMBLE_SHARE` of their runs of
`RAMBLE_RUN` words) runs that it already wrote before them is stopped as runaway ("length"):
the 0.5B also goes round in near-repeats that `runaway` misses, a made-up forecast of two
sentences alternating with small changes ("…with a mild breeze and a pleasant air. The
temperature is expected to be around 24°C, with a mild breeze…") until the deadline."""
RAMBLE_RUN = 5
RAMBLE_SHARE = 0.8
_WORD = re.compile(r"\w+")
_RAMBLE_STEP = 64
"""`rambling` is checked each time the reply has grown by this many characters."""

MAX_ITEM_CHARS = 4000
"""A call (one item of a reply) longer than this is stopped as runaway ("length"): the 0.5B
can write an arithmetic expression that never ends (`10 + 20 * 3 / 4 - 5 + 6 * 7 ...`)."""
_DONE = object()
_ABORTED = object()


@dataclass(slots=True)
class Outcome:
    """How one generation ended, and what it was (`ReplyDecoder.finish`)."""

    kind: Literal["text", "answer", "call", "repeat", "none"]
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    repeated: set[str] = field(default_factory=set)
    aborted: bool = False
    error: str | None = None
    received: bool = False


def runaway(text: str, window: int = REPEAT_WINDOW) -> bool:
    """Whether `text` ends in one piece of at most `window // REPEATS` characters repeated to
    fill the last `window` characters (a small model stuck in a loop). The numbers that
    begin list items are not told apart: "1. call Anna", "2. call Anna", … is one item
    counted on until the token cap, while "1. 1", "2. 4", "3. 9" differs by its values."""
    if len(text) < window:
        return False
    tail = _ITEM_NUMBER.sub(r"\1#", text[-2 * window :])[-window:]
    return any(tail[period:] == tail[:-period] for period in range(1, window // REPEATS + 1))


_ITEM_NUMBER = re.compile(r"((?:\n|\\n)[ \t]*)\d{1,4}(?=[.)] )")
"""The number of a list item at the start of a line, also in a JSON string (`\\n`)."""


def rambling(text: str) -> bool:
    """Whether `text` ends in near-repeats: of the runs of `RAMBLE_RUN` words (case folded)
    in its last `RAMBLE_WORDS` words, at least `RAMBLE_SHARE` already occur, whole, in the
    words before them (which must be at least as many). A list or a report of several
    results repeats its template, not most of its runs: the varying names and numbers break
    them."""
    words = _WORD.findall(text.casefold())
    start = len(words) - RAMBLE_WORDS
    if start < RAMBLE_WORDS:
        return False
    n = RAMBLE_RUN
    before = {tuple(words[i : i + n]) for i in range(start - n + 1)}
    runs = [tuple(words[i : i + n]) for i in range(start, len(words) - n + 1)]
    return sum(run in before for run in runs) >= RAMBLE_SHARE * len(runs)


async def stream_chunks(
    runtime: ChatRuntime,
    request: dict[str, Any],
    builder: MessageBuilder,
    decoder: Decoder | None,
    options: StreamOptions,
    deadline: float,
) -> Outcome:
    """Generate on a worker thread; feed chunks to `decoder` (or as text) on this loop, until
    the end, an abort, an error, the `deadline` (`time.monotonic()`) or a runaway loop. Every
    chunk (a prompt batch read, a token) calls `options.keep_alive`."""
    signal = options.signal
    keep_alive = options.keep_alive or _nothing
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
    outcome = Outcome(kind="text" if decoder is None else "none")
    text = ""
    checked = 0  # how much of `text` `rambling` has seen
    ended = False
    read: dict[str, Any] = {}  # the prompt as llama.cpp last reported reading it
    tokens = 0  # content chunks: one token each
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
            keep_alive()
            error = chunk_error(chunk)
            if error is not None:
                outcome.error = error
                break
            if usage := chunk.get("usage"):
                outcome.usage = usage
            if isinstance(progress := chunk.get("prompt_progress"), dict):
                read = progress
            for choice in chunk.get("choices") or ():
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    tokens += 1
                    outcome.received = True
                    text += delta
                    if decoder is None:
                        builder.text_delta(delta)
                    else:
                        decoder.feed(delta)
                if choice.get("finish_reason"):
                    outcome.finish_reason = choice["finish_reason"]
            rambles = False
            if len(text) - checked >= _RAMBLE_STEP:
                checked = len(text)
                rambles = rambling(text)
            if (
                rambles
                or runaway(text)
                or (decoder is not None and decoder.open_chars > MAX_ITEM_CHARS)
            ):
                logger.info("local model repeats itself or writes a runaway call; stopped")
                outcome.finish_reason = "length"
                break
            if decoder is not None and decoder.hopeless:
                outcome.finish_reason = None  # the call is dropped and asked again
                break
    finally:
        stop = True
        detach()
    if not outcome.usage and (read or tokens):
        # Stopped before llama.cpp's closing usage chunk (deadline, a loop, an abort): what
        # was spent is what it reported reading and the tokens that came, not nothing.
        outcome.usage = _spent(read, tokens)
    logger.debug("local reply (%s): %.500s", outcome.finish_reason, text)
    if ended:
        result = await future
        if isinstance(result, dict) and outcome.error is None:
            outcome.error = chunk_error(result)
    # Otherwise the worker stops at llama.cpp's next token; we do not wait for it.
    outcome.aborted = signal is not None and signal.aborted
    if decoder is not None and not outcome.aborted and outcome.error is None:
        outcome.kind, outcome.repeated = decoder.finish(outcome.finish_reason == "length")
    return outcome


def _spent(progress: dict[str, Any], tokens: int) -> dict[str, Any]:
    """A Chat Completions `usage` for a generation stopped before llama.cpp reported one:
    the prompt's `total` and `cache` tokens from its last `prompt_progress` report (none:
    0), and `tokens` generated (one a content chunk)."""
    total = progress.get("total")
    cache = progress.get("cache")
    return {
        "prompt_tokens": total if isinstance(total, int) else 0,
        "completion_tokens": tokens,
        "prompt_tokens_details": {"cached_tokens": cache if isinstance(cache, int) else 0},
    }


def _nothing() -> None:
    pass


NAME_TOKENS = 24
"""At most this many tokens are generated for `_free_name`."""


async def free_name(
    runtime: ChatRuntime,
    request: dict[str, Any],
    options: StreamOptions,
    deadline: float,
    *,
    prefix: str = NAME_PREFIX,
) -> str | None:
    """The tool name the model writes after `prefix` (how a call starts in its reply
    format: `NAME_PREFIX`, or `native.NATIVE_NAME_PREFIX`) with no grammar holding it to the
    tools (at most `NAME_TOKENS` tokens; its prompt is the reply's, so the KV cache serves
    the reply after it), or None when it writes no whole name by then, the `deadline`
    (`time.monotonic()`) or an abort. Nothing of it reaches the caller's stream."""
    signal = options.signal
    keep_alive = options.keep_alive or _nothing
    loop = asyncio.get_running_loop()
    probe = {k: v for k, v in request.items() if k not in ("response_format", "grammar")}
    probe["messages"] = [*request["messages"], {"role": "assistant", "content": prefix}]
    probe["max_tokens"] = NAME_TOKENS
    text: list[str] = []
    stop = False

    def on_chunk(chunk: dict[str, Any]) -> bool:
        with contextlib.suppress(RuntimeError):  # the event loop is gone
            loop.call_soon_threadsafe(keep_alive)
        for choice in chunk.get("choices") or ():
            text.append((choice.get("delta") or {}).get("content") or "")
        return stop or '"' in "".join(text) or (signal is not None and signal.aborted)

    try:
        result = await asyncio.wait_for(
            loop.run_in_executor(None, runtime.chat, probe, on_chunk),
            max(deadline - time.monotonic(), 0.0),
        )
    except Exception:  # a deadline or a runtime fault: the reply goes on without the name
        logger.debug("local free name failed", exc_info=True)
        return None
    finally:
        stop = True
    written = "".join(text)
    if chunk_error(result) is not None or '"' not in written:
        return None
    return written.split('"', 1)[0]


def chunk_error(chunk: Any) -> str | None:
    """The runtime's error message in a streamed chunk or final response (`{"error": …}`,
    a dict with a `message` or the text itself), as "local model error: …"; None when the
    chunk holds no error."""
    if not isinstance(chunk, dict) or "error" not in chunk:
        return None
    error = chunk["error"]
    message = error.get("message") if isinstance(error, dict) else error
    if "exceeds the available context size" in str(message):
        # llama.cpp's own advice ("try increasing it") does not say how.
        message = (
            f"{message}: shorten the prompt or set ${N_CTX_ENV} "
            f"(the model allows up to {CONTEXT_LIMIT} tokens)"
        )
    return f"local model error: {message}"


CONTEXT_LIMIT = 32_768
"""The embedded Qwen2.5-Coder models' trained context (tokens)."""
