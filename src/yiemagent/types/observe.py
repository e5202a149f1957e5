"""What the loop tells an observer about a run: the hooks OpenTelemetry tracing plugs into
(DESIGN §13), kept in the bottom layer so the loop never imports `yiemagent.telemetry`.

The loop asks `run_observer(config)` once per run; `None` (the default: no
`tracer_provider` and nothing `instrument()`-ed) means no hook is called at all, so an
untraced run pays one attribute read per model call and per tool call. A `tracer_provider`
on the config is turned into an observer by `yiemagent.telemetry`, loaded by name on first
use (like a provider module) only then.

Span lifetimes: a `RunSpan` from `agent_start` to `agent_end` (ended on every path, also a
cancelled run); a `ChatSpan` per model call from the request to the final message; a
`ToolSpan` per tool call from its start event to its end event, in whose `activate()` the
tool's own code runs (contextvars), so spans the tool opens are its children; a call held
for approval has no end event, and its span ends when its batch does (the run that resumes
it traces the call anew).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    from yiemagent.types.config import AgentLoopConfig
    from yiemagent.types.messages import AgentMessage, AssistantMessage, ToolCall
    from yiemagent.types.model import Context, Model, StreamOptions
    from yiemagent.types.tools import AgentTool, AgentToolResult

__all__ = [
    "ChatSpan",
    "RunObserver",
    "RunSpan",
    "ToolFailure",
    "ToolSpan",
    "content_traced",
    "run_observer",
    "set_default_observer",
    "tracing_content",
]


ToolFailure: TypeAlias = Literal[
    "tool_not_found",
    "invalid_arguments",
    "blocked",
    "rejected",
    "usage_limit",
    "timeout",
    "aborted",
    "tool_error",
]
"""Why a tool call ended in an error, as the pipeline knows it (never read from the error
text, which a tool or a hook writes as it likes): no such tool, arguments that did not
validate, refused by `before_tool_call`, a held call not approved, refused by a usage
limit, its time limit, the run aborted or cancelled, or anything else (the tool raised, a
hook raised, `after_tool_call` made it an error)."""


class ToolSpan(Protocol):
    """One tool call."""

    def activate(self) -> AbstractContextManager[object]:
        """Make this span the current context while the tool's code runs."""
        ...

    def end(self, result: AgentToolResult, is_error: bool, failure: ToolFailure) -> None:
        """The call's final result (after `after_tool_call`); `failure` says why it is an
        error (read only when `is_error`)."""
        ...

    def held(self) -> None:
        """The call is held for approval: it ends without a result in this run."""
        ...


class ChatSpan(Protocol):
    """One model call."""

    def activate(self) -> AbstractContextManager[object]:
        """Make this span the current context while the provider call starts (its HTTP
        client's spans become children)."""
        ...

    def end(self, message: AssistantMessage, error_type: str | None) -> None:
        """The final assistant message; `error_type` as in `ErrorEvent.error_type`."""
        ...


class RunSpan(Protocol):
    """One run of the agent loop."""

    def activate(self) -> AbstractContextManager[object]:
        """Make this span the current context for the run's own work (hooks)."""
        ...

    def chat(self, model: Model, context: Context, options: StreamOptions) -> ChatSpan:
        """A model call starts."""
        ...

    def tool(self, call: ToolCall, tool: AgentTool | None) -> ToolSpan:
        """A tool call starts (`tool` is None for an unknown tool)."""
        ...

    def end(self, reason: str, messages: Sequence[AgentMessage], error: str | None) -> None:
        """The run ended with `AgentEndEvent.reason` `reason`; `messages` are its new
        messages; `error` says why when it failed or was aborted."""
        ...


class RunObserver(Protocol):
    """Makes one `RunSpan` per run."""

    def run(self, config: AgentLoopConfig, system_prompt: str) -> RunSpan:
        """A run starts with `config`."""
        ...


_content_traced: ContextVar[bool] = ContextVar("yiemagent_content_traced", default=False)


def content_traced() -> bool:
    """Whether the span current here records content (`trace_content` /
    `capture_content`), so code running inside it (a tool's) may put text the model or the
    user wrote on it, such as a handoff's reason; False where nothing traces."""
    return _content_traced.get()


@contextmanager
def tracing_content(on: bool) -> Iterator[None]:
    """Say `content_traced() == on` inside the block (an observer's span activation)."""
    token = _content_traced.set(on)
    try:
        yield
    finally:
        _content_traced.reset(token)


_default: RunObserver | None = None
_last: tuple[object, tuple[bool, int | None], RunObserver] | None = None


def set_default_observer(observer: RunObserver | None) -> None:
    """Trace every run that names no `tracer_provider` with `observer` (None: stop);
    `yiemagent.telemetry.instrument()` calls it."""
    global _default
    _default = observer


def run_observer(config: AgentLoopConfig) -> RunObserver | None:
    """The observer for a run of `config`: one for its `tracer_provider` (the last one made
    is re-used while the provider and the content options stay the same), else the default;
    None when nothing traces."""
    global _last
    provider = config.tracer_provider
    if provider is None:
        return _default
    options = (config.trace_content, config.trace_content_max_chars)
    last = _last
    if last is not None and last[0] is provider and last[1] == options:
        return last[2]
    spans = importlib.import_module("yiemagent.telemetry._spans")
    observer: RunObserver = spans.OtelObserver(
        provider, capture_content=options[0], content_max_chars=options[1]
    )
    _last = (provider, options, observer)
    return observer
