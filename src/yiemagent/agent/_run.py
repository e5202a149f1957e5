"""How an `Agent` runs (DESIGN §6): the run driver, the state it reduces each run's events
into, and the errors a failed run raises.

`RunDriver` holds what every run of one agent shares (the model call, the hooks, `on_event`
and the listeners) and `run` drives the loop once: it resolves the model, builds the loop
config, reduces each event into the state (and the session) before `on_event` and the
listeners see it, and answers with the run's final message; `run_sent` runs a prompt from
the agent's prompt channel. The `Agent` keeps the rule of one run at a time (it sets
`running` when it claims a run); the driver trusts it.

`AgentStateView` is an `AgentState` whose `messages` copy on assignment and whose `tools`
mirror the agent's `ToolStore`; `reduce_event` folds events into it, as pi's `Agent` does;
`RunRecorder` and `final_message` build a run's answer. A run polls the agent's steering
and follow-up queues (`_channels.TurnQueues`).

And what a run that ends in error raises from `Agent.prompt` and `Agent.resume`:
`AgentRunError`, `UsageLimitExceeded`, `GuardrailTripped`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from yiemagent.agent._channels import TurnQueues
from yiemagent.agent._guardrails import Trip, TrippedInputs
from yiemagent.agent._session_log import SessionLog
from yiemagent.agent._team import HandoffViews, HeldCalls, NestedHold, TeamRun
from yiemagent.errors import ConfigError, YiemAgentError
from yiemagent.types import (
    THINKING_LEVELS,
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentState,
    AgentTool,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    OutputSpec,
    StreamFn,
    TextContent,
    ThinkingLevel,
    ToolApproval,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    TurnContext,
    TurnEndEvent,
    TurnUpdate,
)
from yiemagent.types.callbacks import (
    EventSink,
    GuardedSink,
    RunTasks,
    guarded_sink,
    in_run_tasks,
    maybe_await,
    run_tasks,
)
from yiemagent.types.context import as_turn_update
from yiemagent.types.messages import to_messages as to_messages_of

if TYPE_CHECKING:
    from yiemagent.loop import IncrementalConverter
    from yiemagent.tools import ToolStore

__all__ = [
    "AgentRunError",
    "AgentStateView",
    "GuardrailTripped",
    "Listener",
    "ModelInput",
    "RunDriver",
    "UsageLimitExceeded",
    "placeholder_model",
    "reduce_event",
    "to_messages",
    "to_model",
    "to_tool_list",
]

logger = logging.getLogger(__name__)


Listener: TypeAlias = Callable[[AgentEvent, AbortSignal], "Awaitable[None] | None"]
"""`subscribe` listeners: `(event, signal)`, plain or async (awaited in order)."""


# ── the run ──────────────────────────────────────────────────────────────────


class RunOptions(Protocol):
    """The run options an `Agent` exposes as attributes; read when each run starts."""

    @property
    def tool_execution(self) -> str:
        """How a batch runs: "parallel" or "sequential"."""
        ...

    @property
    def max_turns(self) -> int | None:
        """Model calls a run may make; None: no cap (the run ends "max_turns")."""
        ...

    @property
    def session_id(self) -> str | None:
        """Handed to the provider with each call (`ProviderOptions.session_id`)."""
        ...

    @property
    def max_retry_delay_ms(self) -> int | None:
        """Longest retry wait (ms) a provider accepts (`ProviderOptions`)."""
        ...

    @property
    def output_retries(self) -> int:
        """Invalid outputs sent back to the model before a run ends in error."""
        ...


class RunDriver:
    """Runs the loop for one `Agent`, one run at a time, on the event loop thread.

    Invariants: one driver per agent, sharing the agent's state, queues and session;
    `running` says whether a run is active (the agent sets it when it claims a run) and
    `signal` is that run's abort signal, None between runs; listeners are delivered from a
    snapshot taken when they change, so (un)subscribing during an event is safe.

    `stream_fn` is what the loop calls for the model (the Agent's `agent_stream_fn`, built
    once: `llm_call`, `stream_fn`, `prepare_context`); `placeholder` names the stand-in
    model of an agent given no model but an `llm_call` ("llm_call") or a `stream_fn`
    ("custom"), None: the default model is loaded on first use.
    """

    def __init__(
        self,
        state: AgentStateView,
        queues: TurnQueues[AgentMessage],
        session: SessionLog | None,
        options: RunOptions,
        *,
        hooks: AgentLoopConfig,
        stream_fn: StreamFn | None,
        placeholder: str | None,
        prepare_next_turn: Callable[[TurnContext], Any] | None,
        on_event: Callable[[AgentEvent], Any] | None,
    ) -> None:
        self._state = state
        self._queues = queues
        self._tasks: RunTasks = set()
        """The run's task and those it made to call user code (`run_tasks`)."""
        """The task driving the active run."""
        self._session = session
        self._options = options
        self.hooks = hooks
        """The agent's hooks and bounds (`AgentLoopConfig` fields); each run's config
        starts from them (in a team, the speaking agent's tool hooks are asked too)."""
        self.stream_fn = stream_fn
        """The agent's model call (None: the provider dispatch)."""
        self.placeholder = placeholder
        self._prepare_next_turn = prepare_next_turn
        self._on_event = None if on_event is None else guarded_sink(on_event, "on_event")
        self._listeners: list[tuple[object, GuardedSink]] = []
        """(what the user subscribed, the sink that calls it), in subscription order."""
        self._listeners_snapshot: tuple[GuardedSink, ...] = ()
        self.running = False
        """Whether a run is active (or claimed and about to start)."""
        self.signal: AbortSignal | None = None
        """The active run's abort signal; None when no run is active."""
        self._transcript = LoopTranscript()
        self.last_end: AgentEndEvent | None = None
        """The last run's `AgentEndEvent` (None before the first, or if it never ended)."""
        self.held = HeldCalls.from_record(session.held_record if session else None)
        """Tool calls held for approval, and the decisions on them."""
        self.last_trip: Trip | None = None
        """The guardrail that stopped the last run, if one did."""
        self._team: TeamRun | None = None
        self._resumes: dict[str, NestedHold] = {}
        self._views = HandoffViews()
        self._trips = TrippedInputs()

    def subscribe(self, listener: Listener, key: object = None) -> Callable[[], None]:
        """Add `listener` after the others, unless one subscribed as `key` (default: the
        listener itself; compared with `==`, so `obj.method` twice is one) already is: a
        listener is called once per event however often it is subscribed (pi's listener
        `Set`). Returns the function that removes it (any of them, when subscribed again)."""
        key = listener if key is None else key
        entry = next((e for e in self._listeners if e[0] == key), None)
        if entry is None:
            entry = (key, guarded_sink(listener, "agent listener"))
            self._listeners.append(entry)
            self._listeners_snapshot = tuple(guarded for _, guarded in self._listeners)
        subscribed = entry

        def unsubscribe() -> None:
            if subscribed in self._listeners:
                self._listeners.remove(subscribed)
                self._listeners_snapshot = tuple(guarded for _, guarded in self._listeners)

        return unsubscribe

    async def run_sent(self, prompts: list[AgentMessage]) -> AssistantMessage:
        """Run a sent prompt; a failure before the run starts becomes its answer,
        and so do tool calls held for approval (the prompt is not run)."""
        self.running = True
        try:
            self.held.check_none_pending(self._state.messages, "run a sent prompt")
            answer, _ = await self.run(prompts)
            return answer
        except Exception as exc:  # a setup failure, e.g. the embedded model is missing
            logger.exception("a sent prompt failed before its run started")
            return AssistantMessage(stop_reason="error", error_message=str(exc))
        finally:
            self.running = False

    async def run(
        self,
        prompts: list[AgentMessage] | None,
        *,
        output: OutputSpec[Any] | None = None,
        approvals: Mapping[str, ToolApproval] | None = None,
        tools: Sequence[AgentTool] = (),
        instructions: str | None = None,
    ) -> tuple[AssistantMessage, list[AgentMessage]]:
        """Run the loop once: from `prompts`, or continuing the transcript when None.
        `output`: the run's output type; `approvals`: decisions on held tool calls; `tools`
        and `instructions`: the run's own tools and system text, for each agent that speaks
        in it. The run's
        `AgentEndEvent` is `last_end` afterwards.

        Returns:
            The run's answer (`final_message`) and the messages the run added.
        """
        with run_tasks(self._tasks):
            return await self._run(prompts, output, approvals, tools, instructions)

    def inside_run(self) -> bool:
        """Whether the caller runs in a task of the run: the one that drives it (a listener,
        a hook, a tool of a sequential batch) or one the run made (a parallel tool, an async
        tool past its first wait, a listener of a tool's update, a guardrail); waiting there
        for the run's end would never end. A task such code starts is not the run's: it may
        wait for the end."""
        return in_run_tasks(self._tasks)

    async def _run(
        self,
        prompts: list[AgentMessage] | None,
        output: OutputSpec[Any] | None,
        approvals: Mapping[str, ToolApproval] | None,
        tools: Sequence[AgentTool],
        instructions: str | None,
    ) -> tuple[AssistantMessage, list[AgentMessage]]:
        from yiemagent.loop import run_agent_loop, run_agent_loop_continue

        if self._session is not None:
            self._session.check_writer()
        signal = AbortSignal()
        self.signal = signal
        state = self._state
        state.active_run = True
        state.error_message = None
        state.streaming_message = None
        recorder = RunRecorder()
        self.last_end = None
        self.last_trip = None
        resumes, self._resumes = self._resumes, {}
        team = self._team = TeamRun(
            self._options,
            state.messages,
            signal,
            output=output,
            resumes=resumes,
            views=self._views,
            trips=self._trips,
            tools=tools,
            instructions=instructions,
        )
        try:
            model = team.model()
            reasoning = team.active.state.reasoning  # the speaking agent's, as its model
            warn_no_reasoning(model, reasoning)
            options = self._options
            config = dataclasses.replace(
                self.hooks,
                **team.tool_hooks(),
                model=model,
                get_steering_messages=team.screened(self._queues.poll_steering),
                get_follow_up_messages=team.screened(self._queues.poll_follow_ups),
                tool_execution=(
                    "sequential" if options.tool_execution == "sequential" else "parallel"
                ),
                prepare_next_turn=self._next_turn,
                max_turns=options.max_turns,
                session_id=options.session_id,
                max_retry_delay_ms=options.max_retry_delay_ms,
                reasoning=reasoning,
                output_type=output,
                output_retries=options.output_retries,
                approvals=approvals,
                agent_name=team.active.name,
                agent_description=team.active.description,
            )
            messages = self._transcript.for_run(state.messages)
            context = AgentContext(team.system_prompt(), await team.view(messages), team.tools())
            converter = self._transcript.converter
            emit = team.wrap(self._make_emit(signal, recorder))
            stream_fn = team.stream_fn(self.stream_fn)
            limits, tracer = config.usage_limits, config.tracer_provider
            async with team.running(
                emit,
                prompts,
                limits=limits,
                tracer_provider=tracer,
                trace_content=config.trace_content,
            ):
                if prompts is None:
                    new = await run_agent_loop_continue(
                        context, config, emit, signal, stream_fn, converter=converter
                    )
                else:
                    new = await run_agent_loop(
                        prompts, context, config, emit, signal, stream_fn, converter=converter
                    )
            answer = final_message(new, recorder, model, signal.aborted, messages)
            if answer.stop_reason in ("error", "aborted") and state.error_message is None:
                state.error_message = answer.error_message  # e.g. aborted during the tools
            return answer, new
        except asyncio.CancelledError:
            signal.abort("the run's task was cancelled")
            raise
        finally:
            self.last_end = recorder.end
            self.last_trip = team.guards.trip
            state.active_agent = team.finish()
            self._team = None
            self._after_run(recorder.end, approvals, team)
            self._queues.restore()
            self.signal = None
            state.active_run = False
            state.streaming_message = None
            state.pending_tool_calls = set()

    def _after_run(
        self,
        end: AgentEndEvent | None,
        approvals: Mapping[str, ToolApproval] | None,
        team: TeamRun,
    ) -> None:
        """Hold the calls of a run that ended awaiting approval (stored with the session);
        forget the decisions a resumed run has applied."""
        if end is not None and end.reason == "awaiting_approval":
            self.held.hold(self._state.messages, team.holds)
        elif approvals:
            self.held.clear()
        else:
            return
        if self._session is not None:
            self._session.save_held(self.held.to_record())

    def start_resume(self) -> dict[str, ToolApproval]:
        """The decisions for a resumed run. The stored record becomes a `resuming` one
        first: a crash during the run never runs an approved call twice (at most once), and
        a rejected call still gets its rejection."""
        decisions = self.held.resume_decisions()
        self._resumes = dict(self.held.nested)
        if self._session is not None:
            self._session.save_held(self.held.resuming_record())
        return decisions

    def resolve_model(self) -> Model:
        """The agent's model; the embedded one is loaded on first use."""
        model = self._state.model
        if model is not None:
            return model
        if self.placeholder is not None:
            return placeholder_model(self.placeholder)
        from yiemagent.ai.models import DEFAULT_MODEL, get_model

        model = get_model(DEFAULT_MODEL)  # the embedded model, on first use
        self._state.model = model
        return model

    async def _next_turn(self, turn: TurnContext) -> TurnUpdate | None:
        """The loop's `prepare_next_turn`: the user's hook, then the tools rebuilt from the
        store (a tool registered during the turn is offered now)."""
        update = None
        if self._prepare_next_turn is not None:
            update = as_turn_update(await maybe_await(self._prepare_next_turn(turn)))
        context = update.context if update is not None and update.context else turn.context
        team = self._team
        if team is None:
            context.tools = self._state.tools
            return update
        context.tools = team.tools()
        model = await team.apply_handoff(context)  # the target speaks from here on, at its level
        if model is not None:
            level = team.active.state.reasoning
            warn_no_reasoning(model, level)
            update = dataclasses.replace(
                update or TurnUpdate(), model=model, reasoning=level or "off"
            )
        return update

    def _make_emit(self, signal: AbortSignal, recorder: RunRecorder) -> EventSink:
        """The run's event sink: reduce into the state (and the session, the queues, the
        run's recorder), then `on_event(event)`, then each listener `(event, signal)`,
        awaited in order; a raising one is logged. It runs for every event (4 a tool
        call): a plain call, one dict lookup by the event's class for what the run
        does with it, and a coroutine only when there is someone to tell or a message to
        store (its append, awaited on the session's worker thread, comes first)."""
        state, queues, session = self._state, self._queues, self._session
        steps: dict[type[Any], Callable[[Any], Awaitable[bool] | None]] = {}

        def step_for(kind: type[Any]) -> Callable[[Any], Awaitable[bool] | None]:
            fold: Callable[[Any], None] = functools.partial(reducer_for(kind), state)
            step: Callable[[Any], Awaitable[bool] | None] = fold
            if issubclass(kind, MessageStartEvent):

                def step(event: Any) -> None:
                    fold(event)
                    queues.delivered(event.message)

            elif issubclass(kind, MessageEndEvent) and session is not None:

                def step(event: Any) -> Awaitable[bool] | None:
                    fold(event)
                    return session.record(event.message)  # never raises; logs

            elif issubclass(kind, TurnEndEvent | AgentEndEvent):

                def step(event: Any) -> None:
                    fold(event)
                    recorder.record(event)

            steps[kind] = step
            return step

        def emit(event: AgentEvent) -> Awaitable[None] | None:
            step = steps.get(type(event))
            if step is None:
                step = step_for(type(event))
            storing = step(event)
            if storing is not None:
                return self._notify_stored(storing, event, signal)
            if self._on_event is None and not self._listeners_snapshot:
                return None
            return self._notify(event, signal)

        return emit

    async def _notify_stored(
        self, storing: Awaitable[bool], event: AgentEvent, signal: AbortSignal
    ) -> None:
        """Wait for the message's append (on the session's worker thread), then
        `_notify`: whoever is told of a message finds it stored (docs/sessions.md)."""
        await storing
        if self._on_event is not None or self._listeners_snapshot:
            await self._notify(event, signal)

    async def _notify(self, event: AgentEvent, signal: AbortSignal) -> None:
        """Tell `on_event`, then each listener. One that is still waiting `ABORT_GRACE_S`
        after the run's abort is left behind, so a listener that ignores the abort cannot
        keep the run from ending."""
        if self._on_event is not None:
            pending = self._on_event.now(event)
            if pending is not None:
                await _within_abort_grace(pending, signal, "on_event", event)
        for listener in self._listeners_snapshot:
            pending = listener.now(event, signal)
            if pending is not None:
                await _within_abort_grace(pending, signal, "an agent listener", event)


async def _within_abort_grace(
    pending: Awaitable[Any], signal: AbortSignal, what: str, event: AgentEvent
) -> None:
    """Await a `GuardedSink`'s `pending` work (it never raises) within the abort grace;
    one that outlives it is logged and abandoned."""
    from yiemagent.loop import within_abort_grace

    try:
        await within_abort_grace(pending, signal, what)
    except YiemAgentError as exc:
        logger.warning("%s on %s; the run goes on without it", exc, event.type)


class LoopTranscript:
    """The loop's copy of the agent's transcript, kept from run to run, so a
    turn's cost does not grow with the history.

    The loop appends each message to its `context.messages` while the reducer appends the
    same message to `state.messages`, so after a run both lists hold the same objects. The
    next run reuses the loop's list — no O(history) copy — and the same
    `IncrementalConverter`, which then converts only the new messages. The reuse holds
    while `state.messages` is the same list, of the same length, with the same first and last
    message; otherwise (an assignment, an append by hand, an aborted run that left the lists
    apart) the list is copied afresh. Like `IncrementalConverter`, an edit of the middle of
    `state.messages` in place is not seen: assign a new list to change the middle.
    """

    __slots__ = ("_copy", "_of", "converter")

    def __init__(self) -> None:
        self._copy: list[AgentMessage] = []
        self._of: list[AgentMessage] | None = None
        self.converter: IncrementalConverter | None = None
        """Shared by every run of the agent (made at the first run: the loop loads lazily)."""

    def for_run(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """The list to give the loop as `context.messages` for the next run."""
        if self.converter is None:
            from yiemagent.loop import IncrementalConverter

            self.converter = IncrementalConverter()
        copy = self._copy
        if (
            messages is self._of
            and len(copy) == len(messages)
            and (not copy or (copy[0] is messages[0] and copy[-1] is messages[-1]))
        ):
            return copy
        self._copy = list(messages)
        self._of = messages
        return self._copy


# ── what a run that ends in error raises ─────────────────────────────────────


class AgentRunError(YiemAgentError):
    """A run started by `Agent.prompt` or `Agent.resume` ended in error.

    The run is over and the agent is usable again; the run's messages are in its
    transcript as with any run. An aborted run does not raise (it returns its "aborted"
    message), and `send` / `take_response` hand back the error message instead.

    Attributes:
        message: the run's final assistant message (stop reason "error"); its
            `error_message` is this exception's text.
        new_messages: the messages the run added, prompts first.
    """

    def __init__(self, message: AssistantMessage, new_messages: Sequence[AgentMessage]) -> None:
        self.message = message
        self.new_messages: list[AgentMessage] = list(new_messages)
        super().__init__(message.error_message or "the run ended in an error")


class UsageLimitExceeded(AgentRunError):
    """A run started by `Agent.prompt` or `Agent.resume` was stopped by its `UsageLimits`
    (`AgentEndEvent.reason` "usage_limit"); the text names the limit and the
    amount used, and every tool call of the run has its result."""


class GuardrailTripped(AgentRunError):
    """A guardrail stopped a run started by `Agent.prompt` or `Agent.resume`
    (`AgentEndEvent.reason` "guardrail"). The tripped answer is not returned
    and not in the transcript (the run's last message is an error message saying what
    tripped); every tool call has its result.

    Attributes:
        kind: "input" or "output".
        guardrail: the guardrail's name (its function's `__name__`).
        reason: the guardrail's message (its error text when it raised).
    """

    def __init__(
        self,
        message: AssistantMessage,
        new_messages: Sequence[AgentMessage],
        kind: str,
        guardrail: str,
        reason: str,
    ) -> None:
        super().__init__(message, new_messages)
        self.kind = kind
        self.guardrail = guardrail
        self.reason = reason


# ── the state ────────────────────────────────────────────────────────────────


class AgentStateView(AgentState):
    """An `Agent`'s state: assigning `messages` stores a copy of the list; `tools` is
    the tool store's tools in registration order, and assigning it replaces them."""

    __slots__ = ("_lent", "_messages", "_model", "_pending", "_reasoning", "_store", "on_assign")

    def __init__(self, store: ToolStore) -> None:  # no super().__init__: it would set `tools`
        self._store = store
        self._messages: list[AgentMessage] = []
        self.on_assign: Callable[[list[AgentMessage]], None] | None = None
        """Called with the new list before an assignment to `messages` takes effect (the
        agent's session rewrites the stored transcript); if it raises, nothing changes."""
        self.system_prompt = ""
        self._model: Model | None = None
        self._reasoning: ThinkingLevel | None = None
        self.active_run = False
        self.streaming_message = None
        self._pending: set[str] = set()
        self._lent = False
        """Whether `_pending` was handed out (then the next change makes a new set)."""
        self.error_message = None
        self.active_agent = None

    @property
    def model(self) -> Model | None:
        """The model of the next run (None: the embedded model, loaded on first use).
        Assign a `Model`, a model id ("openai/gpt-4o-mini", looked up with `get_model` at
        once) or a list of them tried in order, as `Agent(model=...)` takes."""
        return self._model

    @model.setter
    def model(self, value: ModelInput | None) -> None:
        self._model = to_model(value, what="state.model")

    @property
    def reasoning(self) -> ThinkingLevel | None:
        """How hard the model thinks in every call of the next run ("minimal", "low",
        "medium", "high", "xhigh"), or None for no thinking; assign one of them (or "off",
        stored as None), as `Agent(reasoning=...)` takes it."""
        return self._reasoning

    @reasoning.setter
    def reasoning(self, value: object) -> None:
        self._reasoning = to_reasoning(value, what="state.reasoning")

    @property
    def pending_tool_calls(self) -> set[str]:
        """The ids of the calls between their `tool_execution_start` and `_end`. A set once
        read never changes under its reader: the next start or end makes a new one (and only
        then, so a run nobody watches copies none). Read it on the agent's event
        loop thread (listeners do), like `messages`, which the agent appends to in place."""
        self._lent = True
        return self._pending

    @pending_tool_calls.setter
    def pending_tool_calls(self, value: set[str]) -> None:
        self._pending = value
        self._lent = True  # the caller holds it

    @property
    def messages(self) -> list[AgentMessage]:
        """The transcript (the agent appends each message at its `message_end`)."""
        return self._messages

    @messages.setter
    def messages(self, value: Iterable[AgentMessage]) -> None:
        messages = to_messages(value, what="state.messages")
        if self.on_assign is not None:
            self.on_assign(messages)
        self._messages = messages

    @property
    def tools(self) -> list[AgentTool]:
        """The tools offered on the next turn (a new list each time)."""
        return list(self._store.tools.values())

    @tools.setter
    def tools(self, value: Any) -> None:
        new = to_tool_list(value)
        names: set[str] = set()
        for tool in new:  # all checked before the store changes: a refusal keeps the old tools
            if tool.name in names:
                raise ConfigError(
                    f"two different tools named {tool.name!r} in state.tools: tool names must "
                    "be unique; rename one (@tool(name=...)) or drop it"
                )
            names.add(tool.name)
        self._store.clear()
        for tool in new:
            self._store.register(tool)

    def clear(self) -> None:
        """Empty the transcript (through `on_assign`: the stored session too) and the run's
        fields: no streaming message, no pending tool calls, no error (`Agent.reset`)."""
        self.messages = []
        self.streaming_message = None
        self.pending_tool_calls = set()
        self.error_message = None

    def __repr__(self) -> str:
        return (
            f"AgentState(model={self.model!r}, messages={len(self._messages)}, "
            f"tools={[t.name for t in self.tools]}, active_run={self.active_run}, "
            f"error_message={self.error_message!r})"
        )


def to_messages(value: Any, *, what: str) -> list[AgentMessage]:
    """`yiemagent.types.messages.to_messages` with OpenAI user dicts read by
    `user_message_from_openai`.

    Raises:
        MessageInputError: not a list of messages (also a `ValueError`).
    """
    from yiemagent.ai.openai_wire import user_message_from_openai

    return to_messages_of(value, what=what, from_dict=user_message_from_openai)


ModelInput: TypeAlias = "Model | str | Sequence[Model | str]"
"""A model as an `Agent` takes it: a `Model`, a "provider/id" for `get_model`, or a list of
them tried in order (a `FallbackModel`)."""


def to_model(value: object, *, what: str) -> Model | None:
    """`value` as the agent's `Model`: a "provider/id" string is looked up with `get_model`
    now, so a bad id fails where it is given, not at the first prompt; a list of ids and
    `Model`s becomes a `FallbackModel` trying them in order; None stays None (the embedded
    model, loaded on first use). `what` names the argument in the message.

    Raises:
        ProviderError: a model id `get_model` does not know (its message, unchanged).
        ConfigError: anything else that is not a model, or an empty list.
    """
    if value is None or isinstance(value, Model):
        return value
    from yiemagent.ai.models import get_model

    if isinstance(value, str):
        return get_model(value)
    if isinstance(value, list | tuple) and value and all(isinstance(m, Model | str) for m in value):
        from yiemagent.ai.providers.fallback import FallbackModel

        return FallbackModel([m if isinstance(m, Model) else get_model(m) for m in value])
    raise ConfigError(
        f"{what} must be a model id such as 'openai/gpt-4o-mini', a Model, a list of them "
        f"tried in order, or None for the embedded model, not {value!r}"
    )


def to_reasoning(value: object, *, what: str) -> ThinkingLevel | None:
    """`value` as the agent's reasoning level: one of `THINKING_LEVELS`, or None (and
    "off", pi's spelling of it) for no thinking. `what` names the argument in the message.

    Raises:
        ConfigError: anything else.
    """
    if value is None or value == "off":
        return None
    if isinstance(value, str) and value in THINKING_LEVELS:
        return value
    raise ConfigError(
        f"{what} must be one of {', '.join(map(repr, THINKING_LEVELS))}, or None (or 'off') "
        f"for no thinking, not {value!r}"
    )


def warn_no_reasoning(model: Model, level: ThinkingLevel | None) -> None:
    """Warn (`UserWarning`, once per model) when a reasoning level is asked of `model`,
    which cannot think: the providers send no thinking request for it, so the level has
    no effect, as in openai-agents and pydantic-ai."""
    if level is None or model.reasoning or model.api == "faux":
        return
    name = f"{model.provider}/{model.id}"
    warnings.warn(
        f"reasoning is ignored: {name} is not a reasoning model, so no thinking is asked of it",
        UserWarning,
        stacklevel=2,
    )


def to_tool_list(tools: Any) -> list[AgentTool]:
    """The tools of a `ToolStore`, a name → tool mapping or an iterable of tools, each an
    `AgentTool` or a typed function made a tool as `@tool` makes it (`to_agent_tool`); an
    item an iterable holds twice is one tool.

    Raises:
        ConfigError: something that is neither a tool nor a function, a function `@tool`
            refuses, or a mapping key that is not the tool's name.
    """
    from yiemagent.tools import to_agent_tool

    if tools is None:
        return []
    if hasattr(tools, "tools") and isinstance(tools.tools, Mapping):
        tools = tools.tools
    if isinstance(tools, Mapping):
        result = []
        for key, item in tools.items():
            tool = to_agent_tool(item)
            if key != tool.name:
                raise ConfigError(
                    f"tools[{key!r}] is the tool {tool.name!r}; key each tool by its own name"
                )
            result.append(tool)
        return result
    if isinstance(tools, str | bytes) or not isinstance(tools, Iterable):
        raise ConfigError(
            f"tools must be a ToolStore, a dict of tools or a list of tools, not "
            f"{type(tools).__name__}"
        )
    made: dict[int, tuple[object, AgentTool]] = {}  # the item is kept so its id stays its own
    for item in tools:  # an item given twice (the same function too) is one tool
        if id(item) not in made:
            made[id(item)] = (item, to_agent_tool(item))
    return [made_tool for _, made_tool in made.values()]


def _message_end(state: AgentState, event: MessageEndEvent) -> None:
    message = event.message
    state.messages.append(message)
    if isinstance(message, AssistantMessage):
        state.streaming_message = None
        if message.stop_reason == "error" or message.stop_reason == "aborted":
            state.error_message = message.error_message or message.stop_reason


def _pending_to_change(state: AgentState) -> set[str]:
    """The pending-call set to change in place: never one a reader holds, which stays as
    it was. An `AgentStateView` copies only a set someone has read; a plain `AgentState`
    gets a new set each time."""
    if isinstance(state, AgentStateView):
        if state._lent:
            state._pending, state._lent = set(state._pending), False
        return state._pending
    pending = state.pending_tool_calls = set(state.pending_tool_calls)
    return pending


def _tool_start(state: AgentState, event: ToolExecutionStartEvent) -> None:
    _pending_to_change(state).add(event.tool_call_id)


def _tool_end(state: AgentState, event: ToolExecutionEndEvent) -> None:
    _pending_to_change(state).discard(event.tool_call_id)


def _streaming(state: AgentState, event: MessageStartEvent | MessageUpdateEvent) -> None:
    if isinstance(event.message, AssistantMessage):
        state.streaming_message = event.message


def _agent_end(state: AgentState, event: AgentEndEvent) -> None:
    state.active_run = False
    state.streaming_message = None


_REDUCERS: dict[type[Any], Callable[[AgentState, Any], None]] = {
    MessageEndEvent: _message_end,
    ToolExecutionStartEvent: _tool_start,
    ToolExecutionEndEvent: _tool_end,
    MessageStartEvent: _streaming,
    MessageUpdateEvent: _streaming,
    AgentEndEvent: _agent_end,
}


def _no_change(state: AgentState, event: Any) -> None:
    return None


def reduce_event(state: AgentState, event: AgentEvent) -> None:
    """Fold one event into the state (pi's `Agent.processEvents`). It runs for every
    event: one dict lookup by the event's class finds what it changes."""
    reducer = _REDUCERS.get(type(event))
    if reducer is None:
        reducer = reducer_for(type(event))
    reducer(state, event)


def reducer_for(kind: type[Any]) -> Callable[[AgentState, Any], None]:
    """The function `reduce_event` applies to an event of class `kind`: `(state, event)`.
    An event of a subclass is folded like its base class (looked up once, remembered);
    events that change nothing (turn_start, tool_execution_update, ...) get a no-op."""
    reducer = _REDUCERS.get(kind)
    if reducer is not None:
        return reducer
    for base, candidate in list(_REDUCERS.items()):
        if base is not kind and issubclass(kind, base) and candidate is not _no_change:
            reducer = candidate
            break
    else:
        reducer = _no_change
    _REDUCERS[kind] = reducer
    return reducer


class RunRecorder:
    """What the Agent needs from a run's events to build its answer."""

    __slots__ = ("end", "last_turn")

    def __init__(self) -> None:
        self.end: AgentEndEvent | None = None
        self.last_turn: TurnEndEvent | None = None

    def record(self, event: AgentEvent) -> None:
        """Keep the run's last `turn_end` and its `agent_end`; other events pass."""
        if isinstance(event, TurnEndEvent):
            self.last_turn = event
        elif isinstance(event, AgentEndEvent):
            self.end = event


_ENDS_OF_A_BATCH = ("awaiting_approval", "stop")
"""How a resumed run ends when its held batch alone ends it: holding calls again, or with
the output given beside the held calls (no model call, so no new assistant message)."""


def final_message(
    new: Sequence[AgentMessage],
    recorder: RunRecorder,
    model: Model,
    aborted: bool,
    earlier: Sequence[AgentMessage] = (),
) -> AssistantMessage:
    """A run's answer: after a terminating batch the "tool_use_terminated" summary of
    its results, else the run's last assistant message; a run aborted after
    that message answers with a new, empty "aborted" message (not in the history). A
    resumed run that ends before any model call answers with the message of `earlier`
    (the transcript before it) whose held calls it answered: one that holds calls again
    (a sub-agent's next held call), as the run that first held them did, and one whose
    batch gave the output beside the held calls, as a run never held would."""
    turn = recorder.last_turn
    if recorder.end is not None and recorder.end.reason == "terminate" and turn is not None:
        content: list[Any] = [TextContent("Tool execution completed.")]
        for result in turn.tool_results:
            content.extend(b for b in result.content if isinstance(b, TextContent))
        failed = any(result.is_error for result in turn.tool_results)
        return AssistantMessage(
            content=content,
            api=turn.message.api,
            provider=turn.message.provider,
            model=turn.message.model,
            usage=turn.message.usage,
            compaction_usage=turn.message.compaction_usage,
            stop_reason="tool_use_terminated",
            error_message="One or more tool calls failed" if failed else None,
        )
    last = next((m for m in reversed(new) if isinstance(m, AssistantMessage)), None)
    if last is None and recorder.end is not None and recorder.end.reason in _ENDS_OF_A_BATCH:
        last = next((m for m in reversed(earlier) if isinstance(m, AssistantMessage)), None)
    ended_by_abort = recorder.end is not None and recorder.end.reason == "aborted"
    if last is not None and (last.stop_reason == "aborted" or not ended_by_abort):
        return last
    if last is not None:  # aborted between turns (e.g. during the tools): say so
        return AssistantMessage(
            api=last.api,
            provider=last.provider,
            model=last.model,
            stop_reason="aborted",
            error_message="The run was aborted",
        )
    return AssistantMessage(
        api=model.api,
        provider=model.provider,
        model=model.id,
        stop_reason="aborted" if aborted else "error",
        error_message="The run ended before the model answered",
    )


def placeholder_model(kind: str) -> Model:
    """The `Model` of a run through `llm_call` or a custom `stream_fn` given no model."""
    return Model(id=kind, provider=kind, api=kind, name=kind)
