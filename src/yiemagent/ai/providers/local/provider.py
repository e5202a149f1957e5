"""`stream_local`: the embedded model as a provider (DESIGN §7).

One call: load the runtime (cached per process, on a worker thread), render the context to
chat messages, generate on a worker thread and turn the streamed chunks into builder events
on the event loop. With tools, the reply is JSON-schema-constrained (see `prompt`): a growing
answer streams as text deltas; each call (one, or several in a list) is emitted as toolcall_*
events once complete, and a reply with calls ends with stop reason "toolUse" (several calls in
one reply are one batch). In the model's own format (`tool_format="native"`, see `native`)
the reply is free text or `<tool_call>` blocks instead. Either way the model's policy
(`rules.LocalPolicy`) runs: its offer rules shape what the reply's grammar offers, its call
rules judge each whole call before it is emitted, and a reply whose calls they all drop is
generated again without those tools. Without tools it is plain streamed text.

Bounded: every generation has a token cap (`max_tokens`, else the model's) and a
wall-clock deadline (`$YIEMAGENT_LOCAL_DEADLINE_S`, default `DEADLINE_S`); a reply cut by
either, or one caught repeating itself or writing a call longer than `MAX_ITEM_CHARS`,
ends with "length" (or "error" when nothing came at
all). Abort stops generation (the chunk callback tells llama.cpp to stop) and ends with
"aborted". Never raises: every failure ends the stream with an `error` event.

Busy without output: llama.cpp reads the prompt in batches of `runtime.N_BATCH`
tokens and reports each (`return_progress`); those reports, and every token of a call held
back until it is whole, call `options.keep_alive()`, as does a timer while the model loads.
So the caller's stream idle limit ends a call only when the runtime has stopped making
progress, and no event is sent that a consumer would have to know.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import Any

from yiemagent.ai._sanitize import sanitize_surrogates
from yiemagent.ai.builder import MessageBuilder
from yiemagent.ai.openai_wire import usage_from_openai
from yiemagent.ai.providers.local.choice import ChainStep, vocabulary
from yiemagent.ai.providers.local.decoder import CallGate, Decoder, ReplyDecoder
from yiemagent.ai.providers.local.generation import Outcome, free_name, stream_chunks
from yiemagent.ai.providers.local.grounding import Grounding, unbacked_numbers
from yiemagent.ai.providers.local.model import policy_of, tool_format_of
from yiemagent.ai.providers.local.native import (
    NATIVE_NAME_PREFIX,
    NativeDecoder,
    native_extra_grammar,
    native_grammar,
    native_messages,
    native_system_prompt,
)
from yiemagent.ai.providers.local.prompt import (
    AFTER_RESULTS,
    MAX_CALLS,
    NAME_PREFIX,
    answer_name,
    answered_calls,
    chat_messages,
    current_request,
    extra_call_grammar,
    not_given_turns,
    own_calls,
    reply_schema,
    results_text,
    steered_request,
    system_prompt,
    tool_rounds,
)
from yiemagent.ai.providers.local.rules import DETAILS_KEY, CallScene, Offer, RuleNote, Turn
from yiemagent.ai.providers.local.runtime import ChatRuntime, LocalRuntime, get_runtime
from yiemagent.ai.providers.local.weights import LocalModelSpec, local_spec
from yiemagent.ai.transform import transform_messages
from yiemagent.errors import ProviderError
from yiemagent.types.messages import Usage
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions
from yiemagent.types.output import OUTPUT_TOOL_LABEL

__all__ = [
    "DEADLINE_ENV",
    "DEADLINE_S",
    "SERVER_TOOL_ROUNDS",
    "stream_local",
    "stream_local_server",
]

logger = logging.getLogger(__name__)

DEADLINE_ENV = "YIEMAGENT_LOCAL_DEADLINE_S"
DEADLINE_S = 300.0
"""Seconds one generation may take, prompt included, unless `$YIEMAGENT_LOCAL_DEADLINE_S`
says otherwise (2048 tokens at ~22 tokens/s on 2 idle cores take ~95 s; a machine shared
with other work is several times slower)."""
MAX_ASKS = 2
"""After this many replies dropped by the guards (repeats, ungrounded calls), only the answer
is offered: each one costs a generation."""
_tasks: set[asyncio.Task[None]] = set()


def stream_local(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one answer of the embedded model `model.id` (e.g. "qwen2.5-coder-0.5b").

    Must be called with a running event loop; returns at once and works in a task.
    """
    return _start(model, context, options or StreamOptions(), None)


def stream_local_server(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Stream one answer of a model a llama.cpp-compatible server serves (`model.base_url`,
    `model.id`), driven as the embedded model is: the same reply schema, rules and guards
    (the "openai-reply-schema" `StreamFn`). The key is `options.api_key`, else
    the provider's environment variable, else none.

    Must be called with a running event loop; returns at once and works in a task.
    """
    from yiemagent.ai.providers._sdk_call import NO_KEY, resolve_api_key
    from yiemagent.ai.providers.local.server import ServerRuntime

    opts = options or StreamOptions()
    key = resolve_api_key(model.provider, opts.api_key) or NO_KEY
    runtime = _servers.get((model.base_url, model.id, key))
    if runtime is None:
        runtime = ServerRuntime(model.base_url or "", model.id, api_key=key)
        _servers[(model.base_url, model.id, key)] = runtime
    return _start(model, context, opts, runtime)


_servers: dict[tuple[str | None, str, str], ChatRuntime] = {}
SERVER_TOOL_ROUNDS = 4
"""A server's model gets the embedded 0.5B model's round budget."""


def _start(
    model: Model, context: Context, options: StreamOptions, runtime: ChatRuntime | None
) -> AssistantMessageEventStream:
    stream = AssistantMessageEventStream()
    task = asyncio.get_running_loop().create_task(_run(model, context, options, stream, runtime))
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


async def _run(
    model: Model,
    context: Context,
    options: StreamOptions,
    stream: AssistantMessageEventStream,
    server: ChatRuntime | None,
) -> None:
    builder = MessageBuilder(model, stream)
    builder.start()
    signal = options.signal
    try:
        if signal is not None and signal.aborted:
            builder.fail("aborted", "Request was aborted")
            return
        limit = deadline_s()
        runtime: ChatRuntime
        if server is None:
            spec = local_spec(model.id)
            runtime, rounds = await _load(spec, options), spec.max_tool_rounds
        else:
            runtime, rounds = server, SERVER_TOOL_ROUNDS
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
    runtime: ChatRuntime,
    builder: MessageBuilder,
    model: Model,
    context: Context,
    options: StreamOptions,
    max_tool_rounds: int,
    limit_s: float,
) -> None:
    tools = list(context.tools or [])
    offered = [tool.name for tool in tools]
    messages = own_calls(transform_messages(context.messages, model, tool_names=offered), tools)
    native = bool(tools) and tool_format_of(model) == "native"
    label = _model_label(model)
    answer = answer_name(tools) if tools else ""
    if native:
        chat = native_messages(native_system_prompt(context.system_prompt, tools, label), messages)
    else:
        chat = chat_messages(system_prompt(context.system_prompt, tools, label), messages, answer)
    request: dict[str, Any] = {
        # Lone surrogates (a file name decoded with surrogateescape) cannot reach the runtime.
        "messages": sanitize_surrogates(chat),
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": options.max_tokens or model.max_tokens,
        # Greedy by default: reproducible tool calls from a small model.
        "temperature": 0.0 if options.temperature is None else options.temperature,
        "cache_prompt": True,  # reuse the KV cache of the shared prefix
        "return_progress": True,  # a chunk per prompt batch read: options.keep_alive
    }
    deadline = time.monotonic() + limit_s
    if not tools:
        text = await stream_chunks(runtime, request, builder, None, options, deadline)
        usage = Usage()
        usage.add(usage_from_openai(text.usage))
        builder.set_usage(usage)
        _end(builder, text)
        return
    policy = policy_of(model)
    request_messages = current_request(messages)
    # A typed run (tool mode): its output tool is never withheld, and the
    # free-text answer is left out, so constrained decoding gives a value of the output type.
    output_tools = frozenset(t.name for t in tools if t.label == OUTPUT_TOOL_LABEL)
    probed: list[str | None] = []

    async def probe() -> str | None:
        if not probed:
            prefix = NATIVE_NAME_PREFIX if native else NAME_PREFIX
            name = await free_name(runtime, request, options, deadline, prefix=prefix)
            probed.append(name)
            logger.debug("local model reaches for %r", name)
        return probed[0]

    turn = Turn(
        tools=tools,
        messages=messages,
        request=Grounding.of(steered_request(messages)),
        request_messages=request_messages,
        rounds=tool_rounds(messages),
        max_tool_rounds=max_tool_rounds,
        chain=ChainStep.after(messages, tools),
        output_tools=output_tools,
        answer=answer,
        probe=probe,
        native=native,
    )
    offer = Offer(chat=request["messages"])
    for rule in policy.offer_rules:
        await rule.shape(turn, offer)
    offer.dropped -= output_tools
    chat = request["messages"] = offer.chat
    notes = offer.notes
    scene = CallScene(
        tools={tool.name: tool for tool in tools},
        known=Grounding.of(messages),
        request=turn.request,
        answered=answered_calls(messages),
        chain=turn.chain,
        vocabulary=vocabulary(tools),
        reached_for=probed[0] if probed else None,
    )
    usage = Usage()
    dropped = offer.dropped
    outcome: Outcome | None = None
    decoder: Decoder | None = None
    asked = 0
    # `rules.UnbackedAnswer`: an answer stating a number nothing given backs is refused for
    # a call at most once (`check_answer`); after a call was dropped, it is told at most
    # once that no tool gives that (`check_dropped`). Besides the conversation
    # (`scene.known`), the system prompt and the model's own name ("Qwen2.5-Coder-0.5B")
    # count as given, not the tools' descriptions (the 0.5B copies a description's example
    # value into a made-up figure: "240 degrees" from an old calculator example).
    check_answer, check_dropped = offer.check_answer, offer.check_dropped
    prompted = Grounding.of_text(f"{label}\n{context.system_prompt}")

    def made_up(text: str) -> set[str]:
        return unbacked_numbers(text, scene.known) & unbacked_numbers(text, prompted)

    while outcome is None or (outcome.kind == "repeat" and outcome.finish_reason != "length"):
        if outcome is not None:
            # The call rules dropped every call of the reply: asked again without those tools.
            logger.info("local calls of %s dropped; asking again", outcome.repeated)
            dropped |= outcome.repeated
            asked += 1
            named = offer.named - dropped
            if asked == MAX_ASKS and named:  # the tools the request asks for, once more
                dropped |= {t.name for t in tools} - named - output_tools
            elif asked >= MAX_ASKS:  # bounded: the answer is left
                dropped |= {t.name for t in tools} - output_tools
        scene.emitted, scene.calls = set(), []
        answers = not output_tools and not offer.named - dropped
        # A typed run's output tool is its answer: withheld while a tool the request asks
        # for is offered, as the answer is.
        withheld = dropped | (output_tools if offer.named - dropped - output_tools else set())
        gate = CallGate(builder, tools, scene=scene, rules=policy.call_rules, exempt=output_tools)
        callable_ = {t.name for t in tools} - dropped - output_tools
        refuse_for_call = check_answer and bool(callable_)
        tell_no_tool = check_dropped and asked > 0
        hold = (check_answer or tell_no_tool) and answers
        # Past `HOLD_CHARS` an answer is judged only after a drop: a long answer otherwise
        # streams (a story's numbers are its own).
        judge = (lambda text: bool(made_up(text))) if tell_no_tool else None
        own = AFTER_RESULTS if offer.no_echo else None
        decoder = (
            NativeDecoder(builder, gate)
            if native
            else ReplyDecoder(builder, gate, hold=hold, judge=judge, own=own)
        )
        if native:
            request["grammar"] = native_grammar(tools, drop=withheld, answer=answers)
        else:
            schema = reply_schema(tools, drop=withheld, answer=answers, parts=offer.parts)
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema},
            }
        outcome = await stream_chunks(runtime, request, builder, decoder, options, deadline)
        notes += decoder.notes
        usage.add(usage_from_openai(outcome.usage))
        if isinstance(decoder, ReplyDecoder) and decoder.copied:
            # `rules.ResultsEcho`: asked again once with the copy's first word barred
            # (llama.cpp's `logit_bias` by text); a second copy is replaced by the results.
            if "logit_bias" not in request:
                first = (decoder.answer or "").split(maxsplit=1)[0]
                notes.append(RuleNote("results_echo", "stopped", f"an answer copying {first!r}…"))
                request["logit_bias"] = [[first, False]]
                outcome = None
                continue
            notes.append(RuleNote("results_echo", "repaired", "the results given as the answer"))
            builder.text_delta(results_text(messages))
        if isinstance(decoder, ReplyDecoder) and decoder.holding and outcome.kind == "answer":
            check_answer = False
            figures = made_up(decoder.answer or "")
            whole = outcome.finish_reason != "length" or decoder.refused
            if figures and whole and outcome.error is None and not outcome.aborted:
                stated = ", ".join(sorted(figures))
                if refuse_for_call:
                    what = f"a call, not an answer stating {stated}"
                    notes.append(RuleNote("unbacked_answer", "required", what))
                    offer.named |= callable_
                    outcome = None
                    continue
                if tell_no_tool:  # the tool it reached for was dropped: nothing gives that
                    check_dropped = False
                    notes.append(RuleNote("unbacked_answer", "told", f"no tool gives {stated}"))
                    told = not_given_turns(decoder.answer or "", answer)
                    chat = request["messages"] = [*chat, *told]
                    dropped |= {t.name for t in tools} - output_tools
                    outcome = None
                    continue
            decoder.release()
    # `rules.ExtraCall`: a lone first call is written back as the start of several (an
    # open JSON list, `[{call}`, or its `<tool_call>` block in the model's own format), and
    # the model must write one more call at a time; the call rules judge each.
    more: dict[str, Any] = dict(request)
    more.pop("response_format", None)
    extra: ReplyDecoder | NativeDecoder | None = None
    if offer.extra_call and outcome.kind == "call" and outcome.finish_reason != "length":
        if isinstance(decoder, NativeDecoder) and (block := decoder.lone_call()) is not None:
            decoder.resume_with_block(block)
            more["grammar"], extra = native_extra_grammar(tools, drop=dropped), decoder
        elif isinstance(decoder, ReplyDecoder) and (item := decoder.lone_call()) is not None:
            decoder.resume_as_list(item)
            more["grammar"], extra = extra_call_grammar(tools, drop=dropped), decoder
    while extra is not None and extra.calls < MAX_CALLS:
        calls = extra.calls
        notes.append(RuleNote("extra_call", "asked", f"call {calls + 1} of the reply"))
        if isinstance(extra, NativeDecoder):
            extra.open_block()
        more["messages"] = [*chat, {"role": "assistant", "content": extra.raw}]
        seen = len(extra.notes)
        more_outcome = await stream_chunks(runtime, more, builder, extra, options, deadline)
        notes += extra.notes[seen:]
        usage.add(usage_from_openai(more_outcome.usage))
        if more_outcome.aborted or more_outcome.error is not None:
            outcome = more_outcome
            break
        if extra.calls == calls:
            break
    if notes:
        builder.message.details[DETAILS_KEY] = [note.as_dict() for note in notes]
    builder.set_usage(usage)
    _end(builder, outcome)


def _end(builder: MessageBuilder, outcome: Outcome) -> None:
    """End the message as `outcome` says."""
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


async def _load(spec: LocalModelSpec, options: StreamOptions) -> LocalRuntime:
    """The runtime of `spec` (`get_runtime`); while a first call loads it, which llama.cpp
    reports no progress of, `options.keep_alive` is called every quarter of the idle limit:
    loading is bounded local work, not a silent peer."""
    keep_alive, idle_s = options.keep_alive, options.idle_timeout_s
    if keep_alive is None or idle_s is None:
        return await get_runtime(spec)
    loading = asyncio.ensure_future(get_runtime(spec))
    while True:
        done, _ = await asyncio.wait({loading}, timeout=idle_s / 4)
        if done:
            return loading.result()
        keep_alive()
