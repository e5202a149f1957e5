"""The agent loop: turns of one model call and its tool calls, with events (DESIGN §5).

Read top to bottom, the functions follow a run in the order it happens: the entry points
(`agent_loop` and `agent_loop_continue` start a run and return its event stream;
`run_agent_loop` and `run_agent_loop_continue` run it, sending each event to a sink), the
state a run's turns share (`LoopRun`), the turns (steering polled before each, follow-ups
when the agent would otherwise stop, the hooks between turns), one model call
(`stream_assistant_response`: transform the transcript, convert it for the model, stream the
answer), the transcript as the model sees it (`default_convert_to_llm`), the turn's tool
calls (one batch, `_tool_calls.execute_tool_calls`), and what happens when something raises:
the run ends with an error message, `turn_end` and `agent_end`, never with an exception into
the event consumer, and every tool call left open gets its result.

A run appends to `context.messages` in place and returns the messages it added. It never
copies the history: a turn costs the same at 10 messages and at 10 000.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import time
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Iterable,
    Mapping,
    Sequence,
)
from contextvars import ContextVar
from dataclasses import dataclass, field
from inspect import isawaitable
from typing import Any, Literal

from yiemagent.errors import ConfigError, YiemAgentError, exception_summary
from yiemagent.loop._execution import Deadline, HookAbandoned, await_apart, within_abort_grace
from yiemagent.loop._output_type import OutputFailed, OutputRun
from yiemagent.loop._tool_calls import (
    CANCELLED_TEXT,
    Offer,
    execute_tool_calls,
    fail_tool_calls,
    held_tool_calls,
    interrupted_text,
    offering,
)
from yiemagent.loop._usage_limits import UsageMeter, limit_text, preparing_call, preparing_spent
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEndReason,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentStartEvent,
    AgentTool,
    AssistantMessage,
    AssistantMessageEvent,
    AssistantMessageEventStream,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Context,
    DoneEvent,
    ErrorEvent,
    EventStream,
    Message,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    StreamFn,
    StreamOptions,
    ToolCall,
    ToolCallBatch,
    ToolResultMessage,
    TurnContext,
    TurnEndEvent,
    TurnStartEvent,
    Usage,
    UserMessage,
    now_ms,
)
from yiemagent.types.callbacks import (
    Emit,
    EventSink,
    guarded_sink,
    maybe_await,
    task_is_cancelled,
)
from yiemagent.types.context import as_turn_update
from yiemagent.types.messages import ensure_unique_tool_call_ids, to_messages
from yiemagent.types.model import PROVIDER_OPTIONS, silence_limit_s
from yiemagent.types.observe import ChatSpan, RunSpan, run_observer

__all__ = [
    "IncrementalConverter",
    "agent_loop",
    "agent_loop_continue",
    "assistant_message",
    "default_convert_to_llm",
    "run_agent_loop",
    "run_agent_loop_continue",
    "stream_assistant_response",
]

logger = logging.getLogger(__name__)


# ── entry points ────────────────────────────────────────────────────────────


_tasks: set[asyncio.Task[None]] = set()  # keeps running loops referenced until they end


def agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Start a run with new prompts; returns at once the stream of its events (the seeds'
    agentLoop).

    Must be called from a running event loop; the run is a task on it. The stream always ends
    with an `AgentEndEvent`; `await stream.result()` gives the messages the run added.
    """
    prompts = as_prompts(prompts)  # a bad prompt or tool raises here, not inside the task
    take_tools(context)
    stream = _create_agent_stream()
    _start(stream, run_agent_loop(prompts, context, config, _pusher(stream), signal, stream_fn))
    return stream


def agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
) -> EventStream[AgentEvent, list[AgentMessage]]:
    """Continue from the transcript without a new prompt (retries, tool results already in).

    Raises:
        ConfigError: the transcript is empty or ends with an assistant message.
    """
    check_can_continue(context, config)
    take_tools(context)
    stream = _create_agent_stream()
    _start(stream, run_agent_loop_continue(context, config, _pusher(stream), signal, stream_fn))
    return stream


async def run_agent_loop(
    prompts: Sequence[AgentMessage],
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    converter: IncrementalConverter | None = None,
) -> list[AgentMessage]:
    """Run to the end with new prompts, sending each event to `emit` (plain or async; its
    exceptions are logged and ignored). Never raises for what happens inside the run.
    Returns the messages the run added, prompts first. A prompt given as a text
    (or one message) is taken as a list of one user message (or that message).

    `converter`: an `IncrementalConverter` kept by a caller that runs the loop again and
    again on one growing `context.messages` list (the `Agent`), so a run converts only the
    messages added since the last one; default: a new one per run.

    Raises:
        MessageInputError: a prompt is not a message.
        ConfigError: an item of `context.tools` is neither a tool nor a typed function
            (`take_tools`); both before the run starts."""
    prompts = as_prompts(prompts)
    take_tools(context)
    run = LoopRun.start(context, config, emit, signal, stream_fn, converter)
    run.new_messages.extend(prompts)
    context.messages.extend(prompts)
    await run.emit(AgentStartEvent())
    await run.start_turn()
    for prompt in prompts:
        await run.emit_message(prompt)
    await _run(run)
    return run.new_messages


async def run_agent_loop_continue(
    context: AgentContext,
    config: AgentLoopConfig,
    emit: EventSink,
    signal: AbortSignal | None = None,
    stream_fn: StreamFn | None = None,
    *,
    converter: IncrementalConverter | None = None,
) -> list[AgentMessage]:
    """`run_agent_loop` without prompts: continue from the transcript (no prompt events);
    `converter` as there.

    When the transcript's last assistant message has held tool calls with
    decisions in `config.approvals`, the approved ones run and the rejected ones get their
    error result first, as the first turn; calls still without a decision end the run
    with reason "awaiting_approval" before any model call.

    Raises:
        ConfigError: the transcript is empty or ends with an assistant message (see
            `agent_loop_continue`).
    """
    check_can_continue(context, config)
    return await run_agent_loop((), context, config, emit, signal, stream_fn, converter=converter)


def check_can_continue(context: AgentContext, config: AgentLoopConfig | None = None) -> None:
    """Raise `ConfigError` unless the run can continue from `context`: the transcript is
    not empty and does not end with an assistant message, unless that message has held
    tool calls with decisions in `config.approvals`."""
    if not context.messages:
        raise ConfigError(
            "Cannot continue: no messages in context (start a run with agent_loop and a prompt)"
        )
    role = getattr(context.messages[-1], "role", None)
    if role == "assistant" and not decided_held_calls(context, config):
        raise ConfigError(
            "Cannot continue from message role: assistant (add a user message or tool results)"
        )


def as_prompts(value: Any) -> list[AgentMessage]:
    """Prompts or a queue hook's answer as a list: one message, one text (a user message) or
    one dict is taken as a list of it, never iterated into characters; then the one message
    coercion (`to_messages`).

    Raises:
        MessageInputError: `value` or one of its items is not a message.
    """
    if not value:
        return []
    if isinstance(value, str | Mapping) or hasattr(value, "role"):
        value = [value]
    return to_messages(value, what="prompts")


def take_tools(context: AgentContext) -> None:
    """Make each item of `context.tools` an `AgentTool`, as every other place that takes
    tools does (`Agent(tools=...)`, `ToolStore.register`): a typed function, plain or async,
    becomes the tool `@tool` makes of it. The list is replaced, not changed in place, and
    only when an item needs it.

    Raises:
        ConfigError: an item is neither a tool nor a function `@tool` takes.
    """
    if all(isinstance(item, AgentTool) for item in context.tools):
        return
    from yiemagent.tools import to_agent_tool

    context.tools = [to_agent_tool(item) for item in context.tools]


def _create_agent_stream() -> EventStream[AgentEvent, list[AgentMessage]]:
    return EventStream(
        lambda event: event.type == "agent_end",
        lambda event: event.messages if isinstance(event, AgentEndEvent) else [],
    )


def _pusher(stream: EventStream[AgentEvent, list[AgentMessage]]) -> EventSink:
    return stream.push


def _start(
    stream: EventStream[AgentEvent, list[AgentMessage]],
    run: Coroutine[Any, Any, list[AgentMessage]],
) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        run.close()
        raise RuntimeError(
            "agent_loop needs a running event loop: call it from async code "
            "(or use Agent.prompt_sync from plain code)"
        ) from None

    async def drive() -> None:
        messages: list[AgentMessage] = []
        try:
            messages = await run
        finally:
            stream.end(messages)  # a no-op after agent_end; ends it on cancellation

    task = loop.create_task(drive())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


# ── the run's state ─────────────────────────────────────────────────────────


@dataclass(slots=True)
class LoopRun:
    """One run's state: what its turns share (internal to `loop/`, not re-exported). Used
    on the run's task only."""

    context: AgentContext
    config: AgentLoopConfig
    emit: Emit
    signal: AbortSignal
    stream_fn: StreamFn | None
    new_messages: list[AgentMessage] = field(default_factory=list)
    convert: IncrementalConverter = field(default_factory=lambda: IncrementalConverter())
    model_calls: int = 0
    in_turn: bool = False
    unanswered: list[ToolCall] = field(default_factory=list)
    """Tool calls of the last assistant message still without results."""
    turn_message: AssistantMessage | None = None
    """The assistant message of the current turn, once the model call has ended."""
    meter: UsageMeter | None = None
    """What the run has spent, when it has `UsageLimits`."""
    trace: RunSpan | None = None
    """The run's `invoke_agent` span, when it is traced."""
    held: list[ToolCall] = field(default_factory=list)
    """Tool calls of the last batch held for approval."""
    output: OutputRun | None = None
    """The run's output type, when it has one."""
    cut_off: int = 0
    """Model calls in a row cut off by the output token limit in the middle of a tool call."""
    offered: frozenset[str] | None = None
    """The tools the turn's model call was offered, when its `StreamFn` told
    (`offer_only`); None: every tool of the context."""

    def __post_init__(self) -> None:
        spec = self.config.output_type
        if spec is not None:
            self.output = OutputRun(spec, self.config.output_retries)

    def append(self, message: AgentMessage) -> None:
        """Add `message` to the transcript and to the run's new messages."""
        self.context.messages.append(message)
        self.new_messages.append(message)

    @classmethod
    def start(
        cls,
        context: AgentContext,
        config: AgentLoopConfig,
        emit: EventSink,
        signal: AbortSignal | None,
        stream_fn: StreamFn | None,
        converter: IncrementalConverter | None,
    ) -> LoopRun:
        """A new run (`signal=None`: `config.signal`, else no abort; `emit` plain or async,
        guarded), its span and usage meter started; `converter` as in `run_agent_loop`."""
        run = cls(context, config, guarded_sink(emit), config.run_signal(signal), stream_fn)
        if converter is not None:
            run.convert = converter
        run.observe()
        return run

    def observe(self) -> None:
        """Start the run's span and usage meter; nothing when neither is asked."""
        if self.config.usage_limits is not None:
            self.meter = UsageMeter(self.config.usage_limits)
        observer = run_observer(self.config)
        if observer is not None:
            try:
                self.trace = observer.run(self.config, self.context.system_prompt)
            except Exception:
                logger.exception("could not start the run's span; the run goes on untraced")

    async def start_turn(self) -> None:
        """`turn_start`."""
        self.in_turn = True
        self.turn_message = None
        await self.emit(TurnStartEvent())

    async def emit_message(self, message: AgentMessage) -> None:
        """`message_start` and `message_end` of a message that is not streamed."""
        await self.emit(MessageStartEvent(message))
        await self.emit(MessageEndEvent(message))

    async def end_turn(
        self, message: AssistantMessage, tool_results: list[ToolResultMessage]
    ) -> None:
        """`turn_end`."""
        self.in_turn = False
        await self.emit(TurnEndEvent(message, tool_results))


# ── the run and its turns ───────────────────────────────────────────────────


class _HookCancelled(Exception):
    """A hook raised `CancelledError` while the run's task was not cancelled (its own work
    was); the run fails with it as with any other exception."""

    def __init__(self, cancelled: asyncio.CancelledError) -> None:
        super().__init__()
        self.cancelled = cancelled


async def _run(run: LoopRun) -> None:
    """Run the turns, then `agent_end`; whatever raises becomes an error message.
    A traced run's work happens in its span's context, and the span ends after `agent_end`
    on every path."""
    reason: AgentEndReason = "error"
    trace = run.trace
    scope = trace.activate() if trace is not None else contextlib.nullcontext()
    try:
        with scope:
            try:
                reason = await _run_turns(run)
            except asyncio.CancelledError as exc:
                if task_is_cancelled():
                    raise
                raise _HookCancelled(exc) from exc  # a hook's own work was cancelled
    except Exception as exc:  # the run ends, it never raises into the consumer
        logger.exception("agent loop failed")
        try:
            await _fail_run(run, exc.cancelled if isinstance(exc, _HookCancelled) else exc)
        except Exception:
            logger.exception("could not report the failure as a message")
    except BaseException as exc:  # cancelled, Ctrl-C, sys.exit: close the turn, then go on
        reason = "aborted"
        if isinstance(exc, GeneratorExit):  # the coroutine is being closed: no more awaits
            raise
        try:
            await _end_cancelled_turn(run, exc)
        except Exception:
            logger.exception("could not close the turn of a cancelled run")
        raise
    finally:
        output = run.output.value if run.output is not None and reason == "stop" else None
        end = AgentEndEvent(run.new_messages, reason, output)
        await run.emit(end)
        if trace is not None:  # the reason as the sink left it ("guardrail" for a trip)
            _end_trace(trace, run, end.reason)


async def _run_turns(run: LoopRun) -> AgentEndReason:
    """The turns of a run (the seeds' runLoop); returns why the run ended.

    The first turn has started already. Steering is polled at the start and after each turn;
    follow-ups only when the agent would otherwise stop or its round reached `max_turns`.
    `max_turns` bounds the model calls of each round: the prompt's, and each follow-up's
    (a queued follow-up is never left for a later run because this one hit the limit).
    """
    turn: TurnContext | None = None
    reason: AgentEndReason = "stop"
    call_model = True  # false after approved calls that all terminate the run
    answered = False  # the output was accepted: the run ends unless messages came
    if run.config.approvals and (decided := decided_held_calls(run.context, run.config)):
        turn, terminate = await answer_held_calls(run, *decided)
        if run.held:
            return "awaiting_approval"
        if run.signal.aborted:
            return "aborted"
        if terminate:
            call_model, reason = False, "terminate"
        elif run.output is not None and run.output.accepted_in(decided[0], run.context.messages):
            call_model, answered = False, True  # the held batch also gave the output
    if run.config.approvals:  # each decision was for a held call: a later call that reuses
        run.config = dataclasses.replace(run.config, approvals=None)  # its id is asked anew
    pending = await _poll(run, run.config.get_steering_messages, "get_steering_messages")
    round_start = 0  # model calls before the current round (the prompt's or a follow-up's)
    while True:
        has_more_tool_calls, call_model = call_model, True
        at_limit = False  # the round reached max_turns (steering was not polled after it)
        while has_more_tool_calls or pending:
            if turn is not None:
                await _prepare_next_turn(run, turn)
                await run.start_turn()
            for message in pending:
                await run.emit_message(message)
                run.append(message)
            pending = []

            meter = run.meter
            if meter is not None and (limit := meter.refused or meter.reached()) is not None:
                await run.end_turn(await _limit_message(run, limit), [])
                return "usage_limit"
            message = await _call_model(run)
            cut_off = message.stop_reason == "length" and bool(message.tool_calls)
            run.cut_off = run.cut_off + 1 if cut_off else 0
            tool_results, terminate = await run_tool_calls(run, message)
            failed = message.stop_reason == "error" or message.stop_reason == "aborted"
            if meter is not None and not failed:
                tools_ran = _tools_ran(run, tool_results)  # an output tool call is an answer
                limit = meter.refused or (meter.reached() if tools_ran else None)
                if limit is not None and not terminate:
                    await _limit_message(run, limit)
                    await run.end_turn(message, tool_results)
                    return "usage_limit"
            await run.end_turn(message, tool_results)
            if message.stop_reason == "error" or message.stop_reason == "aborted":
                return message.stop_reason
            if run.cut_off >= MAX_CUT_OFF_CALLS:  # asking again would not end, max_turns or not
                await _error_turn(run, CUT_OFF_TEXT.format(n=run.cut_off))
                return "error"
            if run.held:
                return "awaiting_approval"
            has_more_tool_calls = bool(tool_results) and not terminate
            reason = "terminate" if terminate else "stop"
            retry: list[AgentMessage] = []
            answered = False
            if run.output is not None:
                verdict = run.output.check(message, tool_results, run.config.model)
                if verdict is True:
                    answered, has_more_tool_calls, reason = True, False, "stop"
                if isinstance(verdict, OutputFailed):
                    await _error_turn(run, verdict.text)
                    return "error"
                if isinstance(verdict, UserMessage):
                    retry = [verdict]
                    has_more_tool_calls = True

            turn = TurnContext(message, tool_results, run.context, run.new_messages)
            if await _should_stop_after_turn(run, turn):
                return "stop" if answered else "should_stop"  # an accepted answer stands
            if run.signal.aborted:
                return "stop" if answered else "aborted"
            max_turns = run.config.max_turns
            if max_turns is not None and run.model_calls - round_start >= max_turns:
                at_limit, pending = True, []
                break
            steering = await _poll(run, run.config.get_steering_messages, "get_steering_messages")
            pending = [*retry, *steering]

        pending = await _poll(run, run.config.get_follow_up_messages, "get_follow_up_messages")
        if not pending:
            if at_limit and has_more_tool_calls:
                return "max_turns"
            return "aborted" if run.signal.aborted and not answered else reason
        if at_limit:  # steering queued before the follow-up is delivered before it
            steering = await _poll(run, run.config.get_steering_messages, "get_steering_messages")
            pending = [*steering, *pending]
        round_start = run.model_calls


def _tools_ran(run: LoopRun, tool_results: Sequence[ToolResultMessage]) -> bool:
    """Whether the batch ran a tool other than the output tool: a batch of output tool
    calls alone is the model's answer, which (like a text answer) no limit turns into a
    usage-limit end; the next model call is checked before it is made."""
    if run.output is None:
        return bool(tool_results)
    name = run.output.spec.name
    return any(result.tool_name != name for result in tool_results)


async def _poll(
    run: LoopRun, get_messages: Callable[[], Any] | None, what: str
) -> list[AgentMessage]:
    """The messages a steering or follow-up queue hands over now (none when no hook, or
    when the hook outlived the abort grace).

    A hook returning one message, or a text, is taken as a list of it (a text as a user
    message), never iterated into characters."""
    if get_messages is None:
        return []
    return as_prompts(await _turn_hook(run, get_messages, (), what, []))


async def _turn_hook(
    run: LoopRun, hook: Callable[..., Any], args: tuple[Any, ...], what: str, abandoned: Any
) -> Any:
    """What the between-turns hook `hook(*args)` returns, awaited when it is async. Like a
    tool call's hooks, it has `ABORT_GRACE_S` after the run's abort; one that outlives it is
    cancelled and left behind, and `abandoned` stands for its answer (the aborted run then
    ends at its next check, with no further model call)."""
    try:
        return await within_abort_grace(hook(*args), run.signal, what)
    except HookAbandoned:
        logger.warning("%s did not stop within the abort grace; the run ends without it", what)
        return abandoned


async def _prepare_next_turn(run: LoopRun, turn: TurnContext) -> None:
    """`prepare_next_turn` may replace the context, the model or the reasoning level."""
    hook = run.config.prepare_next_turn
    if hook is None:
        return
    update = as_turn_update(await _turn_hook(run, hook, (turn,), "prepare_next_turn", None))
    if update is None:
        return
    if update.context is not None:
        take_tools(update.context)
        run.context = update.context
    changes: dict[str, Any] = {}
    if update.model is not None:
        changes["model"] = update.model
    if update.reasoning is not None:
        changes["reasoning"] = None if update.reasoning == "off" else update.reasoning
    if changes:
        run.config = dataclasses.replace(run.config, **changes)


async def _limit_message(run: LoopRun, limit: str) -> AssistantMessage:
    """The message that ends a run at a usage limit (stop reason "error")."""
    message = assistant_message(run.config, "error", limit_text(limit))
    await run.emit_message(message)
    run.append(message)
    return message


async def _call_model(run: LoopRun) -> AssistantMessage:
    """The turn's assistant message, appended to the transcript; `run.offered` is what the
    call was offered. Once the run is aborted no model is called: the message says so."""
    if run.signal.aborted:
        message = assistant_message(run.config, "aborted", "The run was aborted")
        await run.emit_message(message)
    else:
        if run.output is not None:
            run.output.offer(run.context, run.config.model)
        run.model_calls += 1
        offer = Offer()
        preparing = preparing_call.set(run.meter)  # what its transform spends counts too
        told = offering.set(offer)
        ended: list[AssistantMessage] = []

        def emit(event: AgentEvent) -> Awaitable[None] | None:
            if type(event) is MessageEndEvent:
                ended.append(event.message)  # type: ignore[arg-type]
            return run.emit(event)

        try:
            message = await stream_assistant_response(
                run.context,
                run.config,
                run.signal,
                emit,
                run.stream_fn,
                converter=run.convert,
                trace=run.trace,
            )
        except asyncio.CancelledError:
            # Cancelled while its message_end was told (a listener, the session's append):
            # the sink took the message into the transcript, so its calls get answers.
            if ended:
                run.append(ended[0])
                run.turn_message, run.unanswered = ended[0], ended[0].tool_calls
            raise
        finally:
            offering.reset(told)
            preparing_call.reset(preparing)
        run.offered = offer.names
        if run.meter is not None:
            run.meter.add_reply(message)
    run.append(message)
    run.turn_message = message
    return message


async def _should_stop_after_turn(run: LoopRun, turn: TurnContext) -> bool:
    hook = run.config.should_stop_after_turn
    if hook is None:
        return False
    return bool(await _turn_hook(run, hook, (turn,), "should_stop_after_turn", False))


# ── one model call ──────────────────────────────────────────────────────────


async def stream_assistant_response(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal | None = None,
    emit: EventSink | None = None,
    stream_fn: StreamFn | None = None,
    *,
    converter: IncrementalConverter | None = None,
    trace: RunSpan | None = None,
) -> AssistantMessage:
    """One model call: transform and convert the transcript, stream the answer.

    Emits `message_start` on the first provider event, `message_update` with the partial
    message for each later one, and `message_end` with the final message, whose empty or
    repeated tool-call ids have been made unique. Never raises: a failure (a hook, a
    provider bug) or a stream idle for `stream_idle_timeout_s` (no event and no
    `options.keep_alive()` call from the provider for that long;
    `stream_reasoning_timeout_s` while a reasoning model shows only reasoning) gives a message
    with stop reason "error" saying why; after an abort, a provider that does not end its
    stream within `ABORT_GRACE_S` gives one with stop reason "aborted".
    Does not append the message to `context` (the loop does).

    Args:
        context: the transcript and tools.
        config: the model, the hooks and the provider options.
        signal: the run's signal; None: `config.signal`, else no abort.
        emit: the event sink, plain or async (its exceptions are logged); None: none.
        stream_fn: the provider stream function; default `yiemagent.ai.stream`.
        converter: the run's incremental `convert_to_llm` (the loop's); None: convert the
            whole transcript.
        trace: the run's span: the call gets a `chat` span; None: untraced.

    The final message's `duration_ms` is set (ms from the provider call to its end, on the
    monotonic clock), and its
    `compaction_usage` when `transform_context` spent on a model (`count_spending`).
    """
    emit = guarded_sink(emit)
    signal = config.run_signal(signal)
    deadline = Deadline(
        config.stream_idle_timeout_s, signal, armed=False, reason="the model stream went idle"
    )
    shown = _Shown()
    chat: ChatSpan | None = None
    spent = Usage()
    preparing = preparing_spent.set(spent)
    try:
        deadline.arm_for_abort()  # hooks ignoring an abort are abandoned after its grace
        llm_context = await _llm_context(context, config, signal, converter)
        options = await _stream_options(config, deadline)
        if trace is not None:
            chat = trace.chat(config.model, llm_context, options)
        stream_fn = stream_fn if stream_fn is not None else _default_stream_fn()
        message = await _read_stream(
            stream_fn, config, llm_context, options, emit, deadline, shown, chat
        )
        if _smaller_view_agreed(message, config):
            shown.error_type = None
            deadline.arm_for_abort()  # the transform again, as before the first call
            llm_context = await _llm_context(context, config, signal, converter)
            message = await _read_stream(
                stream_fn, config, llm_context, options, emit, deadline, shown, chat
            )
    except asyncio.CancelledError:
        fired = deadline.fired
        if fired is None or deadline.uncancel() > 0:
            if chat is not None:  # the run's task was cancelled: the span still ends
                text = "The run's task was cancelled"
                chat.end(_failed_message(config, shown.partial, text, "aborted"), "cancelled")
            raise
        if fired == "aborted" or signal.aborted:
            message = _failed_message(config, shown.partial, "The run was aborted", "aborted")
        else:
            text = f"The model stream sent nothing for {deadline.timeout_s:g} s"
            message = _failed_message(config, shown.partial, text)
    except Exception as exc:
        if isinstance(exc, YiemAgentError):  # raised on purpose: its text says it all
            logger.info("model call failed: %s: %s", type(exc).__name__, exc)
        else:  # a bug somewhere: keep where it happened
            logger.exception("model call failed")
        message = _failed_message(config, shown.partial, exception_summary(exc))
    finally:
        deadline.close()
        preparing_spent.reset(preparing)
    if spent != Usage():  # a summary written for this call: the run's usage includes it
        message.compaction_usage = spent
    # empty or repeated tool-call ids (in the message or the transcript) are made unique
    # before anyone sees the final message, so message_end, the session store and the tool
    # events all carry the same ids
    try:
        earlier = (
            call.id
            for earlier_message in context.messages
            if isinstance(earlier_message, AssistantMessage)
            for call in earlier_message.tool_calls
        )
        ensure_unique_tool_call_ids(message, earlier)
    except Exception:  # a malformed message: the batch answers what it can
        logger.exception("could not check the tool-call ids of the model's message")
    if message.duration_ms is None:
        if shown.called_ns is None:  # it failed before the provider was called
            message.duration_ms = max(0, now_ms() - message.timestamp)
        else:
            message.duration_ms = (time.monotonic_ns() - shown.called_ns) // 1_000_000
    if chat is not None:
        chat.end(message, shown.error_type)
    if shown.partial is None:
        await emit(MessageStartEvent(message))
    await emit(MessageEndEvent(message))
    return message


_preparing_prompt: ContextVar[tuple[str, list[AgentTool]] | None] = ContextVar(
    "yiemagent_preparing_prompt", default=None
)


def preparing_prompt() -> tuple[str, list[AgentTool]] | None:
    """The system prompt and the tools of the model call whose `transform_context` is
    running: what the provider is sent beside the messages the transform returns, so a
    transform that sizes them to a window (a `Compactor`) can count them. None outside a
    transform."""
    return _preparing_prompt.get()


_preparing_config: ContextVar[AgentLoopConfig | None] = ContextVar(
    "yiemagent_preparing_config", default=None
)


async def preparing_api_key(provider: str) -> str | None:
    """The API key the config of the model call whose `transform_context` is running gives
    `provider`, for a transform that calls a model of its own (a `Compactor`'s summary):
    `get_api_key(provider)`, else `api_key` when `provider` is the call's own (a key is one
    provider's). None outside a transform or when neither gives one: the provider then
    reads its environment variable, as the run's own calls do."""
    config = _preparing_config.get()
    if config is None:
        return None
    if config.get_api_key is not None:
        key = await await_apart(maybe_await(config.get_api_key(provider)))
        if key:
            return key
    return config.api_key if provider == config.model.provider else None


async def _llm_context(
    context: AgentContext,
    config: AgentLoopConfig,
    signal: AbortSignal,
    convert: IncrementalConverter | None,
) -> Context:
    """`transform_context`, then `convert_to_llm`, as the provider's `Context`."""
    messages = context.messages
    if config.transform_context is not None:
        # a copy: a transform that prunes or appends in place must not edit the transcript
        beside = _preparing_prompt.set((context.system_prompt, list(context.tools)))
        keys = _preparing_config.set(config)
        try:
            transformed = config.transform_context(list(messages), signal)
            messages = await await_apart(transformed) if isawaitable(transformed) else transformed
        finally:
            _preparing_config.reset(keys)
            _preparing_prompt.reset(beside)
        messages = _message_list(messages, "transform_context", len(context.messages))
    llm_messages: list[Message]
    if config.convert_to_llm is None or config.convert_to_llm is default_convert_to_llm:
        llm_messages = convert(messages) if convert else default_convert_to_llm(messages)
    else:
        converted = await await_apart(maybe_await(config.convert_to_llm(messages)))
        llm_messages = list(_message_list(converted, "convert_to_llm", len(messages)))
    return Context(context.system_prompt, llm_messages, list(context.tools))


def _message_list(value: Any, hook: str, given: int) -> list[Any]:
    """What `transform_context` or `convert_to_llm` returned from `given` messages, as a
    list (a tuple or another iterable is listed).

    Raises:
        TypeError: it is no list of messages (None, a text, a mapping, one message), named
            with the hook: a text would otherwise be read as its letters, which no role
            matches, and the model called with no messages at all.
        ValueError: it returned no messages from some: the model would be called with
            nothing to answer (a filter that dropped everything).
    """
    if isinstance(value, list):
        listed = value
    elif (
        value is None or isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable)
    ):
        kind = "None" if value is None else type(value).__name__
        raise TypeError(f"{hook} returned {kind}; return the list of messages")
    else:
        listed = list(value)
    if given and not listed:
        raise ValueError(
            f"{hook} returned no messages (it was given {given}); the model needs at least "
            "the latest one to answer"
        )
    return listed


async def _stream_options(config: AgentLoopConfig, deadline: Deadline) -> StreamOptions:
    """The provider options of `config` for one call watched by `deadline`: its signal, its
    idle limit and its `keep_alive`; the API key is resolved per call."""
    api_key = None
    if config.get_api_key is not None:
        api_key = await await_apart(maybe_await(config.get_api_key(config.model.provider)))
    provider = {name: getattr(config, name) for name in PROVIDER_OPTIONS}
    provider["api_key"] = api_key or config.api_key
    spec = config.output_type
    watched = config.stream_idle_timeout_s is not None or (
        config.model.reasoning and config.stream_reasoning_timeout_s is not None
    )
    return StreamOptions(
        signal=deadline.signal,
        idle_timeout_s=config.stream_idle_timeout_s,
        reasoning_timeout_s=config.stream_reasoning_timeout_s,
        keep_alive=deadline.keep_alive if watched else None,
        output_schema=None if spec is None else spec.native_schema(config.model),
        **provider,
    )


def _default_stream_fn() -> StreamFn:
    from yiemagent.ai import stream

    return stream


@dataclass(slots=True)
class _Shown:
    partial: AssistantMessage | None = None
    """The partial message announced by `message_start`, once the provider has started."""
    error_type: str | None = None
    """The provider's failure class when the call ended in error (`ErrorEvent`)."""
    called_ns: int | None = None
    """When the provider was called, on the monotonic clock (ns): the message's duration
    counts from here, so a step of the wall clock does not change it."""


async def _read_stream(
    stream_fn: StreamFn,
    config: AgentLoopConfig,
    llm_context: Context,
    options: StreamOptions,
    emit: Emit,
    deadline: Deadline,
    shown: _Shown,
    chat: ChatSpan | None,
) -> AssistantMessage:
    """Call the provider and turn its events into message events; returns the final message.
    The provider call starts inside the chat span's context, so its HTTP spans nest in it.
    The deadline's limit follows the message so far (`silence_limit_s`)."""
    deadline.set_timeout(silence_limit_s(config.model, options, None))
    deadline.arm()
    shown.called_ns = time.monotonic_ns()
    response: AssistantMessageEventStream
    if chat is None:
        response = await maybe_await(stream_fn(config.model, llm_context, options))
    else:
        with chat.activate():
            response = await maybe_await(stream_fn(config.model, llm_context, options))
    events = aiter(response)
    while True:
        deadline.set_timeout(silence_limit_s(config.model, options, shown.partial))
        deadline.arm()
        try:
            event: AssistantMessageEvent = await anext(events)
        except StopAsyncIteration:
            break
        deadline.disarm()
        if isinstance(event, DoneEvent):
            await _close(events)
            return event.message
        if isinstance(event, ErrorEvent):
            await _close(events)
            shown.error_type = event.error_type
            return event.error
        if shown.partial is None:
            shown.partial = event.partial
            await emit(MessageStartEvent(event.partial))
        if event.type != "start":
            await emit(MessageUpdateEvent(event.partial, event))
    deadline.disarm()
    return await response.result()


def _smaller_view_agreed(message: AssistantMessage, config: AgentLoopConfig) -> bool:
    """Whether to call the model once more after `message`: the provider refused the request
    as longer than the model's context window before any of the answer arrived, and the
    `transform_context` (a `Compactor`) has a `context_overflowed(error_message) -> bool`
    that returned True, agreeing to make its next view smaller. A hook that raises is
    logged and counts as False: the provider's error stands."""
    if message.stop_reason != "error" or message.content:
        return False
    transform = config.transform_context
    given = getattr(transform, "__yiemagent_hook__", transform)  # as `signal_optional` got it
    agree = getattr(given, "context_overflowed", None)
    if not callable(agree):
        return False
    from yiemagent.ai import is_context_overflow  # only a failed call gets here

    if not is_context_overflow(message):
        return False
    try:
        return agree(message.error_message or "") is True
    except Exception:
        logger.exception("context_overflowed raised; the model's error stands")
        return False


async def _close(events: AsyncIterator[AssistantMessageEvent]) -> None:
    """Close the event iterator now: left open, an async generator is finalised later through
    a round trip of the event loop (and its self-pipe), which costs more than the turn."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


def _failed_message(
    config: AgentLoopConfig,
    partial: AssistantMessage | None,
    error_message: str,
    stop_reason: Literal["error", "aborted"] = "error",
) -> AssistantMessage:
    """An error message keeping what had arrived; a new object, since the provider may still
    touch its partial after an abort."""
    message = assistant_message(config, stop_reason, error_message)
    if partial is not None:
        message.content = list(partial.content)
        message.usage = partial.usage
        message.timestamp = partial.timestamp
    return message


def assistant_message(
    config: AgentLoopConfig, stop_reason: Literal["error", "aborted"], error_message: str
) -> AssistantMessage:
    """An empty assistant message of `config.model` that ended with `stop_reason`."""
    model = config.model
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        usage=Usage(),
        stop_reason=stop_reason,
        error_message=error_message,
    )


# ── the transcript as the model sees it ─────────────────────────────────────


COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:"
    "\n\n<summary>\n"
)


COMPACTION_SUMMARY_SUFFIX = "\n</summary>"


BRANCH_SUMMARY_PREFIX = (
    "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
)


BRANCH_SUMMARY_SUFFIX = "</summary>"


_PASS_THROUGH = frozenset({"user", "assistant", "toolResult"})


_LLM_TYPES = frozenset({UserMessage, AssistantMessage, ToolResultMessage})


def bash_execution_to_text(message: BashExecutionMessage) -> str:
    """A shell run as the user text the model reads: the command, its output in a fence, and
    the exit code when it is not 0 (or that it was cancelled)."""
    text = f"Ran `{message.command}`\n"
    text += f"```\n{message.output}\n```" if message.output else "(no output)"
    if message.cancelled:
        text += "\n\n(command cancelled)"
    elif message.exit_code is not None and message.exit_code != 0:
        text += f"\n\nCommand exited with code {message.exit_code}"
    if message.truncated:
        text += "\n\n[Output truncated]"
    return text


def convert_message(message: AgentMessage) -> Message | None:
    """One transcript message as a model sees it, or `None` when the model does not see it."""
    role = getattr(message, "role", None)
    if role in _PASS_THROUGH:
        return message  # type: ignore[return-value]
    if isinstance(message, BashExecutionMessage):
        return UserMessage(bash_execution_to_text(message), timestamp=message.timestamp)
    if isinstance(message, CompactionSummaryMessage):
        text = COMPACTION_SUMMARY_PREFIX + message.summary + COMPACTION_SUMMARY_SUFFIX
        return UserMessage(text, timestamp=message.timestamp)
    if isinstance(message, BranchSummaryMessage):
        text = BRANCH_SUMMARY_PREFIX + message.summary + BRANCH_SUMMARY_SUFFIX
        return UserMessage(text, timestamp=message.timestamp)
    return None


def default_convert_to_llm(messages: Sequence[AgentMessage]) -> list[Message]:
    """The transcript as the model sees it; never mutates `messages`.

    Args:
        messages: the transcript, oldest first.

    Returns:
        A new list: user/assistant/toolResult messages (the same objects), bash runs and
        summaries as new `UserMessage`s, other roles left out. Linear in `len(messages)`.
    """
    if set(map(type, messages)) <= _LLM_TYPES:  # the usual transcript: a copy, at C speed
        return list(messages)  # type: ignore[arg-type]
    return [m for message in messages if (m := convert_message(message)) is not None]


class IncrementalConverter:
    """`default_convert_to_llm` for a transcript that only grows: each call converts only the
    messages appended since the previous call, so a turn's cost does not grow with the
    history.

    Invariants: between calls, the messages already seen are not replaced in place (a
    different list, a shorter list, or another object at the first or the last position
    seen makes it convert everything again; a hook that edits the middle of the transcript
    must assign a new list, e.g. `prepare_next_turn` returning a new `AgentContext`).
    A list it returned is never changed once anyone else holds a reference to it: it appends
    in place only while it alone references the list, and copies it first otherwise
    (copy-on-write by reference count), so a provider that keeps its context keeps a
    faithful snapshot. One instance serves one transcript list, over one run or many (the
    `Agent` keeps one across its runs); not thread-safe.
    """

    __slots__ = ("_converted", "_first", "_last", "_seen", "_source")

    def __init__(self) -> None:
        self._source: list[AgentMessage] | None = None
        self._seen = 0
        self._first: AgentMessage | None = None
        self._last: AgentMessage | None = None
        self._converted: list[Message] = []

    def __call__(self, messages: list[AgentMessage]) -> list[Message]:
        """The converted transcript (see the class invariants)."""
        seen = self._seen
        if (
            messages is not self._source
            or len(messages) < seen
            or (seen and (messages[seen - 1] is not self._last or messages[0] is not self._first))
        ):
            self._source, self._converted = messages, default_convert_to_llm(messages)
            self._seen = len(messages)
            self._first = messages[0] if messages else None
            self._last = messages[-1] if messages else None
            return self._converted
        if seen < len(messages):
            # Referenced only by this attribute and the call's argument: no one kept it.
            if sys.getrefcount(self._converted) > 2:
                self._converted = self._converted[:]
            converted = self._converted
            for index in range(seen, len(messages)):
                llm_message = convert_message(messages[index])
                if llm_message is not None:
                    converted.append(llm_message)
            self._seen = len(messages)
            self._first = messages[0]
            self._last = messages[-1]
        return self._converted


# ── a turn's tool calls ─────────────────────────────────────────────────────


TRUNCATED_CALL_TEXT = (
    "not executed: the response hit the output token limit; "
    "re-issue the call with complete arguments"
)
"""The result of each tool call in a message cut off by the token limit."""


MAX_CUT_OFF_CALLS = 3
"""Model calls in a row cut off in the middle of a tool call before the run ends in error:
each is asked again, but a model that always writes past its cap would be asked
forever."""


CUT_OFF_TEXT = (
    "the model hit its output token limit in the middle of a tool call {n} times in a row; "
    "raise max_tokens or ask for a smaller result"
)


async def run_tool_calls(
    run: LoopRun, message: AssistantMessage
) -> tuple[list[ToolResultMessage], bool]:
    """Run the message's tool calls as a batch and append their results. A message cut
    off by the token limit or ended by error/abort runs none: each call gets an
    error result. Returns the results and whether the batch terminates."""
    calls = message.tool_calls  # ids already unique: the model call saw to it
    if not calls:
        return [], False
    run.unanswered = calls
    if message.stop_reason == "length":
        batch = await fail_tool_calls(calls, TRUNCATED_CALL_TEXT, run.emit)
    elif message.stop_reason == "error" or message.stop_reason == "aborted":
        batch = await fail_tool_calls(calls, _unfinished_call_text(message), run.emit)
    else:
        batch = await _execute(run, message, meter=run.meter, trace=run.trace, offered=run.offered)
    _record(run, batch)
    run.held = batch.held
    return batch.messages, batch.terminate


def decided_held_calls(
    context: AgentContext, config: AgentLoopConfig | None
) -> tuple[AssistantMessage, list[ToolCall], list[ToolCall]] | None:
    """The last assistant message, its held calls that have a decision in
    `config.approvals`, and those that still have none; None when no held call is decided."""
    approvals = config.approvals if config is not None else None
    held = held_tool_calls(context.messages) if approvals else None
    if held is None or approvals is None:
        return None
    message, calls = held
    decided = [call for call in calls if call.id in approvals]
    if not decided:
        return None
    return message, decided, [call for call in calls if call.id not in approvals]


async def answer_held_calls(
    run: LoopRun, message: AssistantMessage, decided: list[ToolCall], undecided: list[ToolCall]
) -> tuple[TurnContext, bool]:
    """The first turn of a resumed run: the decided held calls run as one batch (approved
    ones through the whole pipeline, traced and counted against the run's limits as any
    batch; rejected ones answered with the reason), then `turn_end` for the assistant
    message they belong to. Returns the turn and whether the batch terminates."""
    run.turn_message = message
    run.unanswered = decided
    batch = await _execute(run, message, meter=run.meter, trace=run.trace, only=decided)
    _record(run, batch)
    run.held = [*undecided, *batch.held]
    await run.end_turn(message, batch.messages)
    return TurnContext(message, batch.messages, run.context, run.new_messages), batch.terminate


async def _execute(
    run: LoopRun,
    message: AssistantMessage,
    *,
    meter: UsageMeter | None = None,
    trace: RunSpan | None = None,
    only: list[ToolCall] | None = None,
    offered: frozenset[str] | None = None,
) -> ToolCallBatch:
    """`execute_tool_calls` for the run. Cancelled or interrupted meanwhile, the results
    every call got are appended before the exception goes on."""
    answered: list[ToolResultMessage] = []
    try:
        return await execute_tool_calls(
            run.context,
            message,
            run.config,
            run.signal,
            run.emit,
            answered=answered,
            meter=meter,
            trace=trace,
            only=only,
            offered=offered,
        )
    except BaseException:
        if answered:
            _record(run, ToolCallBatch(answered, False))
        raise


def _record(run: LoopRun, batch: ToolCallBatch) -> None:
    for result in batch.messages:
        run.append(result)
    run.unanswered = []


def _unfinished_call_text(message: AssistantMessage) -> str:
    if message.stop_reason == "aborted":
        return "not executed: the run was aborted"
    return f"not executed: the model's response ended in an error: {message.error_message}"


# ── when something raises ───────────────────────────────────────────────────


async def _end_cancelled_turn(run: LoopRun, exc: BaseException) -> None:
    """The run's task was cancelled (e.g. `asyncio.wait_for` around it) or a
    `KeyboardInterrupt`/`SystemExit` is going through it: answer the tool calls left open,
    end the model call cut short with an "aborted" message, and emit `turn_end`, as
    an abort does; the caller emits `agent_end` and re-raises."""
    if not run.in_turn:
        return
    cancelled = isinstance(exc, asyncio.CancelledError)
    message = run.turn_message
    if message is None:  # cancelled during the model call
        why = "cancelled" if cancelled else f"interrupted ({type(exc).__name__})"
        message = assistant_message(run.config, "aborted", f"The run's task was {why}")
        await run.emit_message(message)
        run.append(message)
    if run.unanswered:
        text = CANCELLED_TEXT if cancelled else interrupted_text(exc)
        batch = await fail_tool_calls(run.unanswered, text, run.emit)
        for result in batch.messages:
            run.append(result)
        run.unanswered = []
    calls = {call.id for call in message.tool_calls}
    results = [
        m for m in run.new_messages if isinstance(m, ToolResultMessage) and m.tool_call_id in calls
    ]
    await run.end_turn(message, results)


async def _error_turn(run: LoopRun, text: str) -> None:
    """The run cannot go on (the output retries are used up, the model is cut off again and
    again); an error message says why, in a turn of its own (no model call)."""
    await run.start_turn()
    message = assistant_message(run.config, "error", text)
    await run.emit_message(message)
    run.append(message)
    await run.end_turn(message, [])


async def _fail_run(run: LoopRun, exc: BaseException) -> None:
    """Answer any tool calls left open, then an error assistant message and
    `turn_end`; the caller emits `agent_end`."""
    text = exception_summary(exc)
    if not run.in_turn:
        await run.start_turn()
    results: list[ToolResultMessage] = []
    if run.unanswered:
        try:
            batch = await fail_tool_calls(run.unanswered, f"not executed: {text}", run.emit)
            results = batch.messages
        except Exception:
            logger.exception("could not answer the open tool calls")
        for result in results:
            run.append(result)
        run.unanswered = []
    message = assistant_message(run.config, "error", text)
    await run.emit_message(message)
    run.append(message)
    await run.end_turn(message, results)


def _end_trace(trace: RunSpan, run: LoopRun, reason: str) -> None:
    last = next((m for m in reversed(run.new_messages) if isinstance(m, AssistantMessage)), None)
    error = last.error_message if last is not None else None
    try:
        trace.end(reason, run.new_messages, error)
    except Exception:
        logger.exception("could not end the run's span")
