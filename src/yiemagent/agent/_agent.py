"""The stateful `Agent`, the seeds' `yiemAgent` (DESIGN §6).

An `Agent` owns a transcript, a `ToolStore` and its queues, and drives the loop
(`yiemagent.loop.run_agent_loop`) one run at a time. Its state is reduced from the run's
events, as pi's `Agent` does. Runs execute in the task that awaits them (`prompt`, `resume`)
or in one worker task that exists only while sent prompts are waiting (`send`); an idle agent
holds no task and no loop-bound object, so two `asyncio.run` calls in a row work. Each run is
driven by the agent's `RunDriver` (`_run`); this module holds the public API, the rule of one
run at a time, the checks of the constructor's and the prompts' arguments, and the shape of a
run's answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeAlias, overload

from typing_extensions import TypeVar

from yiemagent.agent._as_tool import agent_as_tool
from yiemagent.agent._channels import Notifier, PromptChannel, QueueMode, TurnQueues
from yiemagent.agent._guardrails import Guardrail
from yiemagent.agent._llm_call import FormatMessages, LlmCall, PrepareContext, agent_stream_fn
from yiemagent.agent._run import (
    AgentRunError,
    AgentStateView,
    GuardrailTripped,
    Listener,
    ModelInput,
    RunDriver,
    UsageLimitExceeded,
    placeholder_model,
    to_messages,
    to_model,
    to_reasoning,
    to_tool_list,
)
from yiemagent.agent._session_log import SessionLog
from yiemagent.agent._team import (
    DEFAULT_MAX_HANDOFFS,
    Handoff,
    HeldCalls,
    TeamConfig,
    as_handoffs,
    check_reason,
    check_team_names,
    output_type_not_applied,
    speaking_agent,
)
from yiemagent.ai.attachments import AttachmentSource, load_attachments, warn_unreadable
from yiemagent.errors import (
    AgentBusyError,
    ApprovalPendingError,
    ConfigError,
    MessageInputError,
)
from yiemagent.types import (
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    CacheRetention,
    DocumentContent,
    ImageContent,
    Model,
    OutputMessage,
    OutputSpec,
    PendingApproval,
    StreamFn,
    TextContent,
    ThinkingLevel,
    ToolApproval,
    TurnContext,
    UsageLimits,
    UserMessage,
)
from yiemagent.types.callbacks import signal_optional
from yiemagent.types.config import DEFAULT_MAX_TOOL_RESULT_CHARS, DEFAULT_TRACE_CONTENT_MAX_CHARS
from yiemagent.types.output import DEFAULT_OUTPUT_RETRIES, output_spec
from yiemagent.types.tools import is_whole_number

if TYPE_CHECKING:
    from yiemagent.sessions import SessionStore
    from yiemagent.tools import ToolStore

__all__ = ["Agent"]

logger = logging.getLogger(__name__)


OutputT = TypeVar("OutputT", default=None)
"""The agent's output type (`None`: the agent answers in text)."""
R = TypeVar("R")

PromptInput: TypeAlias = "str | AgentMessage | Mapping[str, Any] | Sequence[Any]"
"""A prompt: a text, a message, an OpenAI user dict, or a list of messages for one run."""

_BUSY = (
    "the agent is already running; use steer() or follow_up() to add to the current run, "
    "send() to queue a prompt, or await wait_for_idle() first"
)


class _GivenWhenMade:
    """An `Agent` option that is read as given but cannot be assigned on a built agent: its
    runs were set up with the value when the agent was made, so `agent.before_tool_call = f`
    would change nothing without a word. The options `agent.state` holds (`model`,
    `system_prompt`, ...) say to assign them there."""

    def __init__(self, on_state: bool = False) -> None:
        self.on_state = on_state
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, agent: Agent[Any] | None, owner: type | None = None) -> Any:
        if agent is None:
            return self
        if self.on_state:
            return getattr(agent.state, self.name)
        return agent._config[self.name]

    def __set__(self, agent: Agent[Any], value: object) -> None:
        if self.on_state:
            raise ConfigError(
                f"an Agent's {self.name} is agent.state.{self.name}: assign that instead"
            )
        raise ConfigError(
            f"{self.name} is given when the Agent is made (Agent({self.name}=...)); a built "
            "agent keeps it, so make a new Agent to change it"
        )


class Agent(Generic[OutputT]):
    """A stateful agent: a transcript, a tool store, queues, and one run at a time.

    `Agent(output_type=T)` is an `Agent[T]`: each `prompt` returns an `OutputMessage[T]`
    whose `output` is the validated value (`docs/output.md`); tools with
    `requires_approval` hold their calls for `approve`/`reject` and `resume`
    (`docs/approvals.md`).

    Invariants: at most one run at a time (`prompt`/`resume` raise `AgentBusyError` while
    busy); every state change comes from an event of the run, reduced before listeners see it;
    the tools offered to the model are rebuilt from `tool_store` before every turn, so a tool
    registered mid-run (writeTool) is offered on the next turn. Listeners and hooks run on
    the event loop thread; `steer`, `follow_up` and `abort` may be called from any thread
    (for example from a plain tool on its worker thread).

    More in `docs/agent.md` ("Construction"). Hooks may be plain or async.

    Args:
        system_prompt: the system prompt; None or "" sends none.
        model: a `Model`, a model id ("openai/gpt-4o-mini"), or a list of them (a
            `FallbackModel`); None: the embedded default (`yiemagent.ai.models.DEFAULT_MODEL`),
            looked up at the first run.
        tools: a `ToolStore`, a dict or a list of tools or typed functions, copied into
            `tool_store`.
        messages: the transcript to start from (with `session_store`, the session must be
            empty: they are stored).
        stream_fn: calls the model instead of `yiemagent.ai.stream` (a `FauxModel`'s in
            tests).
        llm_call: a plain, non-streaming model call `f(formatted) -> answer`.
        on_event: a function that sees every event of every run.
        tool_store: the agent's own `ToolStore` (give the one `writeTool` writes into);
            default a new one.
        prepare_context: `(AgentState) -> AgentContext` before every model call: may filter
            tools, change the system prompt or prune messages.
        format_messages: turns the context into `llm_call`'s input; default
            `format_openai_messages`.
        convert_to_llm: turns the transcript into the messages a model reads.
        transform_context: `(messages, signal) -> messages` sent by one model call; the
            transcript is left as it is.
        before_tool_call: `(BeforeToolCallContext, signal)`: returns None (run the call) or
            a `BeforeToolCallResult` (block or hold it).
        after_tool_call: `(AfterToolCallContext, signal)`: returns None or an
            `AfterToolCallResult` whose fields replace the result's.
        prepare_next_turn: `(TurnContext) -> TurnUpdate | None` before each turn.
        should_stop_after_turn: `(TurnContext) -> bool`: True ends the run after this turn.
        tool_execution: "parallel" (default: the calls of one answer run at once) or
            "sequential".
        steering_mode: "one-at-a-time" (default) or "all": how many queued steering
            messages one turn takes.
        follow_up_mode: the same for follow-ups.
        session_id: the session in `session_store`; default a new uuid4.
        max_turns: most model calls of one round (a prompt, or a follow-up); None: no cap.
        max_retry_delay_ms: longest wait before a retry, in ms (default 60 000; 0: no cap).
        tool_timeout_s: seconds one tool call may take when its tool sets no `timeout_s`;
            None: no bound (a plain-function tool on a thread is abandoned at it, not
            stopped: use `isolation="process"` for that).
        stream_idle_timeout_s: seconds a model stream may stay silent; default 120,
            None: no limit.
        stream_reasoning_timeout_s: the same while a reasoning model has shown only
            reasoning; default 600.
        cache_retention: prompt caching, "short" (the provider's default), "long" or
            "none".
        reasoning: how hard a reasoning model thinks in every call, "minimal" ... "xhigh";
            None or "off": no thinking (`state.reasoning` changes it for the next run).
        temperature: sampling temperature, 0 or more; None: the provider's default.
        max_tokens: most output tokens of one model call, 1 or more; None: the model's
            own limit.
        max_parallel_tools: most tool calls running at once in a parallel batch; None: all.
        max_tool_result_chars: most characters of text a tool result keeps, cut in its
            middle; default 100,000, None: no cap.
        session_store: a `SessionStore` that stores the transcript as it grows
            (`docs/sessions.md`); an existing session is resumed.
        usage_limits: `UsageLimits` capping tokens, cost and tool calls per run.
        tracer_provider: an OpenTelemetry tracer provider that records every run.
        trace_content: record messages and tool arguments in the spans too; None (off, or
            as the parent run for a sub-agent).
        trace_content_max_chars: most characters of each content attribute recorded (the
            older messages left out, long texts cut in their middle, still valid JSON);
            default 32,000, None: no bound but the SDK's attribute length limit.
        output_type: a type, a JSON Schema or an `OutputSpec`: each prompt returns an
            `OutputMessage` whose `output` is the validated value (`docs/output.md`).
        output_retries: how many times the model may retry an invalid output (default 2).
        name: the agent's name in a team and in events (default "assistant").
        description: what the agent does, for agents that hand over to it.
        handoffs: agents (or `Handoff`s) this one may transfer the conversation to
            (`docs/teams.md`).
        input_guardrails: functions that check the prompt before the run.
        output_guardrails: functions that check the answer before anyone sees it.
        max_handoffs: most transfers in one run (default 10).
        return_to_entry: each new prompt goes to this (the entry) agent, not to the one
            handed to last.

    Raises:
        ConfigError: an invalid argument; the message says what to change.
        ProviderError: `model` names a model id `get_model` does not know (its message).
    """

    system_prompt = _GivenWhenMade(on_state=True)
    model = _GivenWhenMade(on_state=True)
    messages = _GivenWhenMade(on_state=True)
    tools = _GivenWhenMade(on_state=True)
    reasoning = _GivenWhenMade(on_state=True)
    stream_fn = _GivenWhenMade()
    llm_call = _GivenWhenMade()
    on_event = _GivenWhenMade()
    prepare_context = _GivenWhenMade()
    format_messages = _GivenWhenMade()
    convert_to_llm = _GivenWhenMade()
    transform_context = _GivenWhenMade()
    before_tool_call = _GivenWhenMade()
    after_tool_call = _GivenWhenMade()
    prepare_next_turn = _GivenWhenMade()
    should_stop_after_turn = _GivenWhenMade()
    tool_timeout_s = _GivenWhenMade()
    stream_idle_timeout_s = _GivenWhenMade()
    stream_reasoning_timeout_s = _GivenWhenMade()
    cache_retention = _GivenWhenMade()
    temperature = _GivenWhenMade()
    max_tokens = _GivenWhenMade()
    max_parallel_tools = _GivenWhenMade()
    max_tool_result_chars = _GivenWhenMade()
    usage_limits = _GivenWhenMade()
    tracer_provider = _GivenWhenMade()
    trace_content = _GivenWhenMade()
    trace_content_max_chars = _GivenWhenMade()
    output_type = _GivenWhenMade()

    def __init__(
        self,
        system_prompt: str | None = "You are a helpful assistant.",
        model: ModelInput | None = None,
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
        stream_reasoning_timeout_s: float | None = 600.0,
        cache_retention: CacheRetention | None = None,
        reasoning: ThinkingLevel | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        max_parallel_tools: int | None = None,
        max_tool_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS,
        session_store: SessionStore | None = None,
        usage_limits: UsageLimits | None = None,
        tracer_provider: Any = None,
        trace_content: bool | None = None,
        trace_content_max_chars: int | None = DEFAULT_TRACE_CONTENT_MAX_CHARS,
        output_type: type[OutputT] | OutputSpec[OutputT] | Mapping[str, Any] | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        name: str = "assistant",
        description: str | None = None,
        handoffs: Iterable[Agent[Any] | Handoff] | None = None,
        input_guardrails: Iterable[Guardrail] | None = None,
        output_guardrails: Iterable[Guardrail] | None = None,
        max_handoffs: int = DEFAULT_MAX_HANDOFFS,
        return_to_entry: bool = False,
    ) -> None:
        options = dict(locals())
        del options["self"]
        options["model"] = to_model(model, what="model")
        options["reasoning"] = to_reasoning(reasoning, what="reasoning")
        check_options(options)
        self._config = options
        team = TeamConfig.of(options, Agent)  # docs/teams.md
        self.name, self.description = team.name, team.description
        self._handoffs, self.max_handoffs = team.handoffs, team.max_handoffs
        self.return_to_entry = team.return_to_entry
        """Whether each new prompt comes back to this agent after a handoff (docs/teams.md)."""
        self.input_guardrails = team.input_guardrails
        self.output_guardrails = team.output_guardrails
        self._output: OutputSpec[Any] | None = output_spec(output_type)
        ignored = output_type_not_applied(self.name, self.handoffs, self._output)
        if ignored is not None:
            warnings.warn(ignored, UserWarning, stacklevel=2)
        self.output_retries = output_retries
        """Invalid outputs sent back to the model before a run ends in error."""
        self._resume_output: OutputSpec[Any] | None = None
        self.tool_store: ToolStore = make_store(tools, tool_store)
        """The agent's own tool store; register tools here at any time."""
        check_output_tool_name(self._output, self.tool_store.tools, options["model"])
        check_handoff_tool_names(self.name, self.handoffs, self.tool_store.tools)
        self._owned = OwnedResources()
        self._state = AgentStateView(self.tool_store)
        self._state.system_prompt = system_prompt or ""  # None: no system prompt, as in Context
        self._state.active_agent = name
        self._state.model = options["model"]
        self._state.reasoning = options["reasoning"]
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
        # After a handoff, the agent handed to answers on (also in a reopened session); a
        # transcript assigned later (a rewind: a regenerate, an undo) names who answers from
        # its end, as a new Agent on it would.
        self._state.active_agent = speaking_agent(self, self._state.messages)
        self._state.on_assign = self._transcript_assigned

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

    def __repr__(self) -> str:
        """`Agent(name=..., model='provider/id', tools=[...], messages=N)`, with the
        handoffs and the session id when it has them (what a REPL shows)."""
        model = self._state.model
        parts = [
            f"name={self.name!r}",
            f"model={f'{model.provider}/{model.id}' if model is not None else None!r}",
            f"tools={list(self.tool_store.tools)!r}",
        ]
        if self._handoffs:
            parts.append(f"handoffs={[handoff.agent.name for handoff in self._handoffs]!r}")
        parts.append(f"messages={len(self._state.messages)}")
        if self._session_id is not None:
            parts.append(f"session_id={self._session_id!r}")
        return f"Agent({', '.join(parts)})"

    # ── state ──────────────────────────────────────────────────────────────

    @property
    def state(self) -> AgentStateView:
        """The agent's state, reduced from events. Assigning `messages` or `tools`
        copies; `tools` mirrors `tool_store`."""
        return self._state

    @property
    def handoffs(self) -> list[Handoff]:
        """The agents this one may transfer the conversation to, as `Handoff`s. Assign a
        new list of Agents or `Handoff`s (how a team whose agents name each other in a
        cycle is built: each agent first, then their handoffs); it is checked as
        `Agent(handoffs=...)` checks it, so a wrong item fails here, not mid-run.

        Raises:
            ConfigError: (on assignment) an item that is no Agent or `Handoff`, a target
                named twice, two agents of one name in the team, or a target whose
                `transfer_to_<name>` is the name of one of this agent's tools.
        """
        return self._handoffs

    @handoffs.setter
    def handoffs(self, items: Iterable[Agent[Any] | Handoff] | None) -> None:
        handoffs = as_handoffs(items, Agent)
        check_handoff_tool_names(self.name, handoffs, self.tool_store.tools)
        before, self._handoffs = self._handoffs, handoffs
        try:  # with the new list in place: a cycle reaches this agent back through it
            check_team_names(self.name, handoffs)
        except BaseException:
            self._handoffs = before
            raise

    @property
    def session_store(self) -> SessionStore | None:
        """Where the transcript is persisted message by message, or None; set
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
        self._session_id = checked_session_id(value)

    @property
    def is_busy(self) -> bool:
        """Whether a run is active or sent prompts are waiting for theirs."""
        return self._driver.running or self._channel.busy or bool(self._channel.inbox)

    def _held_state(
        self, deciding: bool = False
    ) -> tuple[HeldCalls, list[AgentMessage], SessionLog | None]:
        """The calls held for approval, the transcript they belong to and the session log
        that stores decisions (None without a session).

        Raises:
            AgentBusyError: `deciding` while a run is active (it owns the held calls).
        """
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
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
        output_type: type[R] | OutputSpec[R],
    ) -> OutputMessage[R]: ...
    @overload
    async def prompt(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
        output_type: Mapping[str, Any],
    ) -> OutputMessage[dict[str, Any]]: ...
    @overload
    async def prompt(
        self: Agent[None],
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
        output_type: None = None,
    ) -> AssistantMessage: ...
    @overload
    async def prompt(
        self: Agent[OutputT],
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
        output_type: None = None,
    ) -> OutputMessage[OutputT]: ...
    async def prompt(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
        output_type: Any = None,
    ) -> Any:
        """Run one prompt to the end and return the final assistant message.

        Args:
            input: a text, a message (an OpenAI user dict is converted), or a list of them.
            images: images added to a text prompt.
            attachments: images and PDFs added to a text prompt: paths, bytes or blocks
                (`yiemagent.ai.attachments`; a model that cannot read them is warned of).
            tools: tools for this run only, offered beside the agent's own to every agent
                that speaks in it (after a handoff too), e.g. a web client's own tools;
                not to agents called as tools, which run on their own.
            instructions: text for this run only, added to the system prompt of every
                agent that speaks in it (after a handoff too), e.g. a web client's system
                messages; not to agents called as tools.
            output_type: this run's output type, instead of the agent's.

        Returns:
            The run's last assistant message; after a terminating batch the
            "tool_use_terminated" summary of the tool results (the seeds' shape, not added to
            the history). An aborted run returns its "aborted" message.
            With an output type: an `OutputMessage` whose `output` is the validated value
            (`None` while tool calls await approval: the run ended "awaiting_approval").

        Raises:
            AgentRunError: the run ended in error (a provider failure, a missing API key, a
                hook that raised); `.message` is the error message, `.new_messages` the
                run's messages. The agent stays usable. `UsageLimitExceeded` (a
                subclass) when its `usage_limits` stopped it.
                With an output type, also when the run ended without a valid value (the
                retries ran out, an error, an abort, `max_turns`); the text says why.
            AgentBusyError: a run is active or sent prompts are waiting.
            ApprovalPendingError: tool calls await approval (decide them, then `resume()`).
            AttachmentError: a bad attachment (nothing is sent).
            ConfigError: `tools` holds something that is not an `AgentTool`, two tools of
                one name, or one named as a tool of the agent speaking.
            TypeError, ValueError: an input that is not a prompt.
        """
        extra = run_tools(tools)
        check_instructions(instructions)
        spec = output_spec(output_type) or self._output
        blocks = load_attachments(attachments) if attachments else []
        prompts = prompt_messages(input, [*(images or ()), *blocks])
        media = media_blocks(prompts)  # however they came: attachments, images, messages
        if media and not (self._custom_model and self._state.model is None):
            warn_unreadable(self._state.model, media)
        self._driver.held.check_none_pending(self._state.messages, "start a new prompt")
        self._claim()
        return await self._run_claimed(prompts, spec, tools=extra, instructions=instructions)

    async def resume(
        self,
        *,
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
    ) -> Any:
        """Continue from the transcript without a new prompt (seeds' agentLoopContinue).
        `tools`: this run's own tools, as in `prompt` (a held call of one runs with it);
        `instructions`: this run's own system text, as in `prompt`.

        With tool calls held for approval the approved ones run and the
        rejected ones get their error result, then the run continues; the answer is shaped
        as the held prompt's (an `OutputMessage` when it had an output type). When the
        transcript ends with an assistant message, queued steering (else follow-up)
        messages start the run instead.

        Raises:
            AgentRunError: the run ended in error (as in `prompt`).
            AgentBusyError: a run is active.
            ApprovalPendingError: a held call has no decision yet.
            ConfigError: nothing to continue from; bad `tools` (as in `prompt`).
        """
        extra = run_tools(tools)
        check_instructions(instructions)
        self._claim()
        held = self._driver.held
        if held.pending(self._state.messages):
            try:
                held.check_all_decided(self._state.messages)
            except ApprovalPendingError:
                self._release()
                raise
            spec = self._resume_output or self._output
            return await self._run_claimed(
                None, spec, self._driver.start_resume(), extra, instructions
            )
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
        return await self._run_claimed(
            prompts, self._output, tools=extra, instructions=instructions
        )

    def prompt_sync(
        self,
        input: PromptInput,
        images: Sequence[ImageContent] | None = None,
        *,
        attachments: Iterable[AttachmentSource | ImageContent | DocumentContent] | None = None,
        tools: Iterable[AgentTool | Callable[..., Any]] | None = None,
        instructions: str | None = None,
        output_type: Any = None,
    ) -> Any:
        """`prompt` from plain synchronous code (a script, a REPL): runs its own event loop.
        `tools`, `instructions` and `output_type` as in `prompt`.

        Raises:
            RuntimeError: called from a running event loop; use `await agent.prompt(...)`.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass  # none: run one below, outside this handler (a failed run chains nothing)
        else:
            raise RuntimeError(
                "prompt_sync() cannot run inside a running event loop; use "
                "`await agent.prompt(...)`"
            )
        return asyncio.run(
            self.prompt(
                input,
                images,
                attachments=attachments,
                tools=tools,
                instructions=instructions,
                output_type=output_type,
            )
        )

    async def close(self) -> None:
        """Refuse new prompts, finish the queued ones, then return. Responses stay
        takeable; with 16 untaken, this waits until some are taken. With a `session_store`,
        messages whose append failed are tried once more, then the session's writer lease
        is given back (another Agent may open it). Then
        what the agent `own`s (MCP servers) is closed.

        Raises:
            AgentBusyError: called inside this agent's run (a listener, hook or tool).
        """
        self._refuse_inside_run("close()")
        self._channel.closed = True
        await self.wait_for_idle()
        if self._session is not None:  # one writer per session: the next Agent may open it
            await self._session.close()
        await self._owned.close_all()

    def own(self, resource: Closeable) -> None:
        """Make `resource` (anything with an async `close()`, such as an MCP server from
        `yiemagent.mcp.add_server(agent, server)`) the agent's: `close()` closes it after
        the queued work, last owned first.

        Raises:
            ConfigError: `resource` has no `close()`.
        """
        self._owned.add(resource)

    # ── queues and channels ────────────────────────────────────────────────

    @property
    def steering_mode(self) -> QueueMode:
        """How many steering messages a turn takes: "one-at-a-time" or "all"."""
        return self._queues.steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        check_queue_mode("steering_mode", mode)
        self._queues.steering_mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        """How many follow-ups a turn takes: "one-at-a-time" or "all"."""
        return self._queues.follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        check_queue_mode("follow_up_mode", mode)
        self._queues.follow_up_mode = mode

    def send(self, message: PromptInput) -> None:
        """Queue a prompt (a text, a message, an OpenAI user dict, or a list of messages for one
        run); it runs when the agent is idle, after the prompts sent before it.
        Its final message comes from `take_response()`. Without a running event loop
        the prompt waits for the next `take_response`/`wait_for_idle`/`close`.

        Raises:
            AgentBusyError: 16 prompts are already waiting, or the agent is closed.
            ApprovalPendingError: tool calls await approval.
        """
        self._driver.held.check_none_pending(self._state.messages, "send a prompt")
        self._channel.put(prompt_messages(message, None, method="send"))

    async def take_response(self) -> AssistantMessage:
        """The final message of the next sent prompt's run, in send order; waits for
        it. `prompt()` returns its own answer and puts nothing here.

        Raises:
            AgentBusyError: the agent is closed and no response is left; or none is ready
                and this is called inside the agent's run (a listener, hook or tool),
                where the run it waits for cannot start.
        """
        if not self._channel.outbox:
            self._refuse_inside_run("take_response()")
        return await self._channel.take()

    def steer(self, message: PromptInput) -> None:
        """Queue a message delivered at the next turn boundary of the current (or next) run."""
        for item in prompt_messages(message, None, method="steer"):
            self._queues.steering.put(item)

    def follow_up(self, message: PromptInput) -> None:
        """Queue a message delivered when the run would otherwise stop.

        Raises:
            AgentBusyError: the queue has no room for them all (32 follow-ups may wait);
                then none of them is queued.
        """
        self._queues.follow_ups.put_all(prompt_messages(message, None, method="follow_up"))

    def clear_steering_queue(self) -> None:
        """Drop the queued steering messages."""
        self._queues.steering.clear()

    def clear_follow_up_queue(self) -> None:
        """Drop the queued follow-up messages."""
        self._queues.follow_ups.clear()

    def clear_all_queues(self) -> None:
        """Drop queued steering and follow-up messages (sent prompts stay queued)."""
        self._queues.clear()

    def has_queued_messages(self) -> bool:
        """Whether steering, follow-up or sent prompts are waiting."""
        return bool(self._queues or self._channel.inbox)

    # ── approvals ──────────────────────────────────────────────────────────

    @property
    def pending_approvals(self) -> list[PendingApproval]:
        """The tool calls held for approval, in call order (id, tool name, arguments, the
        assistant message, the decision so far); empty when none is held."""
        held, messages, _ = self._held_state()
        return held.pending(messages)

    def approve(self, call_id: str) -> None:
        """Approve a held call: `resume()` runs it (validation, hooks and timeout apply).
        The decision is stored with the session, if any.

        Raises:
            ConfigError: no pending call has this id. AgentBusyError: a run is active.
        """
        self._decide(call_id, ToolApproval(True))

    def reject(self, call_id: str, reason: str | None = None, *, by_user: bool = True) -> None:
        """Reject a held call: `resume()` gives it an error result carrying `reason`,
        "Tool call rejected by the user: <reason>"; with `by_user=False` (no person was
        there to decide, e.g. no terminal to ask) "Tool call not run: <reason>".

        Raises:
            ConfigError: `reason` is neither None nor text that can be stored, or no
                pending call has this id; nothing is recorded. AgentBusyError: a run is
                active.
        """
        self._decide(call_id, ToolApproval(False, check_reason(reason), by_user=bool(by_user)))

    def _decide(self, call_id: str, decision: ToolApproval) -> None:
        held, messages, session = self._held_state(deciding=True)
        held.decide(messages, call_id, decision)
        if session is not None:
            session.save_held(held.to_record())

    # ── control ────────────────────────────────────────────────────────────

    def abort(self, reason: str | None = None) -> None:
        """Abort the active run (no-op when idle; any thread). Messages a run took from a
        queue but did not deliver go back to the front of their queue."""
        if self._driver.signal is not None:
            self._driver.signal.abort(reason or "aborted by the user")

    async def wait_for_idle(self) -> None:
        """Wait until no run is active and no sent prompt is waiting.

        Raises:
            AgentBusyError: called inside this agent's run (a listener, hook or tool): the
                run would wait for itself.
        """
        self._refuse_inside_run("wait_for_idle()")
        self._channel.start()
        while self.is_busy:
            await self._changed.wait()

    def subscribe(self, listener: Listener | Callable[[AgentEvent], Any]) -> Callable[[], None]:
        """Call `listener(event, signal)` for every event, after the state is updated; async
        listeners are awaited, all in subscription order. A listener that takes one
        argument (pi's shape) gets the event alone. A listener that raises is logged and the
        run goes on. Subscribing a listener that is already subscribed (`==`: the same
        function, or the same object's method) changes nothing, as pi's listener set does:
        it is still called once per event. Returns the function that unsubscribes it; after
        a second subscribe, either returned function removes it.

        Raises:
            ConfigError: `listener` is not callable, or takes neither (event) nor
                (event, signal).
        """
        if not callable(listener):
            raise ConfigError("subscribe() needs a callable listener(event, signal)")
        return self._driver.subscribe(signal_optional(listener, "a listener", "event"), listener)

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
        self._state.active_agent = self.name  # the entry agent answers again
        self._driver.held.clear()
        self.clear_all_queues()

    as_tool = agent_as_tool  # this agent as another agent's tool

    def _transcript_assigned(self, messages: list[AgentMessage]) -> None:
        """`state.messages = ...`: the stored session is rewritten first (if that raises,
        nothing changes), then the active agent is the one the new transcript names."""
        if self._session is not None:
            self._session.rewrite(messages)
        self._state.active_agent = speaking_agent(self, messages)

    # ── runs ───────────────────────────────────────────────────────────────

    def _refuse_inside_run(self, what: str) -> None:
        """Raise `AgentBusyError` naming `what` when called from this agent's own run (a
        listener, hook or tool on its task), which would wait for itself forever."""
        if self._driver.inside_run():
            raise AgentBusyError(
                f"{what} inside this agent's own run (a listener, hook or tool) would wait "
                "for itself; react to agent_end instead, or use send() to queue a prompt"
            )

    def _claim(self) -> None:
        """Mark the agent running for a run about to start (event loop thread); every
        `_claim` is paired with one `_release` (in `_run_claimed`).

        Raises:
            AgentBusyError: the agent is closed, or busy with a run or queued prompts.
        """
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
        tools: Sequence[AgentTool] = (),
        instructions: str | None = None,
    ) -> Any:
        """Run once after `_claim` (`prompts` None: continue the transcript), release the
        agent whatever happens, and return what `prompt` returns: the answer, or its
        typed output with `spec`.

        Raises:
            GuardrailTripped: a guardrail stopped the run.
            UsageLimitExceeded, AgentRunError: as `run_answer`.
        """
        try:
            answer, new = await self._driver.run(
                prompts, output=spec, approvals=approvals, tools=tools, instructions=instructions
            )
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
        """End `_claim`: wake `wait_for_idle` callers and start prompts sent meanwhile."""
        self._driver.running = False
        self._changed.notify()
        self._channel.start()  # prompts sent during the run start now


# ── the Agent's inputs ───────────────────────────────────────────────────────


_CALLABLES = (
    "stream_fn",
    "llm_call",
    "on_event",
    "prepare_context",
    "format_messages",
    "convert_to_llm",
    "transform_context",
    "before_tool_call",
    "after_tool_call",
    "prepare_next_turn",
    "should_stop_after_turn",
)


_QUEUE_MODES = ("one-at-a-time", "all")


def check_handoff_tool_names(
    name: str, handoffs: Iterable[Handoff], tools: Mapping[str, AgentTool]
) -> None:
    """Refuse a tool of agent `name` named as one of its handoffs' `transfer_to_<target>`:
    the model could reach only one of the two (and a provider may refuse two tools of one
    name). A tool registered later is refused at the run, as the run finds it.

    Raises:
        ConfigError: the names meet; the text names the tool and the handoff.
    """
    for handoff in handoffs:
        if handoff.tool_name in tools:
            raise ConfigError(
                f"agent {name!r} has a tool named {handoff.tool_name!r}, the name of its "
                f"handoff to {handoff.agent.name!r}; rename the tool"
            )


def check_output_tool_name(
    spec: OutputSpec[Any] | None, tools: Mapping[str, AgentTool], model: Model | None
) -> None:
    """Refuse an output type whose output tool (tool mode) is named as one of `tools`: the
    run could offer the model only one of the two, and would end in error at its first
    model call. A tool registered later is refused there, as the run finds it.

    Raises:
        ConfigError: the names meet; the text says what to rename.
    """
    if spec is not None and spec.resolved_mode(model) == "tool" and spec.name in tools:
        raise ConfigError(
            f"a tool named {spec.name!r} is among the tools, and the output tool has that "
            "name; rename the tool or pass OutputSpec(T, name=...)"
        )


def check_instructions(instructions: object) -> None:
    """Refuse a run's `instructions` that are no text: a number or a list would reach the
    system prompt as its `str`, or as no text at all where the agent has no system prompt.

    Raises:
        ConfigError: `instructions` is neither a `str` nor None.
    """
    if instructions is not None and not isinstance(instructions, str):
        raise ConfigError(
            f"instructions must be a str, or None for none, not {type(instructions).__name__}"
        )


def check_queue_mode(name: str, mode: object) -> None:
    """Raise `ConfigError` unless `mode` is a `QueueMode` ("one-at-a-time" or "all");
    `name` is the option's name in the message."""
    if mode not in _QUEUE_MODES:
        raise ConfigError(f"{name} must be 'one-at-a-time' or 'all', not {mode!r}")


_LOOP_OPTIONS = (
    "convert_to_llm",
    "transform_context",
    "before_tool_call",
    "after_tool_call",
    "should_stop_after_turn",
    "tool_timeout_s",
    "stream_idle_timeout_s",
    "stream_reasoning_timeout_s",
    "cache_retention",
    "temperature",
    "max_tokens",
    "max_parallel_tools",
    "max_tool_result_chars",
    "usage_limits",
    "tracer_provider",
    "trace_content",
    "trace_content_max_chars",
)
"""The constructor's arguments the loop takes as they are (`AgentLoopConfig` fields)."""


def loop_hooks(options: Mapping[str, Any], placeholder: Model) -> AgentLoopConfig:
    """The `Agent` constructor's hooks and bounds as an `AgentLoopConfig`, with
    `placeholder` as its model: each run's config names the model the run uses."""
    given = {name: options[name] for name in _LOOP_OPTIONS}
    given["trace_content"] = bool(given["trace_content"])  # None: as the parent run, else off
    return AgentLoopConfig(model=placeholder, **given)


def check_options(options: Mapping[str, Any]) -> None:
    """Check the `Agent` constructor's arguments.

    Raises:
        ConfigError: the first invalid argument, saying what to pass instead.
    """
    prompt = options["system_prompt"]
    if prompt is not None and not isinstance(prompt, str):
        raise ConfigError(f"system_prompt must be a str, or None for none, not {prompt!r}")
    for name in _CALLABLES:
        value = options[name]
        if value is not None and not callable(value):
            raise ConfigError(f"{name} must be a function, not {type(value).__name__}")
    if options["cache_retention"] not in (None, "none", "short", "long"):
        raise ConfigError(
            "cache_retention must be 'short', 'long', 'none' or None, "
            f"not {options['cache_retention']!r}"
        )
    temperature = options["temperature"]
    if temperature is not None and not (
        isinstance(temperature, int | float)
        and not isinstance(temperature, bool)
        and math.isfinite(temperature)
        and temperature >= 0
    ):
        raise ConfigError(
            f"temperature must be a number, 0 or more (None: the provider's default), not "
            f"{temperature!r}"
        )
    max_tokens = options["max_tokens"]
    if max_tokens is not None and not (
        isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens >= 1
    ):
        raise ConfigError(
            f"max_tokens must be a whole number, 1 or more (None: the model's own limit), not "
            f"{max_tokens!r}"
        )
    if options["tool_execution"] not in ("parallel", "sequential"):
        raise ConfigError(
            f"tool_execution must be 'parallel' or 'sequential', not {options['tool_execution']!r}"
        )
    for name in ("steering_mode", "follow_up_mode"):
        check_queue_mode(name, options[name])
    if options["stream_fn"] is not None and options["llm_call"] is not None:
        raise ConfigError("pass either stream_fn or llm_call, not both")
    if options["format_messages"] is not None and options["llm_call"] is None:
        raise ConfigError("format_messages only applies with llm_call; pass llm_call too")
    retries = options.get("output_retries", 0)
    if not is_whole_number(retries, 0):
        raise ConfigError(f"output_retries must be a whole number >= 0, not {retries!r}")
    max_turns = options["max_turns"]
    if max_turns is not None and not is_whole_number(max_turns, 1):
        raise ConfigError(f"max_turns must be a whole number >= 1 or None, not {max_turns!r}")
    delay = options["max_retry_delay_ms"]
    if delay is not None and not is_whole_number(delay, 0):
        raise ConfigError(f"max_retry_delay_ms must be a whole number >= 0 or None, not {delay!r}")
    checked_session_id(options["session_id"])
    messages = options["messages"]
    if messages is not None and (
        isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable)
    ):
        raise ConfigError("messages must be a list of messages")


def checked_session_id(session_id: Any) -> str | None:
    """`session_id` as given, checked as a store checks it (`check_session_id`) with or
    without a `session_store`: the id also goes to the provider (OpenAI's
    `prompt_cache_key`), where an empty one is silently not sent; None: no session.

    Raises:
        ConfigError: not a str or None; empty, or holding a control character or a lone
            surrogate.
    """
    from yiemagent.sessions import check_session_id

    if session_id is None:
        return None
    if not isinstance(session_id, str):
        raise ConfigError(f"session_id must be a str or None, not {type(session_id).__name__}")
    return check_session_id(session_id)


def prompt_messages(
    input: Any,
    images: Sequence[ImageContent | DocumentContent] | None,
    *,
    method: str = "prompt",
) -> list[AgentMessage]:
    """A prompt as messages: a text (with `images`: images and documents), a message, an
    OpenAI user dict, or a list of messages/dicts.

    Args:
        method: the `Agent` method given `input` ("prompt", "send", "steer", "follow_up"),
            which the error text names.

    Raises:
        MessageInputError: (a `ValueError`) not a prompt (an empty list included), or
            `images` with something other than a text.
    """
    if isinstance(input, str):
        for image in images or []:
            if not isinstance(image, ImageContent | DocumentContent):
                raise MessageInputError(f"images must be ImageContent, not {type(image).__name__}")
        return [UserMessage([TextContent(input), *(images or [])])]
    if images:
        raise MessageInputError("images go with a text prompt; put them in the message's content")
    single = isinstance(input, Mapping) or hasattr(input, "role")
    what = "prompt" if method == "prompt" else f"{method}()"
    if not single and (isinstance(input, bytes) or not isinstance(input, Iterable)):
        raise MessageInputError(
            f"{what} must be a text, a message or a list of them, not {type(input).__name__}"
        )
    messages = to_messages([input] if single else input, what=what)
    if not messages:
        if method == "prompt":
            raise MessageInputError("a prompt needs at least one message; use resume() to continue")
        raise MessageInputError(f"{what} needs at least one message")
    return messages


def media_blocks(messages: Sequence[AgentMessage]) -> list[ImageContent | DocumentContent]:
    """The images and documents of the user messages in `messages`."""
    return [
        block
        for message in messages
        if isinstance(message, UserMessage) and not isinstance(message.content, str)
        for block in message.content
        if isinstance(block, ImageContent | DocumentContent)
    ]


def run_tools(tools: Iterable[AgentTool | Callable[..., Any]] | None) -> list[AgentTool]:
    """A run's own tools (`prompt(tools=...)`), checked; a typed function is made a tool as
    `@tool` makes it (`to_agent_tool`).

    Raises:
        ConfigError: an item that is neither a tool nor a function, a function `@tool`
            refuses, or two tools of one name.
    """
    from yiemagent.tools import to_agent_tool

    if tools is None:
        return []
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        raise ConfigError(
            f"tools must be a list of AgentTool or typed functions, not {type(tools).__name__}"
        )
    checked: list[AgentTool] = []
    for item in tools:
        tool = to_agent_tool(item)
        if any(other.name == tool.name for other in checked):
            raise ConfigError(
                f"tools: two tools named {tool.name!r}; rename one (@tool(name=...)) or drop it"
            )
        checked.append(tool)
    return checked


def make_store(tools: Any, tool_store: Any) -> ToolStore:
    """The agent's `ToolStore`.

    `tool_store` is used as it is (tools registered in it later show on the next turn).
    `tools` — a `ToolStore`, a mapping or a list — is copied into the store (a new one when no
    `tool_store`), so two agents built from one `ToolStore` never see each other's
    registrations. A copied `listTools` is rebound to the new store. Give the store a
    `writeTool` writes into as `tool_store` (the seeds' `_tool_store`).

    Raises:
        ConfigError: `tool_store` is not a `ToolStore`, or a tool in `tools` conflicts with a
            different tool of the same name in `tool_store`.
    """
    from yiemagent.tools import ToolStore, list_tools_tool

    if tool_store is not None and not isinstance(tool_store, ToolStore):
        raise ConfigError(f"tool_store must be a ToolStore, not {type(tool_store).__name__}")
    if tool_store is not None:
        store = tool_store
    else:
        store = ToolStore(tools.name if isinstance(tools, ToolStore) else "agent")
    wants_list_tools = False
    for tool in to_tool_list(tools):
        if tool.name == "listTools":  # bound to its own store: rebound below
            wants_list_tools = True
            continue
        existing = store.tools.get(tool.name)
        if existing is tool:
            continue
        if existing is not None and tool_store is None:
            raise ConfigError(
                f"two different tools named {tool.name!r} in tools: tool names must be "
                "unique; rename one (@tool(name=...)) or drop it"
            )
        if existing is not None:
            raise ConfigError(
                f"tool {tool.name!r} is in both tools and tool_store with different "
                "definitions; pass it in one of them"
            )
        store.register(tool)
    if wants_list_tools and "listTools" not in store:
        store.register(list_tools_tool(store))
    return store


# ── a run's answer ───────────────────────────────────────────────────────────


def run_answer(
    answer: AssistantMessage,
    new_messages: Sequence[AgentMessage],
    end: AgentEndEvent | None,
    output: OutputSpec[Any] | None,
) -> AssistantMessage | OutputMessage[Any]:
    """The answer of a finished run.

    Args:
        answer: the run's final assistant message (`RunDriver.run`).
        new_messages: the messages the run added, for the error.
        end: the run's `AgentEndEvent` (None if it never ended).
        output: the run's output type, if any.

    Returns:
        `answer` (an aborted run's "aborted" message included); with an output type, the
        `OutputMessage` of `output_reply`.

    Raises:
        UsageLimitExceeded: the run's `usage_limits` stopped it.
        AgentRunError: the run ended in error, or (with an output type) without a valid
            value.
    """
    if output is not None:
        reply = output_reply(answer, end)
        if not isinstance(reply, OutputMessage):
            raise AgentRunError(reply, new_messages)
        return reply
    if answer.stop_reason == "error":  # an error is raised, never an empty reply
        if end is not None and end.reason == "usage_limit":
            raise UsageLimitExceeded(answer, new_messages)
        raise AgentRunError(answer, new_messages)
    return answer


def output_reply(
    answer: AssistantMessage, end: AgentEndEvent | None
) -> OutputMessage[Any] | AssistantMessage:
    """The answer of a run with an output type.

    Returns:
        An `OutputMessage` with the validated `output` (reason "stop"), or with `output`
        `None` when the run waits for approvals (reason "awaiting_approval"). Else the
        error message for `AgentRunError`: its text names the problem (the last validation
        errors after the retries, the error, the abort, max_turns).
    """
    fields = {f.name: getattr(answer, f.name) for f in dataclasses.fields(AssistantMessage)}
    if end is not None and end.reason in ("stop", "awaiting_approval"):
        output = end.output if end.reason == "stop" else None
        return OutputMessage(**fields, output=output)
    reason = end.reason if end is not None else "error"
    if answer.stop_reason == "error" and answer.error_message:
        text = answer.error_message
    else:
        detail = f": {answer.error_message}" if answer.error_message else ""
        text = f"the run ended ({reason}{detail}) before the model gave a valid output"
    return dataclasses.replace(answer, stop_reason="error", error_message=text)


# ── what an Agent owns ───────────────────────────────────────────────────────


class Closeable(Protocol):
    """What an `Agent` can own: anything with an async `close()` (an MCP server)."""

    async def close(self) -> None:
        """Release the resource (awaited once, when the owning agent closes)."""
        ...


class OwnedResources:
    """The resources an agent owns, in the order it took them (each once)."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Closeable] = []

    def add(self, resource: Closeable) -> None:
        """Own `resource` (a second `add` of the same one is a no-op).

        Raises:
            ConfigError: `resource` has no `close()`.
        """
        if not callable(getattr(resource, "close", None)):
            raise ConfigError(f"own() needs an object with an async close(), not {resource!r}")
        if resource not in self._items:
            self._items.append(resource)

    async def close_all(self) -> None:
        """Close every resource, last owned first; a failing `close()` is logged."""
        while self._items:
            resource = self._items.pop()
            try:
                await resource.close()
            except Exception:
                logger.exception("closing %r failed; the agent is closed anyway", resource)
