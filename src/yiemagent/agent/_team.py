"""One run of an `Agent` in a team: who speaks, handoffs, guardrails, and the frame that
sub-agents read (DESIGN §17; `docs/teams.md`).

`TeamRun` is made by the run driver for each run. It knows the agent that answers (the
entry agent, or the one a handoff made active), offers that agent's `transfer_to_<name>`
tools, switches the run to the target's system prompt, tools and model at the next turn,
stamps each assistant message with the speaker's name, runs the guardrails (input ones
beside the first model call, output ones on the final answer) and keeps a tripped answer
out of the transcript. `RunFrame`, in a context variable while the run goes, is what an
`Agent.as_tool` call inside the run reads: where its sub-agent's events go, the path of
names, the usage budget left, and the held sub-runs to continue.
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from yiemagent.agent._guardrails import Guardrail, RunGuards, check_guardrail_list
from yiemagent.agent.held_calls import NestedHold
from yiemagent.errors import ConfigError
from yiemagent.types import (
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    Model,
    OutputSpec,
    StreamFn,
    ToolResultMessage,
    Usage,
    UsageLimits,
)
from yiemagent.types.callbacks import maybe_await

AgentLike: TypeAlias = Any
"""An `Agent` (typed loosely: this module sits below `agent.py`, which imports it)."""

__all__ = [
    "Handoff",
    "RunFrame",
    "TeamConfig",
    "TeamRun",
    "check_agent_name",
    "current_frame",
    "remove_handoff_turns",
    "transcript_usage",
]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,52}$")
DEFAULT_MAX_HANDOFFS = 10


def check_agent_name(name: object) -> str:
    """`name` if it is a valid agent name (letters, digits, `_`, `-`; at most 52, so that
    `transfer_to_<name>` is a valid tool name).

    Raises:
        ConfigError: anything else.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"invalid agent name {name!r}: use 1 to 52 characters from A-Z, a-z, 0-9, '_' and '-'"
        )
    return name


@dataclass(slots=True)
class Handoff:
    """A handoff target: `agent`, with the `description` its transfer tool shows the model
    and an `input_filter(messages) -> messages` that trims what the target sees."""

    agent: AgentLike
    description: str | None = None
    input_filter: Callable[[list[AgentMessage]], list[AgentMessage]] | None = None

    @property
    def tool_name(self) -> str:
        """`transfer_to_<name>`."""
        return f"transfer_to_{self.agent.name}"


def remove_handoff_turns(messages: list[AgentMessage]) -> list[AgentMessage]:
    """A `Handoff.input_filter`: `messages` without the turns that only handed over (an
    assistant message whose calls are all `transfer_to_*`, and their results), so the target
    sees the conversation as if the question had come to it first."""
    dropped: set[str] = set()
    kept: list[AgentMessage] = []
    for message in messages:
        if isinstance(message, AssistantMessage):
            calls = message.tool_calls
            if calls and not message.text and all(c.name.startswith("transfer_to_") for c in calls):
                dropped.update(c.id for c in calls)
                continue
        if isinstance(message, ToolResultMessage) and message.tool_call_id in dropped:
            continue
        kept.append(message)
    return kept


def as_handoffs(items: Any, agent_class: type[Any]) -> list[Handoff]:
    """`Agent(handoffs=...)` as `Handoff`s: each item an `Agent` (`agent_class`) or a
    `Handoff`.

    Raises:
        ConfigError: another kind of item, or two targets with the same name.
    """
    Agent = agent_class
    result: list[Handoff] = []
    for item in items or ():
        if isinstance(item, Agent):
            item = Handoff(item)
        if not isinstance(item, Handoff) or not isinstance(item.agent, Agent):
            raise ConfigError(f"handoffs holds {item!r}; give Agents or Handoff(agent, ...)")
        if any(h.agent.name == item.agent.name for h in result):
            raise ConfigError(f"handoffs names the agent {item.agent.name!r} twice")
        result.append(item)
    return result


@dataclass(slots=True)
class TeamConfig:
    """An `Agent`'s team options, checked (DESIGN §17)."""

    name: str
    description: str | None
    handoffs: list[Handoff]
    input_guardrails: list[Guardrail]
    output_guardrails: list[Guardrail]
    max_handoffs: int

    @classmethod
    def of(cls, options: Mapping[str, Any], agent_class: type[Any]) -> TeamConfig:
        """From the `Agent` constructor's arguments.

        Raises:
            ConfigError: an invalid name, handoff, guardrail list or `max_handoffs`.
        """
        limit = options["max_handoffs"]
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise ConfigError(f"max_handoffs must be a whole number >= 0, not {limit!r}")
        description = options["description"]
        if description is not None and not isinstance(description, str):
            raise ConfigError(f"description must be a str, not {type(description).__name__}")
        return cls(
            check_agent_name(options["name"]),
            description,
            as_handoffs(options["handoffs"], agent_class),
            check_guardrail_list(options["input_guardrails"], "input_guardrails"),
            check_guardrail_list(options["output_guardrails"], "output_guardrails"),
            limit,
        )


@dataclass(slots=True)
class RunFrame:
    """What an `as_tool` call reads about the run it runs in (a context variable)."""

    path: tuple[str, ...]
    """The agents' names from the outermost down to the one speaking in this run."""
    emit: Callable[[AgentEvent], Awaitable[None] | None]
    """The run's event sink: a sub-agent's events go here as `NestedAgentEvent`s."""
    limits: UsageLimits | None
    spent: Callable[[], Usage]
    """What the run has used so far (model calls and tool results)."""
    holds: dict[str, NestedHold] = field(default_factory=dict)
    """Sub-runs held for approval in this run, by the id of the call that ran them."""
    resumes: dict[str, NestedHold] = field(default_factory=dict)
    """Held sub-runs to continue (a resumed run), by call id; taken when continued."""
    tracer_provider: Any = None


current_frame: ContextVar[RunFrame | None] = ContextVar("yiemagent_run_frame", default=None)


def transcript_usage(messages: Sequence[AgentMessage]) -> Usage:
    """The summed usage of `messages`: model calls and tool results (sub-agents' runs)."""
    total = Usage()
    for message in messages:
        usage = message.usage if isinstance(message, AssistantMessage | ToolResultMessage) else None
        if usage is not None:
            total.add(usage)
    return total


class TeamRun:
    """One run's team state (event loop thread only); see the module docstring."""

    def __init__(
        self,
        entry: AgentLike,
        messages: list[AgentMessage],
        signal: Any,
        *,
        output: OutputSpec[Any] | None,
        resumes: dict[str, NestedHold],
    ) -> None:
        parent = current_frame.get()
        self.entry = entry
        self.active: AgentLike = _find(entry, entry.state.active_agent) or entry
        self._prefix = parent.path if parent is not None else ()
        self._messages = messages
        self._start = len(messages)
        self._signal = signal
        self._output = output
        self.handoffs = 0
        self.pending: Handoff | None = None
        self.guards = RunGuards(signal, messages, output)
        self.frame: RunFrame | None = None
        self._resumes = resumes
        self._holds: dict[str, NestedHold] = {}
        self._team = len(_reachable(entry)) > 1

    @property
    def holds(self) -> dict[str, NestedHold]:
        """The sub-runs held for approval in this run, by call id."""
        return self._holds

    # ── the speaking agent's configuration ────────────────────────────────

    def model(self) -> Model:
        """The speaking agent's model (resolved: the embedded one loads on first use)."""
        model: Model = self.active._driver.resolve_model()
        return model

    def system_prompt(self) -> str:
        return str(self.active.state.system_prompt)

    def tools(self) -> list[AgentTool]:
        """The speaking agent's tools, then its transfer tools."""
        tools: list[AgentTool] = self.active.state.tools
        for handoff in self.active.handoffs:
            tools.append(self._transfer_tool(handoff))
        return tools

    def stream_fn(self, own: StreamFn | None) -> StreamFn | None:
        """The run's model call: `own` for an agent without handoffs, else the speaking
        agent's (the provider dispatch when it has none)."""
        if not self._team:
            return own
        team = self

        async def speaking_stream(model: Model, context: Any, options: Any = None) -> Any:
            inner = team.active._driver.stream_fn
            if inner is None:
                from yiemagent.ai import stream as inner
            return await maybe_await(inner(model, context, options))

        return speaking_stream

    # ── handoffs ─────────────────────────────────────────────────────────

    def _transfer_tool(self, handoff: Handoff) -> AgentTool:
        target = handoff.agent
        description = handoff.description or target.description or ""
        text = f"Hand the conversation over to the agent {target.name!r}"
        text = f"{text}: {description}" if description else f"{text}."

        async def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
            return self._request(handoff, str(args.get("reason") or ""))

        return AgentTool(
            name=handoff.tool_name,
            label=f"Transfer to {target.name}",
            description=text,
            input_schema={
                "type": "object",
                "properties": {"reason": {"type": "string", "description": "Why, in a few words."}},
            },
            execute=execute,
            parallel=True,
        )

    def _request(self, handoff: Handoff, reason: str) -> str:
        """A transfer tool was called: the handoff happens at the next turn."""
        limit = self.entry.max_handoffs
        if self.pending is not None:
            raise RuntimeError(f"already handing over to {self.pending.agent.name!r}")
        if self.handoffs >= limit:
            raise RuntimeError(
                f"handoff to {handoff.agent.name!r} refused: max_handoffs={limit} reached in "
                "this run; answer the user yourself"
            )
        self.handoffs += 1
        self.pending = handoff
        _span_event(self.active.name, handoff.agent.name, reason)
        return f"Transferred to {handoff.agent.name}; it answers from here on."

    def apply_handoff(self, context: AgentContext) -> Model | None:
        """At a turn boundary: switch to a requested handoff's target (its system prompt,
        tools, model; `input_filter` trims the messages it sees). Returns its model, or
        None when no handoff is pending."""
        handoff = self.pending
        if handoff is None:
            return None
        self.pending = None
        self.active = handoff.agent
        if self.frame is not None:
            self.frame.path = (*self._prefix, self.active.name)
        context.system_prompt = self.system_prompt()
        context.tools = self.tools()
        if handoff.input_filter is not None:
            context.messages = list(handoff.input_filter(list(context.messages)))
        return self.model()

    def finish(self) -> str:
        """After the run: the name of the agent that answers the next prompt."""
        if self.pending is not None:
            self.active, self.pending = self.pending.agent, None
        return str(self.active.name)

    # ── the run's frame and its events ────────────────────────────────────

    @contextlib.asynccontextmanager
    async def running(
        self,
        emit: Callable[[AgentEvent], Awaitable[None] | None],
        prompts: Sequence[AgentMessage] | None,
        *,
        limits: UsageLimits | None,
        tracer_provider: Any,
    ) -> AsyncIterator[None]:
        """While the run goes: its `RunFrame` is current, and the input guardrails of the
        prompts run beside the first model call (a trip aborts it at once)."""
        self.frame = RunFrame(
            (*self._prefix, self.active.name),
            emit,
            limits,
            self.spent,
            self._holds,
            self._resumes,
            tracer_provider,
        )
        token = current_frame.set(self.frame)
        if prompts:
            self.guards.start_input(self.active.input_guardrails, self.active.name, prompts)
        try:
            yield
        finally:
            current_frame.reset(token)
            self.guards.stop()

    def spent(self) -> Usage:
        """What the run has used so far."""
        return transcript_usage(self._messages[self._start :])

    def wrap(
        self, inner: Callable[[AgentEvent], Awaitable[None] | None]
    ) -> Callable[[AgentEvent], Awaitable[None] | None]:
        """The run's event sink around `inner`: each assistant message names its agent; a
        message the guardrails must see first waits for them (`RunGuards`); a run a
        guardrail stopped ends with reason "guardrail"."""
        guards = self.guards

        def emit(event: AgentEvent) -> Awaitable[None] | None:
            kind = type(event)
            if kind is MessageEndEvent or kind is MessageStartEvent:
                message = event.message  # type: ignore[union-attr]
                if isinstance(message, AssistantMessage):
                    speaker = self.active
                    message.agent = speaker.name
                    if kind is MessageEndEvent and guards.must_check(
                        message, speaker.output_guardrails
                    ):
                        return guards.checked(event, inner, speaker)  # type: ignore[arg-type]
            elif kind is AgentEndEvent and guards.trip is not None:
                event.reason = "guardrail"  # type: ignore[union-attr]
            return inner(event)

        return emit


def _find(entry: AgentLike, name: str | None) -> AgentLike | None:
    if name is None:
        return None
    return next((a for a in _reachable(entry) if a.name == name), None)


def _reachable(entry: AgentLike) -> list[AgentLike]:
    """`entry` and every agent its handoffs reach, breadth first."""
    seen = [entry]
    for agent in seen:
        for handoff in agent.handoffs:
            if all(handoff.agent is not other for other in seen):
                seen.append(handoff.agent)
    return seen


def _span_event(source: str, target: str, reason: str) -> None:
    """A `handoff` event on the current span (the transfer tool's `execute_tool`), when
    OpenTelemetry is in use."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(
            "handoff",
            {"yiemagent.handoff.from": source, "yiemagent.handoff.to": target,
             "yiemagent.handoff.reason": reason},
        )  # fmt: skip
