"""`stream_local`: the embedded model as a provider (DESIGN §7, seed 002 §3).

One call: load the runtime (cached per process, on a worker thread), render the context to
chat messages, generate on a worker thread and turn the streamed chunks into builder events
on the event loop. With tools, the reply is JSON-schema-constrained (see `prompt`): a growing
`answer` string streams as text deltas; a call streams as toolcall_* events and ends the
message with stop reason "toolUse". Without tools it is plain streamed text. Abort stops
generation (the chunk callback tells llama.cpp to stop) and ends with "aborted". Never
raises: every failure ends the stream with an `error` event.
"""

from __future__ import annotations

import asyncio
import logging
import re
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
from yiemagent.types.messages import Usage
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import AgentTool

__all__ = ["stream_local"]

logger = logging.getLogger(__name__)

_ARGUMENTS = re.compile(r'"arguments"\s*:\s*')
_CLOSERS = "} \t\r\n"
_tasks: set[asyncio.Task[None]] = set()
_DONE = object()


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


@dataclass(slots=True)
class _Outcome:
    kind: Literal["text", "answer", "call", "repeat", "none"]
    finish_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    repeated: str = ""
    aborted: bool = False
    error: str | None = None


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
        runtime = await get_runtime(spec)
        await _generate_reply(runtime, builder, model, context, options, spec.max_tool_rounds)
    except Exception as exc:  # the stream must end with an event, whatever happened
        logger.debug("local provider failed", exc_info=True)
        builder.fail("error", str(exc) or type(exc).__name__)
    finally:
        if not stream.done:
            builder.fail("error", "the local provider ended without a result")


async def _generate_reply(
    runtime: LocalRuntime,
    builder: MessageBuilder,
    model: Model,
    context: Context,
    options: StreamOptions,
    max_tool_rounds: int,
) -> None:
    signal = options.signal
    tools = list(context.tools or [])
    messages = transform_messages(context.messages, model)
    # Lone surrogates (a file name decoded with surrogateescape) cannot reach the runtime.
    chat = sanitize_surrogates(chat_messages(system_prompt(context.system_prompt, tools), messages))
    answered = answered_calls(messages) if tools else set()
    held = {name for name, _ in answered}
    request: dict[str, Any] = {
        "messages": chat,
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": options.max_tokens or model.max_tokens,
        # Greedy by default: reproducible tool calls from a small model.
        "temperature": 0.0 if options.temperature is None else options.temperature,
    }
    usage = Usage()
    # Enough tool rounds for this prompt: only the answer branch is left (the tools stay in
    # the system prompt, so its cached prefix is reused).
    dropped = {t.name for t in tools} if tool_rounds(messages) >= max_tool_rounds else set()
    while True:
        decoder = _Decoder(builder, tools, answered, held - dropped) if tools else None
        if tools:
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": reply_schema(tools, drop=dropped)},
            }
        outcome = await _stream_chunks(runtime, request, builder, decoder, signal)
        _add_usage(usage, outcome.usage)
        if outcome.kind == "repeat" and not outcome.aborted and outcome.error is None:
            logger.info("local model repeated an answered %s call; asking again", outcome.repeated)
            dropped.add(outcome.repeated)
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
    elif outcome.kind == "none":
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


async def _stream_chunks(
    runtime: LocalRuntime,
    request: dict[str, Any],
    builder: MessageBuilder,
    decoder: _Decoder | None,
    signal: AbortSignal | None,
) -> _Outcome:
    """Generate on a worker thread; feed chunks to `decoder` (or as text) on this loop."""
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
            loop.call_soon_threadsafe(queue.put_nowait, _DONE)

    future = loop.run_in_executor(None, work)
    outcome = _Outcome(kind="text" if decoder is None else "none")
    try:
        while (chunk := await queue.get()) is not _DONE:
            if signal is not None and signal.aborted:
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
                    if decoder is None:
                        builder.text_delta(delta)
                    else:
                        decoder.feed(delta)
                if choice.get("finish_reason"):
                    outcome.finish_reason = choice["finish_reason"]
    finally:
        stop = True
    result = await future
    if isinstance(result, dict) and outcome.error is None:
        outcome.error = _chunk_error(result)
    outcome.aborted = signal is not None and signal.aborted
    if decoder is not None and not outcome.aborted and outcome.error is None:
        outcome.kind, outcome.repeated = decoder.finish()
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


class _Decoder:
    """Turns the streamed JSON reply into builder calls.

    The answer branch's `text` string is emitted as text deltas as it grows. A call is
    opened once its name is complete (the `"arguments"` key follows it) and its argument text
    is forwarded as it arrives, holding back trailing `}`/whitespace that may close the outer
    object. A call of a tool in `held` (it has an answered call already) is held back until
    complete, so an identical repeat can be dropped without having been shown.
    """

    __slots__ = (
        "_answer",
        "_answer_name",
        "_answered",
        "_args_start",
        "_builder",
        "_held",
        "_mode",
        "_name",
        "_raw",
        "_sent",
        "_tools",
    )

    def __init__(
        self,
        builder: MessageBuilder,
        tools: Sequence[AgentTool],
        answered: set[tuple[str, str]],
        held: set[str],
    ) -> None:
        self._builder = builder
        self._tools = {tool.name for tool in tools}
        self._answer_name = answer_name(tools)
        self._answered = answered
        self._held = held
        self._raw = ""
        self._mode: Literal["", "answer", "call", "held"] = ""
        self._name = ""
        self._args_start = 0
        self._sent = 0
        self._answer = ""

    def feed(self, text: str) -> None:
        self._raw += text
        if not self._mode:
            self._detect()
        if self._mode == "answer":
            self._emit_answer()
        elif self._mode == "call":
            args = self._raw[self._args_start :]
            end = len(args.rstrip(_CLOSERS))
            if end > self._sent:
                self._builder.tool_call_delta(args[self._sent : end])
                self._sent = end

    def _detect(self) -> None:
        parsed = parse_partial_json(self._raw)
        name = parsed.get("name")
        if name == self._answer_name and ANSWER_TEXT in parsed:
            self._mode = "answer"
            return
        match = _ARGUMENTS.search(self._raw)
        if match is None or not isinstance(name, str) or name not in self._tools:
            return
        self._name = name
        self._args_start = match.end()
        if name in self._held:
            self._mode = "held"
        else:
            self._mode = "call"
            self._builder.tool_call_start(_new_id(), name)

    def _emit_answer(self) -> None:
        answer = parse_partial_json(self._raw).get(ANSWER_TEXT)
        if not isinstance(answer, str):
            return
        # A half-received escape can make the partial string differ from the last one;
        # emit only when it extends what was already sent.
        if len(answer) > len(self._answer) and answer.startswith(self._answer):
            self._builder.text_delta(answer[len(self._answer) :])
            self._answer = answer

    def finish(self) -> tuple[Literal["answer", "call", "repeat", "none"], str]:
        """Flush what is left; returns the reply's kind and, for a repeat, the tool name."""
        if not self._mode:
            self._detect()
        if self._mode == "answer":
            self._emit_answer()
            return "answer", ""
        if not self._mode:
            return "none", ""
        args = self._raw[self._args_start :].rstrip()
        args = args[:-1] if args.endswith("}") else args  # the outer object's brace
        if self._mode == "held":
            if call_key(self._name, parse_partial_json(args)) in self._answered:
                return "repeat", self._name
            self._builder.tool_call_start(_new_id(), self._name)
        if len(args) > self._sent:
            self._builder.tool_call_delta(args[self._sent :])
        self._builder.end_block()
        return "call", ""


def _new_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
