"""The `Agent`'s runs: one pass of the loop over the agent's state (DESIGN R-5.1b, R-6.3, R-6.5).

`RunDriver` holds what every run of one agent shares (the model call, the hooks, `on_event`
and the listeners) and `run` drives the loop once: it resolves the model, builds the loop
config, reduces each event into the state (and the session) before `on_event` and the
listeners see it, and answers with the run's final message; `run_sent` runs a prompt from
the agent's channel. The `Agent` keeps the rule of one run at a time (it sets `running` when
it claims a run); the driver trusts it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

from yiemagent.agent._guardrails import Trip
from yiemagent.agent._team import TeamRun
from yiemagent.agent.approvals import HeldCalls
from yiemagent.agent.held_calls import NestedHold
from yiemagent.agent.queues import TurnQueues
from yiemagent.agent.session_log import SessionLog
from yiemagent.agent.state import (
    AgentStateView,
    RunRecorder,
    final_message,
    placeholder_model,
    reducer_for,
)
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    Model,
    OutputSpec,
    StreamFn,
    ToolApproval,
    TurnContext,
    TurnEndEvent,
    TurnUpdate,
)
from yiemagent.types.callbacks import EventSink, GuardedSink, guarded_sink, maybe_await

if TYPE_CHECKING:
    from yiemagent.loop import IncrementalConverter

__all__ = ["Listener", "RunDriver", "RunOptions"]

logger = logging.getLogger("yiemagent.agent")

Listener: TypeAlias = Callable[[AgentEvent, AbortSignal], "Awaitable[None] | None"]
"""`subscribe` listeners: `(event, signal)`, plain or async (awaited in order)."""


class RunOptions(Protocol):
    """The run options an `Agent` exposes as attributes; read when each run starts."""

    @property
    def tool_execution(self) -> str:
        """How a batch runs: "parallel" or "sequential" (R-4.8, R-4.9)."""
        ...

    @property
    def max_turns(self) -> int | None:
        """Model calls a run may make; None: no cap (R-5.5 "max_turns")."""
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
        """Invalid outputs sent back to the model before a run ends in error (§14)."""
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
        self._session = session
        self._options = options
        self._hooks = hooks
        self.stream_fn = stream_fn
        """The agent's model call (None: the provider dispatch)."""
        self.placeholder = placeholder
        self._prepare_next_turn = prepare_next_turn
        self._on_event = None if on_event is None else guarded_sink(on_event, "on_event")
        self._listeners: list[tuple[Listener, GuardedSink]] = []
        self._listeners_snapshot: tuple[GuardedSink, ...] = ()
        self.running = False
        """Whether a run is active (or claimed and about to start)."""
        self.signal: AbortSignal | None = None
        """The active run's abort signal; None when no run is active."""
        self._transcript = LoopTranscript()
        self.last_end: AgentEndEvent | None = None
        """The last run's `AgentEndEvent` (None before the first, or if it never ended)."""
        self.held = HeldCalls.from_record(session.held_record if session else None)
        """Tool calls held for approval, and the decisions on them (DESIGN §14)."""
        self.last_trip: Trip | None = None
        """The guardrail that stopped the last run, if one did (DESIGN §17)."""
        self._team: TeamRun | None = None
        self._resumes: dict[str, NestedHold] = {}

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Add `listener` after the others; returns the function that removes it."""
        entry = (listener, guarded_sink(listener, "agent listener"))
        self._listeners.append(entry)
        self._listeners_snapshot = tuple(guarded for _, guarded in self._listeners)

        def unsubscribe() -> None:
            if entry in self._listeners:
                self._listeners.remove(entry)
                self._listeners_snapshot = tuple(guarded for _, guarded in self._listeners)

        return unsubscribe

    async def run_sent(self, prompts: list[AgentMessage]) -> AssistantMessage:
        """Run a sent prompt (R-6.4); a failure before the run starts becomes its answer,
        and so do tool calls held for approval (the prompt is not run, DESIGN §14)."""
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
    ) -> tuple[AssistantMessage, list[AgentMessage]]:
        """Run the loop once: from `prompts`, or continuing the transcript when None.
        `output`: the run's output type; `approvals`: decisions on held tool calls (DESIGN
        §14). The run's `AgentEndEvent` is `last_end` afterwards.

        Returns:
            The run's answer (`final_message`, R-6.3) and the messages the run added.
        """
        from yiemagent.loop import run_agent_loop, run_agent_loop_continue

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
        )
        try:
            model = team.model()
            options = self._options
            config = dataclasses.replace(
                self._hooks,
                model=model,
                get_steering_messages=self._queues.poll_steering,
                get_follow_up_messages=self._queues.poll_follow_ups,
                tool_execution=(
                    "sequential" if options.tool_execution == "sequential" else "parallel"
                ),
                prepare_next_turn=self._next_turn,
                max_turns=options.max_turns,
                session_id=options.session_id,
                max_retry_delay_ms=options.max_retry_delay_ms,
                output_type=output,
                output_retries=options.output_retries,
                approvals=approvals,
                agent_name=team.active.name,
            )
            messages = self._transcript.for_run(state.messages)
            context = AgentContext(team.system_prompt(), messages, team.tools())
            converter = self._transcript.converter
            emit = team.wrap(self._make_emit(signal, recorder))
            stream_fn = team.stream_fn(self.stream_fn)
            limits, tracer = config.usage_limits, config.tracer_provider
            async with team.running(emit, prompts, limits=limits, tracer_provider=tracer):
                if prompts is None:
                    new = await run_agent_loop_continue(
                        context, config, emit, signal, stream_fn, converter=converter
                    )
                else:
                    new = await run_agent_loop(
                        prompts, context, config, emit, signal, stream_fn, converter=converter
                    )
            answer = final_message(new, recorder, model, signal.aborted)
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
        a rejected call still gets its rejection (DESIGN §14)."""
        decisions = self.held.resume_decisions()
        self._resumes = dict(self.held.nested)
        if self._session is not None:
            self._session.save_held(self.held.resuming_record())
        return decisions

    def resolve_model(self) -> Model:
        """The agent's model; the embedded one is loaded on first use (R-6.1)."""
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
            update = await maybe_await(self._prepare_next_turn(turn))
        context = update.context if update is not None and update.context else turn.context
        team = self._team
        if team is None:
            context.tools = self._state.tools
            return update
        context.tools = team.tools()
        model = team.apply_handoff(context)  # DESIGN §17: the target speaks from here on
        if model is not None:
            update = dataclasses.replace(update or TurnUpdate(), model=model)
        return update

    def _make_emit(self, signal: AbortSignal, recorder: RunRecorder) -> EventSink:
        """The run's event sink: reduce into the state (and the session, the queues, the
        run's recorder), then `on_event(event)`, then each listener `(event, signal)`,
        awaited in order; a raising one is logged (R-5.1b). It runs for every event (4 a tool
        call, DESIGN §9): a plain call, one dict lookup by the event's class for what the run
        does with it, and a coroutine only when there is someone to tell."""
        state, queues, session = self._state, self._queues, self._session
        steps: dict[type[Any], Callable[[Any], None]] = {}

        def step_for(kind: type[Any]) -> Callable[[Any], None]:
            fold: Callable[[Any], None] = functools.partial(reducer_for(kind), state)
            step = fold
            if issubclass(kind, MessageStartEvent):

                def step(event: Any) -> None:
                    fold(event)
                    queues.delivered(event.message)

            elif issubclass(kind, MessageEndEvent) and session is not None:

                def step(event: Any) -> None:
                    fold(event)
                    session.record(event.message)  # never raises; logs (docs/sessions.md)

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
            step(event)
            if self._on_event is None and not self._listeners_snapshot:
                return None
            return self._notify(event, signal)

        return emit

    async def _notify(self, event: AgentEvent, signal: AbortSignal) -> None:
        if self._on_event is not None:
            await self._on_event(event)
        for listener in self._listeners_snapshot:
            await listener(event, signal)


class LoopTranscript:
    """The loop's copy of the agent's transcript, kept from run to run (DESIGN §9: a turn's
    cost does not grow with the history).

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
