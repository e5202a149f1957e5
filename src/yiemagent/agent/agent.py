"""The stateful `Agent` (the seeds' `yiemAgent`; DESIGN R-6, seed 000 §1 Step 2.5, §5, §6, §10).

An `Agent` owns a transcript, a `ToolStore` and its queues, and drives the loop
(`yiemagent.loop.run_agent_loop`) one run at a time. Its state is reduced from the run's
events, as pi's `Agent` does. Runs execute in the task that awaits them (`prompt`, `resume`)
or in one worker task that exists only while sent prompts are waiting (`send`); an idle agent
holds no task and no loop-bound object (R-6.7). Each run is driven by the agent's
`RunDriver` (`yiemagent.agent.run`); this module keeps the public API and the rule of one run
at a time.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeVar

from yiemagent.agent._as_tool import agent_as_tool
from yiemagent.agent._guardrails import Guardrail
from yiemagent.agent._team import DEFAULT_MAX_HANDOFFS, Handoff, TeamConfig
from yiemagent.agent.approvals import ApprovalMethods, HeldCalls
from yiemagent.agent.channels import QueueMethods
from yiemagent.agent.errors import GuardrailTripped
from yiemagent.agent.inputs import (
    PromptInput,
    check_options,
    loop_hooks,
    make_store,
    prompt_messages,
    to_messages,
)
from yiemagent.agent.llm_call import FormatMessages, LlmCall, PrepareContext, agent_stream_fn
from yiemagent.agent.output import run_answer
from yiemagent.agent.owned import Closeable, OwnedResources
from yiemagent.agent.queues import Notifier, PromptChannel, QueueMode, TurnQueues
from yiemagent.agent.run import Listener, RunDriver
from yiemagent.agent.session_log import SessionLog
from yiemagent.agent.state import AgentStateView, placeholder_model
from yiemagent.ai.attachments import AttachmentSource, load_attachments, warn_unreadable
from yiemagent.errors import AgentBusyError, ApprovalPendingError, ConfigError
from yiemagent.types import (
    AgentEvent,
    AgentMessage,
    AssistantMessage,
    CacheRetention,
    DocumentContent,
    ImageContent,
    Model,
    OutputMessage,
    OutputSpec,
    StreamFn,
    ToolApproval,
    TurnContext,
    UsageLimits,
)
from yiemagent.types.output import DEFAULT_OUTPUT_RETRIES, output_spec

if TYPE_CHECKING:
    from yiemagent.sessions import SessionStore
    from yiemagent.tools import ToolStore

__all__ = ["Agent"]


OutputT = TypeVar("OutputT", default=None)
"""The agent's output type (`None`: the agent answers in text)."""
R = TypeVar("R")

_BUSY = (
    "the agent is already running; use steer() or follow_up() to add to the current run, "
    "send() to queue a prompt, or await wait_for_idle() first"
)


class Agent(ApprovalMethods, QueueMethods, Generic[OutputT]):
    """A stateful agent: a transcript, a tool store, queues, and one run at a time (R-6).

    `Agent(output_type=T)` is an `Agent[T]`: each `prompt` returns an `OutputMessage[T]`
    whose `output` is the validated value (DESIGN §14, `docs/output.md`); tools with
    `requires_approval` hold their calls for `approve`/`reject` and `resume`
    (`docs/approvals.md`).

    Invariants: at most one run at a time (`prompt`/`resume` raise `AgentBusyError` while
    busy); every state change comes from an event of the run, reduced before listeners see it;
    the tools offered to the model are rebuilt from `tool_store` before every turn, so a tool
    registered mid-run (writeTool) is offered on the next turn. Listeners and hooks run on
    the event loop thread; `steer`, `follow_up` and `abort` may be called from any thread
    (for example from a plain tool on its worker thread).

    See `docs/agent.md`. Arguments as DESIGN R-6.1; hooks may be plain or async. Also, as in
    `AgentLoopConfig`: `tool_timeout_s` (seconds one tool call may take when the tool sets
    no `timeout_s`; `None`: no bound — a plain-function tool on a thread cannot be stopped
    at that bound, only abandoned; use `isolation="process"` for that), `stream_idle_timeout_s`
    (seconds a provider stream may stay silent, default 120, R-5.8) and `max_parallel_tools`
    (most tool calls running at once in a parallel batch, R-4.9), `cache_retention`
    (prompt caching: "short", the default, "long" or "none"; DESIGN §21).

    Raises:
        ConfigError: an invalid argument; the message says what to change.
    """

    def __init__(
        self,
        system_prompt: str = "You are a helpful assistant.",
        model: Model | Sequence[Model] | None = None,
        *,
        tools: ToolStore | Mapping[str, Any] | Iterable[Any] | None = None,
        messages: Iterable[AgentMessage] | None = None,
        stream_fn: StreamFn | None = None,
        llm_call: LlmCall | None = None,
        on_event: Callable[[AgentEvent], Any] | None = None,
        tool_store: ToolStore | None = None,
        prepare_context: PrepareContext | None = None,
        format_messages: FormatMessages | None = None,
        convert_to_llm: Callable[..., Any] | None = None,
        transform_context: Callable[..., Any] | None = None,
        before_tool_call: Callable[..., Any] | None = None,
        after_tool_call: Callable[..., Any] | None = None,
        prepare_next_turn: Callable[[TurnContext], Any] | None = None,
        should_stop_after_turn: Callable[[TurnContext], Any] | None = None,
        tool_execution: str = "parallel",
        steering_mode: QueueMode = "one-at-a-time",
        follow_up_mode: QueueMode = "one-at-a-time",
        session_id: str | None = None,
        max_turns: int | None = None,
        max_retry_delay_ms: int | None = None,
        tool_timeout_s: float | None = None,
        stream_idle_timeout_s: float | None = 120.0,
        cache_retention: CacheRetention | None = None,
        max_parallel_tools: int | None = None,
        session_store: SessionStore | None = None,
        usage_limits: UsageLimits | None = None,
        tracer_provider: Any = None,
        trace_content: bool = False,
        output_type: type[OutputT] | OutputSpec[OutputT] | Mapping[str, Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        name: str = "assistant",
        description: str | None = None,
        handoffs: Iterable[Agent[Any] | Handoff] | None = None,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        max_handoffs: int = DEFAULT_MAX_HANDOFFS,
    ) -> None:
        options = dict(locals())
        del options["self"]
        check_options(options)
        self._config = options
        team = TeamConfig.of(options, Agent)  # DESIGN §17, docs/teams.md
        self.name, self.description = team.name, team.description
        self.handoffs, self.max_handoffs = team.handoffs, team.max_handoffs
        self.input_guardrails = team.input_guardrails
        self.output_guardrails = team.output_guardrails
        if isinstance(model, list | tuple):
            from yiemagent.ai.providers.fallback import FallbackModel

            model = FallbackModel(model)
        self._output: OutputSpec[Any] | None = output_spec(output_type)
        self.output_retries = output_retries
        """Invalid outputs sent back to the model before a run ends in error (DESIGN §14)."""
        self._resume_output: OutputSpec[Any] | None = None
        self.tool_store: ToolStore = make_store(tools, tool_store)
        """The agent's own tool store (R-4.12); register tools here at any time."""
        self._owned = OwnedResources()
        self._state = AgentStateView(self.tool_store)
        self._state.system_prompt = system_prompt
        self._state.active_agent = name
        self._state.model = model  # type: ignore[assignment]
        self._custom_model = llm_call is not None or stream_fn is not None
        try:
            self._state.messages = to_messages(messages or [], what="messages")
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        hooks = loop_hooks(options, placeholder_model("unresolved"))
        self.tool_execution = tool_execution
        self.max_turns = max_turns
        self.max_retry_delay_ms = max_retry_delay_ms
        self._session: SessionLog | None = None
        self._session_id = session_id
        if session_store is not None:  # resume the stored transcript (docs/sessions.md)
            self._session_id = str(uuid.uuid4()) if session_id is None else session_id
            self._session = SessionLog(session_store, self._session_id)
            given = None if messages is None else self._state.messages
            self._state.messages = self._session.open(given)
            self._state.on_assign = self._session.rewrite

        self._queues: TurnQueues[AgentMessage] = TurnQueues(steering_mode, follow_up_mode)
        self._driver = RunDriver(
            self._state,
            self._queues,
            self._session,
            self,
            hooks=hooks,
            stream_fn=agent_stream_fn(stream_fn, llm_call, prepare_context, format_messages),
            placeholder=(
                "llm_call" if llm_call is not None else None if stream_fn is None else "custom"
            ),
            prepare_next_turn=prepare_next_turn,
            on_event=on_event,
        )
        self._changed = Notifier()
        self._channel: PromptChannel[list[AgentMessage], AssistantMessage] = PromptChannel(
            self._driver.run_sent, lambda: not self._driver.running, self._changed
        )

    # ── state ──────────────────────────────────────────────────────────────

    @property
    def state(self) -> AgentStateView:
        """The agent's state (R-6.2), reduced from events. Assigning `messages` or `tools`
        copies; `tools` mirrors `tool_store`."""
        return self._state

    @property
    def session_store(self) -> SessionStore | None:
        """Where the transcript is persisted message by message (DESIGN §10), or None; set
        at construction (see `docs/sessions.md`)."""
        return self._session.store if self._session is not None else None

    @property
    def session_id(self) -> str | None:
        """The session id, passed to the provider; with a `session_store` the stored
        session's id (a uuid4 when none was given) and fixed for the agent's life."""
        return self._session_id

    @session_id.setter
    def session_id(self, value: str | None) -> None:
        if self._session is not None:
            raise ConfigError(
                "session_id cannot change while a session_store is attached; build a new "
                "Agent(session_store=..., session_id=...) to open another session"
            )
        self._session_id = value

    @property
    def is_busy(self) -> bool:
        """Whether a run is active or sent prompts are waiting for theirs."""
        return self._driver.running or self._channel.busy or bool(self._channel.inbox)

    def _held_state(
        self, deciding: bool = False
    ) -> tuple[HeldCalls, list[AgentMessage], SessionLog | None]:
        if deciding and self._driver.running:
            raise AgentBusyError(_BUSY)
        return self._driver.held, self._state.messages, self._session

    # ── prompts ────────────────────────────────────────────────────────────

    @overload
    async def prompt(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        output_type: type[R] | OutputSpec[R],
    ) -> OutputMessage[R]: ...
    @overload
    async def prompt(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        output_type: Mapping[str, Any],
    ) -> OutputMessage[dict[str, Any]]: ...
    @overload
    async def prompt(
        self: Agent[None],
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        output_type: None = None,
    ) -> AssistantMessage: ...
    @overload
    async def prompt(
        self: Agent[OutputT],
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        output_type: None = None,
    ) -> OutputMessage[OutputT]: ...
    async def prompt(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        output_type: Any = None,
    ) -> Any:
        """Run one prompt to the end and return the final assistant message (R-6.3).

        Args:
            input: a text, a message (an OpenAI user dict is converted), or a list of them.
            images: images added to a text prompt.
            attachments: images and PDFs added to a text prompt: paths, bytes or blocks
                (`yiemagent.ai.attachments`; a model that cannot read them is warned of).
            output_type: this run's output type, instead of the agent's (DESIGN §14).

        Returns:
            The run's last assistant message; after a terminating batch (R-4.10) the
            "tool_use_terminated" summary of the tool results (seed 000 §10, not added to
            the history). An aborted run returns its "aborted" message.
            With an output type: an `OutputMessage` whose `output` is the validated value
            (`None` while tool calls await approval: the run ended "awaiting_approval").

        Raises:
            AgentRunError: the run ended in error (a provider failure, a missing API key, a
                hook that raised); `.message` is the error message, `.new_messages` the
                run's messages. The agent stays usable (R-6.6). `UsageLimitExceeded` (a
                subclass) when its `usage_limits` stopped it (DESIGN §13).
                With an output type, also when the run ended without a valid value (the
                retries ran out, an error, an abort, `max_turns`); the text says why.
            AgentBusyError: a run is active or sent prompts are waiting.
            ApprovalPendingError: tool calls await approval (decide them, then `resume()`).
            AttachmentError: a bad attachment (nothing is sent).
            TypeError, ValueError: an input that is not a prompt.
        """
        spec = output_spec(output_type) or self._output
        blocks = load_attachments(attachments) if attachments else []
        prompts = prompt_messages(input, [*(images or ()), *blocks])
        if blocks and not (self._custom_model and self._state.model is None):
            warn_unreadable(self._state.model, blocks)
        self._driver.held.check_none_pending(self._state.messages, "start a new prompt")
        self._claim()
        return await self._run_claimed(prompts, spec)

    async def resume(self) -> Any:
        """Continue from the transcript without a new prompt (seeds' agentLoopContinue).

        With tool calls held for approval (DESIGN §14) the approved ones run and the
        rejected ones get their error result, then the run continues; the answer is shaped
        as the held prompt's (an `OutputMessage` when it had an output type). When the
        transcript ends with an assistant message, queued steering (else follow-up)
        messages start the run instead.

        Raises:
            AgentRunError: the run ended in error (as in `prompt`).
            AgentBusyError: a run is active.
            ApprovalPendingError: a held call has no decision yet.
            ConfigError: nothing to continue from.
        """
        self._claim()
        held = self._driver.held
        if held.pending(self._state.messages):
            try:
                held.check_all_decided(self._state.messages)
            except ApprovalPendingError:
                self._release()
                raise
            spec = self._resume_output or self._output
            return await self._run_claimed(None, spec, self._driver.start_resume())
        prompts: list[AgentMessage] | None = None
        last = self._state.messages[-1] if self._state.messages else None
        if last is None or getattr(last, "role", None) == "assistant":
            prompts = self._queues.poll_to_resume()
            if not prompts:
                self._release()
                raise ConfigError(
                    "nothing to resume: the transcript is empty or ends with an assistant "
                    "message; use prompt() instead"
                )
        return await self._run_claimed(prompts, self._output)

    def prompt_sync(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        output_type: Any = None,
    ) -> Any:
        """`prompt` from plain synchronous code (a script, a REPL): runs its own event loop
        (R-6.7). `output_type` as in `prompt`.

        Raises:
            RuntimeError: called from a running event loop; use `await agent.prompt(...)`.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.prompt(input, images, attachments=attachments, output_type=output_type)
            )
        raise RuntimeError(
            "prompt_sync() cannot run inside a running event loop; use `await agent.prompt(...)`"
        )

    async def close(self) -> None:
        """Refuse new prompts, finish the queued ones, then return (R-6.4). Responses stay
        takeable; with 16 untaken, this waits until some are taken. With a `session_store`,
        the session's writer lease is then given back (another Agent may open it). Then
        what the agent `own`s (MCP servers) is closed."""
        self._channel.closed = True
        await self.wait_for_idle()
        if self._session is not None:  # one writer per session: the next Agent may open it
            self._session.release()
        await self._owned.close_all()

    def own(self, resource: Closeable) -> None:
        """Make `resource` (anything with an async `close()`, such as an MCP server from
        `yiemagent.mcp.add_server(agent, server)`) the agent's: `close()` closes it after
        the queued work, last owned first (DESIGN §12).

        Raises:
            ConfigError: `resource` has no `close()`.
        """
        self._owned.add(resource)

    # ── control ────────────────────────────────────────────────────────────

    def abort(self, reason: str | None = None) -> None:
        """Abort the active run (no-op when idle; any thread). Messages a run took from a
        queue but did not deliver go back to the front of their queue (R-6.5)."""
        if self._driver.signal is not None:
            self._driver.signal.abort(reason or "aborted by the user")

    async def wait_for_idle(self) -> None:
        """Wait until no run is active and no sent prompt is waiting."""
        self._channel.start()
        while self.is_busy:
            await self._changed.wait()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(event, signal)` for every event, after the state is updated; async
        listeners are awaited, all in subscription order. A listener that raises is logged
        and the run goes on (R-5.1b). Returns the function that unsubscribes it."""
        if not callable(listener):
            raise ConfigError("subscribe() needs a callable listener(event, signal)")
        return self._driver.subscribe(listener)

    def reset(self) -> None:
        """Clear the transcript, the state and the steering/follow-up queues; with a
        `session_store`, the stored session too (same `session_id`).

        Raises:
            AgentBusyError: a run is active (abort it and await `wait_for_idle()` first).
            Exception: the session store failed to clear (the agent is left unchanged).
        """
        if self.is_busy:
            raise AgentBusyError(
                "cannot reset while the agent is running; abort() and await wait_for_idle() first"
            )
        self._state.clear()
        self._state.active_agent = self.name  # the entry agent answers again (DESIGN §17)
        self._driver.held.clear()
        self.clear_all_queues()

    as_tool = agent_as_tool  # DESIGN §17: this agent as another agent's tool

    # ── runs ───────────────────────────────────────────────────────────────

    def _claim(self) -> None:
        if self._channel.closed:
            raise AgentBusyError("the agent is closed; create a new Agent")
        if self.is_busy:
            raise AgentBusyError(_BUSY)
        self._driver.running = True

    async def _run_claimed(
        self,
        prompts: list[AgentMessage] | None,
        spec: OutputSpec[Any] | None = None,
        approvals: dict[str, ToolApproval] | None = None,
    ) -> Any:
        try:
            answer, new = await self._driver.run(prompts, output=spec, approvals=approvals)
        finally:
            self._release()
        end = self._driver.last_end
        trip = self._driver.last_trip
        if trip is not None:
            raise GuardrailTripped(answer, new, trip.kind, trip.guardrail, trip.message)
        waiting = end is not None and end.reason == "awaiting_approval"
        self._resume_output = spec if waiting else None
        return run_answer(answer, new, end, spec)

    def _release(self) -> None:
        self._driver.running = False
        self._changed.notify()
        self._channel.start()  # prompts sent during the run start now
