"""`AgentLoopConfig` and `AgentState` (DESIGN §3)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypeVar

from yiemagent.errors import ConfigError
from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.callbacks import signal_optional
from yiemagent.types.context import (
    AfterToolCallContext,
    BeforeToolCallContext,
    TurnContext,
    TurnUpdate,
)
from yiemagent.types.limits import UsageLimits
from yiemagent.types.messages import AgentMessage, AssistantMessage, Message
from yiemagent.types.model import Model, ProviderOptions, ThinkingLevel
from yiemagent.types.output import DEFAULT_OUTPUT_RETRIES, OutputSpec
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import (
    AfterToolCallResult,
    AgentTool,
    BeforeToolCallResult,
    ToolApproval,
    is_seconds,
    is_whole_number,
)

__all__ = [
    "DEFAULT_MAX_TOOL_RESULT_CHARS",
    "DEFAULT_TRACE_CONTENT_MAX_CHARS",
    "AgentLoopConfig",
    "AgentState",
    "MaybeAwaitable",
    "ToolExecutionMode",
]

T = TypeVar("T")
MaybeAwaitable: TypeAlias = T | Awaitable[T]
describe_alias(
    __name__,
    "MaybeAwaitable",
    """Every hook may be a plain or an async function.""",
)

ToolExecutionMode: TypeAlias = Literal["parallel", "sequential"]
describe_alias(
    __name__,
    "ToolExecutionMode",
    """"parallel": the tool calls of one assistant message run at once; "sequential": one after
another.""",
)


DEFAULT_MAX_TOOL_RESULT_CHARS = 100_000
"""Most characters of text one tool result keeps (some 25,000 tokens; as an MCP tool's,
`add_server`'s `max_result_chars`): a safety net against a tool that returns megabytes,
not a way to fit a small context window."""

DEFAULT_TRACE_CONTENT_MAX_CHARS = 32_000
"""Most characters of one content attribute of a span (`trace_content`): a chat span's
messages keep their newest whole within it, a long text is cut in its middle. Some 32 KB
a value, so a span of a long run stays far from gRPC's 4 MiB message limit."""


@dataclass(slots=True, kw_only=True)
class AgentLoopConfig(ProviderOptions):
    """How a run behaves: the model, the hooks and the provider options.

    Hooks may be plain or async functions. The provider options (`api_key`, `temperature` …
    `on_response`) are the `ProviderOptions` fields, declared once and copied into each
    model call's `StreamOptions`. Times are in seconds unless the name says ms.

    Raises:
        ConfigError: an invalid `tool_execution`, a non-positive cap, limit or timeout.
    """

    model: Model
    convert_to_llm: Callable[[list[AgentMessage]], MaybeAwaitable[Sequence[Message]]] | None = None
    """Default: user/assistant/toolResult pass; bash/compaction/branch become user text."""
    transform_context: (
        Callable[[list[AgentMessage], AbortSignal], MaybeAwaitable[list[AgentMessage]]] | None
    ) = None
    """`(messages, signal) -> messages` before each model call, ahead of `convert_to_llm`,
    e.g. a `Compactor`: it gets a copy of the transcript's list and returns the
    model's view. One with a `context_overflowed(error_message) -> bool` method is asked,
    when the provider refuses a call as longer than the model's context window
    (`yiemagent.ai.is_context_overflow`) before any of the answer arrived, whether it will
    make its next view smaller; True: it is run again and the call made once more."""
    get_api_key: Callable[[str], MaybeAwaitable[str | None]] | None = None
    """Called per model call with the provider name; wins over `api_key`."""
    get_steering_messages: Callable[[], MaybeAwaitable[Sequence[AgentMessage]]] | None = None
    """Polled at the start and after each turn; what it returns opens the next turn."""
    get_follow_up_messages: Callable[[], MaybeAwaitable[Sequence[AgentMessage]]] | None = None
    """Polled only when the run would otherwise end; messages continue it."""
    tool_execution: ToolExecutionMode = "parallel"
    """"parallel" runs a batch concurrently only when every called tool has `parallel=True`;
    else, and with "sequential", one call after another."""
    max_parallel_tools: int | None = None
    """Most calls of a parallel batch running at once; None: no cap."""
    tool_timeout_s: float | None = None
    """Seconds per tool call for tools without their own `timeout_s`; None: none."""
    max_tool_result_chars: int | None = DEFAULT_MAX_TOOL_RESULT_CHARS
    """Most characters of text a tool result keeps: past it each text is cut in its
    middle with a note (`cut_tool_result`) before the result's end event, message and
    session record; `after_tool_call` still gets it whole. None: no cap."""
    before_tool_call: (
        Callable[[BeforeToolCallContext, AbortSignal], MaybeAwaitable[BeforeToolCallResult | None]]
        | None
    ) = None
    after_tool_call: (
        Callable[[AfterToolCallContext, AbortSignal], MaybeAwaitable[AfterToolCallResult | None]]
        | None
    ) = None
    should_stop_after_turn: Callable[[TurnContext], MaybeAwaitable[bool]] | None = None
    """True after a turn ends the run ("should_stop"), before the queues are polled."""
    prepare_next_turn: Callable[[TurnContext], MaybeAwaitable[TurnUpdate | None]] | None = None
    """Before each next turn: a `TurnUpdate` replaces the context, model or reasoning."""
    max_turns: int | None = None
    """Model calls per round (the prompt's, then each follow-up's); a round that reaches it
    takes queued follow-ups, and without any the run ends ("max_turns" if the model still
    called tools)."""
    stream_idle_timeout_s: float | None = 120.0
    """A model stream silent this long ends in error (None: no limit). Not applied to
    the embedded model (api "local"), whose own generation deadline bounds it."""
    stream_reasoning_timeout_s: float | None = 600.0
    """What `stream_idle_timeout_s` is while a reasoning model's call (`Model.reasoning`)
    has shown nothing but reasoning: before its first output and while its latest block is
    thinking (None: no limit). Such a model may think for minutes
    without sending a byte; 600 s is the OpenAI SDK's own read timeout."""
    usage_limits: UsageLimits | None = None
    """Caps on tokens, cost and tool calls for the run."""
    tracer_provider: Any = field(default=None, repr=False)
    """An OpenTelemetry `TracerProvider`: spans for this run (the `otel` extra);
    None: only what `yiemagent.telemetry.instrument()` set up, else nothing."""
    trace_content: bool = False
    """Record messages, tool arguments and results in the spans (off: they may hold
    personal data)."""
    trace_content_max_chars: int | None = DEFAULT_TRACE_CONTENT_MAX_CHARS
    """Most characters of each content attribute `trace_content` records (the older
    messages left out, long texts cut in their middle, every value still valid JSON);
    None: no bound but the SDK's attribute length limit."""
    output_type: OutputSpec[Any] | None = None
    """The run ends when the model returns a valid value of this type."""
    output_retries: int = DEFAULT_OUTPUT_RETRIES
    """Invalid outputs sent back to the model (with the errors) before the run ends in error."""
    agent_name: str | None = None
    """The name of the agent the run speaks for (spans and events name it)."""
    agent_description: str | None = None
    """What that agent does, in the application's words (the run's span records it)."""
    approvals: Mapping[str, ToolApproval] | None = None
    """Decisions on held tool calls, by tool-call id: a run continuing from a transcript
    whose last assistant message has held calls runs the approved ones and answers the
    rejected ones."""
    signal: AbortSignal | None = field(default=None, repr=False)
    """The run's abort signal when the loop function is given none (a per-request
    override); a signal passed to the function wins."""

    def run_signal(self, signal: AbortSignal | None) -> AbortSignal:
        """The signal a run or a step of it obeys: `signal`, else this config's, else a
        new one (never aborted: no abort)."""
        if signal is not None:
            return signal
        return self.signal if self.signal is not None else AbortSignal()

    def __post_init__(self) -> None:
        if self.signal is not None and not isinstance(self.signal, AbortSignal):
            raise ConfigError(f"signal must be an AbortSignal or None, not {self.signal!r}")
        if self.usage_limits is not None and not isinstance(self.usage_limits, UsageLimits):
            raise ConfigError(f"usage_limits must be a UsageLimits, not {self.usage_limits!r}")
        if self.tool_execution not in ("parallel", "sequential"):
            raise ConfigError(
                f"tool_execution must be 'parallel' or 'sequential', not {self.tool_execution!r}"
            )
        for name in (
            "max_parallel_tools",
            "max_turns",
            "max_tool_result_chars",
            "trace_content_max_chars",
        ):
            value = getattr(self, name)
            if value is not None and not is_whole_number(value, 1):
                raise ConfigError(f"{name} must be a whole number >= 1 or None, not {value!r}")
        retries = self.output_retries
        if not is_whole_number(retries, 0):
            raise ConfigError(f"output_retries must be a whole number >= 0, not {retries!r}")
        for name in ("tool_timeout_s", "stream_idle_timeout_s", "stream_reasoning_timeout_s"):
            value = getattr(self, name)
            if value is not None and not is_seconds(value):
                raise ConfigError(f"{name} must be > 0 seconds or None, not {value!r}")
        for name in _HOOKS:
            hook = getattr(self, name)
            if hook is not None and not callable(hook):
                raise ConfigError(f"{name} must be a function or None, not {hook!r}")
        for name, first in _SIGNAL_HOOKS:
            hook = getattr(self, name)
            if hook is not None:
                setattr(self, name, signal_optional(hook, name, first))


_HOOKS = (
    "convert_to_llm",
    "transform_context",
    "get_api_key",
    "get_steering_messages",
    "get_follow_up_messages",
    "before_tool_call",
    "after_tool_call",
    "should_stop_after_turn",
    "prepare_next_turn",
)
"""The loop's hooks: anything but a function there is refused when the config is made,
not found out at the first call (a tool call's hook would fail every call). The provider
options' callbacks (`on_payload`, `on_response`) go to the provider as they are."""


_SIGNAL_HOOKS = (
    ("transform_context", "messages"),
    ("before_tool_call", "context"),
    ("after_tool_call", "context"),
)
"""The hooks called with the run's signal as their second argument, which they may leave
out."""


@dataclass(slots=True)
class AgentState:
    """What an `Agent` knows, reduced from its events."""

    system_prompt: str = ""
    model: Model | None = None
    reasoning: ThinkingLevel | None = None
    """How hard the model thinks in each call of the next run; None: no thinking asked for."""
    tools: list[AgentTool] = field(default_factory=list)
    messages: list[AgentMessage] = field(default_factory=list)
    active_run: bool = False
    """A run is active: from its start to its `agent_end`."""
    streaming_message: AssistantMessage | None = None
    """The assistant message being streamed, from its `message_start` to its `message_end`."""
    pending_tool_calls: set[str] = field(default_factory=set)
    """Ids of the tool calls started (`tool_execution_start`) and not ended yet."""
    error_message: str | None = None
    active_agent: str | None = None
    """The name of the agent that answers the next prompt (after a handoff)."""
    """Why the current or last run's model call failed or was aborted; None when it did not."""
