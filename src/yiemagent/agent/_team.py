"""What a run of an `Agent` hands over or holds back (DESIGN §17; `docs/teams.md`,
`docs/approvals.md`): handoffs between the agents of a team, the frame a sub-agent run as a
tool reads, and the tool calls held for approval — one module, since a held call of an
`Agent.as_tool` tool may stand for a sub-agent's run that is itself held. The guardrails a
run applies are `_guardrails`.

`TeamRun` is made by the run driver for each run. It knows the agent that answers (the
entry agent, or the one a handoff made active), offers that agent's `transfer_to_<name>`
tools, switches the run to the target's system prompt, tools and model at the next turn
(and asks its tool hooks too), stamps each assistant message with the speaker's name, runs
the guardrails (input ones beside the first model call and beside the call a steering or
follow-up message goes to, output ones on the final answer) and keeps a tripped answer out of
the transcript. `RunFrame`, in a context variable while the run goes, is what an
`Agent.as_tool` call inside the run reads: where its sub-agent's events go, the path of
names, the usage budget left, and the held sub-runs to continue.

Held calls: `HeldCalls` remembers which tool calls of the transcript's last assistant
message a run held, and the decision taken on each; it is stored as JSON with the session.
A held sub-agent run is a `NestedHold` (the sub-run's transcript and its own `HeldCalls`),
and the pending list shows the sub-run's calls in its place, with their `agent_path`.
Crash rule (at most once): when a resume starts, before an approved call runs, the stored
record becomes a `resuming` one holding the decisions it applies; a process killed during
that run leaves each call without a result to the session repair (its rejection, or an error
result saying the session was interrupted), never to a second execution.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import operator
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from yiemagent.agent._guardrails import (
    Guardrail,
    RunGuards,
    TrippedInputs,
    check_guardrail_list,
)
from yiemagent.errors import ApprovalPendingError, ConfigError, exception_summary
from yiemagent.types import (
    AfterToolCallResult,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentMessage,
    AgentTool,
    AssistantMessage,
    BeforeToolCallResult,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    Model,
    OutputSpec,
    PendingApproval,
    StreamFn,
    TextContent,
    ToolApproval,
    ToolCall,
    ToolResultMessage,
    Usage,
    UsageLimits,
)
from yiemagent.types.callbacks import maybe_await
from yiemagent.types.messages import message_from_dict, message_to_dict, transcript_usage
from yiemagent.types.observe import content_traced
from yiemagent.types.tools import is_whole_number

__all__ = [
    "DEFAULT_MAX_HANDOFFS",
    "Handoff",
    "HandoffViews",
    "HeldCalls",
    "NestedHold",
    "RunFrame",
    "TeamConfig",
    "TeamRun",
    "check_reason",
    "current_frame",
    "remove_handoff_turns",
]

logger = logging.getLogger(__name__)


AgentLike: TypeAlias = Any
"""An `Agent` (typed loosely: this module sits below `_agent.py`, which imports it)."""


_NAME = re.compile(r"^[A-Za-z0-9_-]{1,52}$")


DEFAULT_MAX_HANDOFFS = 10


current_frame: ContextVar[RunFrame | None] = ContextVar("yiemagent_run_frame", default=None)


# ── handoffs and the team's run ──────────────────────────────────────────────


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
    and an `input_filter(messages) -> messages`, plain or async, that trims what the target
    sees."""

    agent: AgentLike
    description: str | None = None
    input_filter: (
        Callable[[list[AgentMessage]], list[AgentMessage] | Awaitable[list[AgentMessage]]] | None
    ) = None

    @property
    def tool_name(self) -> str:
        """`transfer_to_<name>`."""
        return f"transfer_to_{self.agent.name}"


def output_type_not_applied(
    name: str, handoffs: Sequence[Handoff], output: OutputSpec[Any] | None
) -> str | None:
    """One line for the user when a handoff target of the agent `name` (its run's output
    type `output`) has an `output_type` of its own: a run keeps its entry's output type
    (or `prompt(output_type=...)`) whoever answers, so the target's does not apply."""
    for handoff in handoffs:
        own = getattr(handoff.agent, "_output", None)
        if own is not None and (output is None or own.schema != output.schema):
            entry = "none" if output is None else "another"
            return (
                f"agent {name!r} hands off to {handoff.agent.name!r}, whose own output_type "
                "does not apply there: whoever answers, a run keeps the output type of the "
                f"agent it starts on ({name!r}: {entry}) or of prompt(output_type=...) "
                "(docs/teams.md)"
            )
    return None


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
        ConfigError: another kind of item, two targets with the same name, or an
            `input_filter` that is no function.
    """
    Agent = agent_class
    result: list[Handoff] = []
    for item in items or ():
        if isinstance(item, Agent):
            item = Handoff(item)
        if not isinstance(item, Handoff) or not isinstance(item.agent, Agent):
            raise ConfigError(f"handoffs holds {item!r}; give Agents or Handoff(agent, ...)")
        if item.input_filter is not None and not callable(item.input_filter):
            raise ConfigError(
                f"the input_filter of the handoff to {item.agent.name!r} is "
                f"{item.input_filter!r}, not a function (messages) -> messages"
            )
        if any(h.agent.name == item.agent.name for h in result):
            raise ConfigError(f"handoffs names the agent {item.agent.name!r} twice")
        result.append(item)
    return result


def check_team_names(name: str, handoffs: Sequence[Handoff]) -> None:
    """Refuse a team in which two agents share a name: the agent `name` being made and
    every agent its `handoffs` reach. The speaker of each message, `state.active_agent`
    and a reopened session name the agent that answers next; with two of one name, the
    one found first (the entry) answered in place of the one handed to. An agent of the
    name `name` handing off to the very same targets is the one being made, copied (an
    `as_tool` call's fresh copy of an agent of a cyclic team).

    Raises:
        ConfigError: naming the name and the agents' paths from `name`.
    """
    targets = [handoff.agent for handoff in handoffs]
    seen: dict[str, tuple[Any, str]] = {}
    queue: list[tuple[Any, str]] = [(target, name) for target in targets]
    while queue:
        agent, via = queue.pop(0)
        path = f"{via} -> {agent.name}"
        if agent.name == name:
            theirs = [handoff.agent for handoff in agent.handoffs]
            if len(theirs) == len(targets) and all(map(operator.is_, theirs, targets)):
                continue
            raise ConfigError(
                f"the agent {name!r} hands off (through {path}) to another agent named "
                f"{name!r}; every agent of a team needs a name of its own"
            )
        first = seen.get(agent.name)
        if first is None:
            seen[agent.name] = (agent, path)
            queue.extend((handoff.agent, path) for handoff in agent.handoffs)
        elif first[0] is not agent:
            raise ConfigError(
                f"the team of agent {name!r} has two agents named {agent.name!r} (through "
                f"{first[1]} and {path}); every agent of a team needs a name of its own"
            )


@dataclass(slots=True)
class TeamConfig:
    """An `Agent`'s team options, checked."""

    name: str
    description: str | None
    handoffs: list[Handoff]
    input_guardrails: list[Guardrail]
    output_guardrails: list[Guardrail]
    max_handoffs: int
    return_to_entry: bool

    @classmethod
    def of(cls, options: Mapping[str, Any], agent_class: type[Any]) -> TeamConfig:
        """From the `Agent` constructor's arguments.

        Raises:
            ConfigError: an invalid name, handoff, guardrail list or `max_handoffs`.
        """
        limit = options["max_handoffs"]
        if not is_whole_number(limit, 0):
            raise ConfigError(f"max_handoffs must be a whole number >= 0, not {limit!r}")
        description = options["description"]
        if description is not None and not isinstance(description, str):
            raise ConfigError(f"description must be a str, not {type(description).__name__}")
        back = options["return_to_entry"]
        if not isinstance(back, bool):
            raise ConfigError(f"return_to_entry must be True or False, not {back!r}")
        name = check_agent_name(options["name"])
        handoffs = as_handoffs(options["handoffs"], agent_class)
        check_team_names(name, handoffs)
        return cls(
            name,
            description,
            handoffs,
            check_guardrail_list(options["input_guardrails"], "input_guardrails"),
            check_guardrail_list(options["output_guardrails"], "output_guardrails"),
            limit,
            back,
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
    trace_content: bool = False
    """Whether the run records content in its spans: a sub-agent that sets no
    `trace_content` of its own records as its parent does."""


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
        views: HandoffViews | None = None,
        trips: TrippedInputs | None = None,
        tools: Sequence[AgentTool] = (),
        instructions: str | None = None,
    ) -> None:
        parent = current_frame.get()
        self._run_tools = list(tools)
        self._instructions = instructions
        self._views = views
        self._trips = trips
        self.entry = entry
        self.active: AgentLike = _find(entry, entry.state.active_agent) or entry
        self._prefix = parent.path if parent is not None else ()
        self._messages = messages
        self._start = len(messages)
        self._signal = signal
        self._output = output
        self.handoffs = 0
        self.pending: Handoff | None = None
        self._held_turn(messages)
        self.guards = RunGuards(signal, messages, output)
        self.frame: RunFrame | None = None
        self._resumes = resumes
        self._holds: dict[str, NestedHold] = {}
        self._team = len(_reachable(entry)) > 1

    def _held_turn(self, messages: Sequence[AgentMessage]) -> None:
        """When the transcript ends with calls held for approval, their batch is finished by
        the agent that made them (its tools run the approved calls), and a transfer that
        succeeded in that batch takes effect after it, at the next turn."""
        held = _held(messages)
        if held is None:
            return
        message, _ = held
        writer = _find(self.entry, message.agent)
        if writer is None or writer is self.active:
            return
        after = messages[max(i for i, m in enumerate(messages) if m is message) + 1 :]
        answered = {
            m.tool_call_id for m in after if isinstance(m, ToolResultMessage) and not m.is_error
        }
        transfers = {h.tool_name: h for h in writer.handoffs}
        done = [transfers[c.name] for c in message.tool_calls
                if c.id in answered and c.name in transfers]  # fmt: skip
        self.active = writer
        self.pending = done[0] if done else None

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
        """The speaking agent's system prompt, then the run's own text (`prompt(instructions=
        ...)`, whichever agent speaks), a blank line between."""
        own = self.active.state.system_prompt or ""  # None assigned to state: no system prompt
        if not self._instructions:
            return own
        return f"{own}\n\n{self._instructions}" if own else self._instructions

    async def view(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        """`messages` (the run's transcript) as the speaking agent's model sees them: when a
        handoff with an `input_filter` made it speak, in this run or an earlier one, what
        that filter left of the messages before the handoff, then every message since (a
        new list); else `messages` itself. So a later prompt to the target shows it what
        its first turn showed, not the turns the filter took out. Input an input
        guardrail refused is left out first (`TrippedInputs`)."""
        if self._trips is not None:
            messages = self._trips.view(messages)
        if not any(h.input_filter is not None for h in _handoffs_of(self.entry)):
            return messages
        views = self._views
        seen = await _handoff_view(self.entry, messages, len(messages), self.active, views)
        if views is not None:
            views.keep(messages, self.active, seen)
        return messages if seen is None else seen

    def tools(self) -> list[AgentTool]:
        """The speaking agent's tools, the run's own (`prompt(tools=...)`: whichever agent
        speaks, the same objects, so a call of one is run or held the same way after a
        handoff), then its transfer tools.

        Raises:
            ConfigError: two of them share a name (providers refuse two tools of one name,
                and the model could reach only one of them).
        """
        tools: list[AgentTool] = self.active.state.tools
        names = {tool.name for tool in tools}
        for tool in self._run_tools:
            if tool.name in names:
                raise ConfigError(
                    f"agent {self.active.name!r} has a tool named {tool.name!r}, the name of "
                    "a tool given to this run; rename one of them"
                )
            tools.append(tool)
            names.add(tool.name)
        for handoff in self.active.handoffs:
            if handoff.tool_name in names:
                raise ConfigError(
                    f"agent {self.active.name!r} has a tool named {handoff.tool_name!r}, the "
                    f"name of its handoff to {handoff.agent.name!r}; rename the tool"
                )
            tools.append(self._transfer_tool(handoff))
        return tools

    def stream_fn(self, own: StreamFn | None) -> StreamFn | None:
        """The run's model call: `own` for an agent without handoffs, else the speaking
        agent's (the provider dispatch when it has none)."""
        if not self._team:
            return own
        team = self

        async def speaking_stream(model: Model, context: Any, options: Any = None) -> Any:
            _name_on_span(team.active.name)  # the chat span's, current here
            # The cache holds what the speaker sends (its system prompt, its tools): a
            # target's own `cache_retention` wins; unset, the run's holds.
            own = team.active._config["cache_retention"]
            if team.active is not team.entry and own is not None and options is not None:
                options = dataclasses.replace(options, cache_retention=own)
            inner = team.active._driver.stream_fn
            if inner is None:
                from yiemagent.ai import stream as inner
            return await maybe_await(inner(model, context, options))

        return speaking_stream

    def tool_hooks(self) -> dict[str, Any]:
        """`before_tool_call` and `after_tool_call` for the run's config. The entry agent's
        hooks are the run's and see every call; in a team, once a handoff made another agent
        speak, that agent's own hook is asked too, after the entry's, about the calls made
        while it speaks (its tools), so a target's guard (a block, a hold for approval)
        covers its tools, as openai-agents asks run hooks and then the agent's hooks.

        `before_tool_call`: an entry result that blocks or holds decides; else the
        speaker's result, if any, stands. `after_tool_call`: both see what the call gave;
        each field the speaker sets wins over the entry's. A result of the wrong type is
        handed on as it is, for the loop to report. Nothing for an agent without handoffs,
        or when no agent of the team has the hook (its own stays)."""
        if not self._team:
            return {}
        team = self
        agents = _reachable(self.entry)

        def hooks_now(name: str) -> tuple[Any, Any]:
            first = getattr(team.entry._driver.hooks, name)
            speaker = team.active
            second = None if speaker is team.entry else getattr(speaker._driver.hooks, name)
            return first, second

        async def before(context: Any, signal: Any) -> Any:
            first, second = hooks_now("before_tool_call")
            value = None if first is None else await maybe_await(first(context, signal))
            decided = value is not None and (
                not isinstance(value, BeforeToolCallResult) or value.block or value.defer
            )
            if second is None or decided:
                return value
            later = await maybe_await(second(context, signal))
            return value if later is None else later

        async def after(context: Any, signal: Any) -> Any:
            first, second = hooks_now("after_tool_call")
            value = None if first is None else await maybe_await(first(context, signal))
            if second is None or not isinstance(value, AfterToolCallResult | None):
                return value
            later = await maybe_await(second(context, signal))
            if value is None or not isinstance(later, AfterToolCallResult):
                return value if later is None else later
            names = [f.name for f in dataclasses.fields(later)]
            chosen = {n: getattr(later, n) for n in names if getattr(later, n) is not None}
            return dataclasses.replace(value, **chosen)

        given = {"before_tool_call": before, "after_tool_call": after}
        return {
            name: hook
            for name, hook in given.items()
            if any(getattr(agent._driver.hooks, name) is not None for agent in agents)
        }

    # ── handoffs ─────────────────────────────────────────────────────────

    def _transfer_tool(self, handoff: Handoff) -> AgentTool:
        target = handoff.agent
        description = handoff.description or target.description or ""
        text = f"Hand the conversation over to the agent {target.name!r}"
        text = f"{text}: {description}" if description else f"{text}."

        async def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
            return self._request(handoff, str(args.get("reason") or ""))

        from yiemagent.loop import not_a_tool_call  # a transfer is no tool call of the cap

        tool = AgentTool(
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
        return not_a_tool_call(tool)

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

    async def apply_handoff(self, context: AgentContext) -> Model | None:
        """At a turn boundary: switch to a requested handoff's target (its system prompt,
        tools, model; `input_filter` trims the messages it sees). Returns its model, or
        None when no handoff is pending.

        Raises:
            ConfigError: the filter raised, or left the target's first turn no message."""
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
            context.messages = await _filtered(handoff, list(context.messages))
            if not context.messages:  # providers refuse an empty conversation
                raise ConfigError(
                    f"the input_filter of the handoff to {handoff.agent.name!r} left no "
                    "message, so that agent would be asked nothing; keep at least the "
                    "user's question"
                )
        return self.model()

    def screened(self, poll: Callable[[], list[AgentMessage]]) -> Callable[[], list[AgentMessage]]:
        """`poll` (the steering or the follow-up queue) with what it hands over checked as a
        prompt is, by the input guardrails of the agent that reads it: beside the model call
        it goes to, which waits for them and which a trip aborts. At the turn boundary of a
        transfer that is the target, which speaks from the next call on."""

        def screened_poll() -> list[AgentMessage]:
            messages = poll()
            if messages:
                reader = self.pending.agent if self.pending is not None else self.active
                self.guards.start_input(reader.input_guardrails, reader.name, messages)
            return messages

        return screened_poll

    def finish(self) -> str:
        """After the run: the name of the agent that answers the next prompt (the entry
        agent's, when it has `return_to_entry`)."""
        if self.pending is not None:
            self.active, self.pending = self.pending.agent, None
        if self.entry.return_to_entry:
            return str(self.entry.name)
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
        trace_content: bool,
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
            trace_content,
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
        """The run's event sink around `inner`: each assistant message names its agent; the
        events of a message the guardrails must see first are held until they have passed
        it (`RunGuards`); a run a guardrail stopped ends with reason "guardrail"."""
        guards = self.guards
        held: list[AgentEvent] = []  # the start and updates of the message being checked

        def emit(event: AgentEvent) -> Awaitable[None] | None:
            kind = type(event)
            if kind is MessageUpdateEvent or kind is MessageStartEvent or kind is MessageEndEvent:
                message = event.message  # type: ignore[union-attr]
                if isinstance(message, AssistantMessage):
                    speaker = self.active
                    message.agent = speaker.name
                    if kind is MessageStartEvent:
                        held.clear()  # a message that never ended (a cancelled call) is dropped
                    if held or guards.holds(speaker):
                        if kind is not MessageEndEvent:
                            held.append(event)
                            return None
                        shown = held[:]
                        held.clear()
                        return guards.checked(event, inner, speaker, shown)  # type: ignore[arg-type]
            elif kind is AgentEndEvent and guards.trip is not None:
                event.reason = "guardrail"  # type: ignore[union-attr]
            return inner(event)

        return emit


def speaking_agent(entry: AgentLike, messages: Sequence[AgentMessage]) -> str:
    """The name of the agent that answers the prompt after `messages`, read from the
    transcript alone, so that a session reopened in another process (or a transcript
    given back to a new `Agent`) goes on with the agent a handoff made active.

    That is the target of a transfer the last assistant message asked for and that
    succeeded (the run stopped before the target spoke), else the writer of the last
    assistant message (`AssistantMessage.agent`). A name `entry` does not reach (a renamed
    agent, another team's transcript), or no assistant message, gives `entry`'s name; so
    does an `entry` with `return_to_entry`, which takes every new prompt itself."""
    if entry.return_to_entry:
        return str(entry.name)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, AssistantMessage):
            continue
        done = {
            m.tool_call_id
            for m in messages[index + 1 :]
            if isinstance(m, ToolResultMessage) and not m.is_error
        }
        transfers = {handoff.tool_name: handoff.agent for handoff in _handoffs_of(entry)}
        handed = [
            transfers[c.name] for c in message.tool_calls if c.id in done and c.name in transfers
        ]
        speaker = handed[0] if handed else _find(entry, message.agent)
        return str((speaker or entry).name)
    return str(entry.name)


async def _handoff_view(
    entry: AgentLike,
    messages: Sequence[AgentMessage],
    end: int,
    speaker: AgentLike,
    known: HandoffViews | None = None,
) -> list[AgentMessage] | None:
    """What `speaker` sees of `messages[:end]`, or None when no `input_filter` trims it.

    The last successful `transfer_to_<speaker>` before `end` made it speak; its batch's
    results end at `cut`, where the loop switched to it. The messages before `cut` are
    what the agent that handed over saw there (the same rule, one handoff further back),
    passed through that handoff's `input_filter`; the messages from `cut` on follow. The
    chain of handoffs is walked back first and the views are built forwards (a long
    session's thousands of handoffs are no deep recursion), from the view `known` holds
    when it still stands (then only what happened since is filtered)."""
    final_end = end
    links: list[tuple[int, int, Handoff | None, int]] = []  # the latest handoff first
    base: tuple[int, list[AgentMessage] | None] | None = None
    while True:
        found = _transfer_to(entry, messages, end, speaker)
        if known is not None:
            base = known.since(messages, end, speaker, found[1] if found else 0)
            if base is not None:
                break
        if found is None:
            break
        index, cut, writer, handoff = found
        links.append((index, cut, handoff, end))
        end, speaker = index, writer
    seen: list[AgentMessage] | None = None  # None: the transcript as it is
    if base is not None and base[1] is not None:
        seen = [*base[1], *messages[base[0] : links[-1][0] if links else final_end]]
    for index, cut, handoff, until in reversed(links):
        if handoff is None or handoff.input_filter is None:
            if seen is not None:
                seen.extend(messages[index:until])
            continue
        before = seen if seen is not None else list(messages[:index])
        seen = await _filtered(handoff, [*before, *messages[index:cut]])
        seen.extend(messages[cut:until])
    return seen


class HandoffViews:
    """The last handoff view an agent's run started from (`TeamRun.view`), so the next run
    filters only what happened since, not the whole session again. Event-loop thread
    only."""

    __slots__ = ("_end", "_first", "_last", "_speaker", "_view")

    def __init__(self) -> None:
        self._speaker: str | None = None
        self._end = 0
        self._first: AgentMessage | None = None
        self._last: AgentMessage | None = None
        self._view: list[AgentMessage] | None = None

    def since(
        self, messages: Sequence[AgentMessage], end: int, speaker: AgentLike, handed: int
    ) -> tuple[int, list[AgentMessage] | None] | None:
        """`(end, view)` known for `speaker` when it still holds for `messages[:end]`: the
        same transcript up to its end, and the last handoff to `speaker` (its results
        ending at `handed`) before it."""
        known = self._end
        if self._speaker != speaker.name or not 0 < known <= end or handed > known:
            return None
        if messages[0] is not self._first or messages[known - 1] is not self._last:
            return None
        return known, self._view

    def keep(
        self,
        messages: Sequence[AgentMessage],
        speaker: AgentLike,
        view: list[AgentMessage] | None,
    ) -> None:
        """Remember `view`, what `speaker` sees of all of `messages` (a copy: the run
        appends to the list it is given)."""
        if not messages:
            return
        self._speaker = speaker.name
        self._end = len(messages)
        self._first, self._last = messages[0], messages[-1]
        self._view = None if view is None else list(view)


def _transfer_to(
    entry: AgentLike, messages: Sequence[AgentMessage], end: int, speaker: AgentLike
) -> tuple[int, int, AgentLike, Handoff | None] | None:
    """The last successful transfer to `speaker` before `end`: the index of its assistant
    message, the end of that message's results, the agent that wrote it and its
    `Handoff` (None when that agent no longer has one to `speaker`)."""
    tool_name = f"transfer_to_{speaker.name}"
    for index in range(end - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, AssistantMessage):
            continue
        ids = {c.id for c in message.tool_calls if c.name == tool_name}
        if not ids:
            continue
        cut = index + 1
        while cut < end and isinstance(messages[cut], ToolResultMessage):
            cut += 1
        done = any(
            m.tool_call_id in ids and not m.is_error
            for m in messages[index + 1 : cut]
            if isinstance(m, ToolResultMessage)
        )
        writer = _find(entry, message.agent)
        if done and writer is not None:
            handoff = next((h for h in writer.handoffs if h.tool_name == tool_name), None)
            return index, cut, writer, handoff
    return None


async def _filtered(handoff: Handoff, messages: list[AgentMessage]) -> list[AgentMessage]:
    """`handoff.input_filter(messages)` (awaited when it is async) as a new list.

    Raises:
        ConfigError: the filter raised, or gave no list of messages (None, a text, a
            mapping: a text would be listed as its letters, no message among them); the
            target never sees what it was meant to keep from it, so its turn does not
            happen.
    """
    assert handoff.input_filter is not None
    name = handoff.agent.name
    try:
        kept = await maybe_await(handoff.input_filter(messages))
        listed = None if isinstance(kept, str | bytes | Mapping) else _listed(kept)
    except Exception as exc:
        raise ConfigError(
            f"the input_filter of the handoff to {name!r} raised "
            f"{exception_summary(exc)}; fix it, or assign state.active_agent to hand "
            "the conversation to another agent"
        ) from exc
    if listed is None:
        raise ConfigError(
            f"the input_filter of the handoff to {name!r} returned {type(kept).__name__}, "
            "not the list of messages that agent sees; return a list"
        )
    return listed


def _listed(value: object) -> list[AgentMessage] | None:
    """`value` as a new list when it is iterable (a list, a tuple, a generator), else None."""
    return list(value) if isinstance(value, Iterable) else None


def _handoffs_of(entry: AgentLike) -> list[Handoff]:
    return [handoff for agent in _reachable(entry) for handoff in agent.handoffs]


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


def _name_on_span(agent: str) -> None:
    """Name `agent` as the one making the current span's call (`gen_ai.agent.name` on a
    model call's `chat` span), when OpenTelemetry is in use: after a handoff the target
    speaks inside the run span that names the entry."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("gen_ai.agent.name", agent)


def _span_event(source: str, target: str, reason: str) -> None:
    """A `handoff` event on the current span (the transfer tool's `execute_tool`), when
    OpenTelemetry is in use; the reason only when that span records content."""
    if "opentelemetry.trace" not in sys.modules:
        return
    from opentelemetry import trace

    span = trace.get_current_span()
    if span.is_recording():
        attributes = {"yiemagent.handoff.from": source, "yiemagent.handoff.to": target}
        if content_traced():  # the model wrote the reason: content
            attributes["yiemagent.handoff.reason"] = reason
        span.add_event("handoff", attributes)


# ── tool calls held for approval ─────────────────────────────────────────────


@dataclass(slots=True)
class NestedHold:
    """A sub-agent's run held for approval inside one of the parent's tool calls."""

    agent_path: tuple[str, ...]
    """The agents' names from the outermost down to the sub-agent."""
    messages: list[AgentMessage]
    """The sub-run's transcript, ending with its held calls."""
    held: HeldCalls
    """The sub-run's held calls and the decisions on them."""


def _decision_data(decision: ToolApproval) -> dict[str, Any]:
    """A decision as the stored record holds it; `by_user` only when no person decided,
    so records written before it existed read the same."""
    data: dict[str, Any] = {"approved": decision.approved, "reason": decision.reason}
    if not decision.by_user:
        data["by_user"] = False
    return data


def check_reason(reason: object) -> str | None:
    """A rejection's reason, checked before anything is recorded: None or text that can be
    stored (UTF-8: no lone surrogate).

    Raises:
        ConfigError: anything else; the text says what was given.
    """
    if reason is None:
        return None
    if not isinstance(reason, str):
        raise ConfigError(f"reject(): reason must be a string or None, not {type(reason).__name__}")
    try:
        reason.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ConfigError(
            f"reject(): reason is not valid text (character {exc.start} cannot be stored)"
        ) from None
    return reason


class HeldCalls:
    """Held tool-call ids in call order, and their decisions. Event-loop thread only.

    `nested` maps the id of a held call that runs a sub-agent to that sub-run's hold.
    `resuming`: read from the record a resume stores when it starts (`resuming_record`):
    the decisions were applied, so nothing is pending; a session opened after a crash
    answers the calls still without a result from it (`decided_result`)."""

    __slots__ = ("decisions", "ids", "nested", "resuming")

    def __init__(
        self,
        ids: Sequence[str] = (),
        decisions: Mapping[str, ToolApproval] | None = None,
        nested: Mapping[str, NestedHold] | None = None,
        *,
        resuming: bool = False,
    ) -> None:
        self.ids: list[str] = list(ids)
        self.decisions: dict[str, ToolApproval] = dict(decisions or {})
        self.nested: dict[str, NestedHold] = dict(nested or {})
        self.resuming = resuming

    # ── reading ────────────────────────────────────────────────────────────

    def pending(self, messages: Sequence[AgentMessage]) -> list[PendingApproval]:
        """The held calls still without a result, in call order, with their decisions."""
        if not self.ids or self.resuming:
            return []
        held = _held(messages)
        if held is None:
            return []
        message, calls = held
        wanted = set(self.ids)
        pending: list[PendingApproval] = []
        for call in calls:
            if call.id not in wanted:
                continue
            sub = self.nested.get(call.id)
            if sub is not None:  # the sub-run's own held calls stand in for this one
                pending.extend(
                    dataclasses.replace(
                        p,
                        agent_path=p.agent_path or sub.agent_path,
                        tool_call_path=(call.id, *p.tool_call_path),
                    )
                    for p in sub.held.pending(sub.messages)
                )
                continue
            arguments = dict(call.arguments) if isinstance(call.arguments, dict) else {}
            decision = self.decisions.get(call.id)
            pending.append(
                PendingApproval(
                    call.id, call.name, arguments, message, decision, tool_call_path=(call.id,)
                )
            )
        return pending

    def check_none_pending(self, messages: Sequence[AgentMessage], what: str) -> None:
        """Raise `ApprovalPendingError` when calls are held (a new prompt would send them to
        the provider without a result)."""
        _refuse_if_any(
            self.pending(messages),
            f"cannot {what}: {{count}} tool call(s) await approval: {{names}}; approve(id) or "
            "reject(id, reason) each one, then await resume()",
        )

    def check_all_decided(self, messages: Sequence[AgentMessage]) -> None:
        """Raise `ApprovalPendingError` when a pending call has no decision yet (a resume
        would not know what to do with it)."""
        _refuse_if_any(
            self.undecided(messages),
            "cannot resume: {names} still need a decision: approve(id) or reject(id, reason) "
            "each one first",
        )

    # ── changing ───────────────────────────────────────────────────────────

    def hold(
        self, messages: Sequence[AgentMessage], nested: Mapping[str, NestedHold] | None = None
    ) -> None:
        """After a run ended "awaiting_approval": every call of the last assistant message
        without a result is held (decisions taken before are dropped); `nested`: the holds
        of the sub-agents some of those calls ran."""
        held = _held(messages)
        self.ids = [] if held is None else [call.id for call in held[1]]
        self.decisions = {}
        self.nested = {k: v for k, v in (nested or {}).items() if k in self.ids}
        taken = {call_id for call_id in self.ids if call_id not in self.nested}
        for sub in self.nested.values():
            _distinct_ids(sub, taken)

    def decide(
        self, messages: Sequence[AgentMessage], call_id: str, decision: ToolApproval
    ) -> None:
        """Record a decision on one pending call.

        Raises:
            ConfigError: `call_id` is not a pending call (the text lists the pending ones).
        """
        pending = {p.tool_call_id for p in self.pending(messages)}
        if call_id not in pending:
            listed = ", ".join(sorted(pending)) or "none"
            raise ConfigError(f"no tool call {call_id!r} awaits approval; pending: {listed}")
        for sub in self.nested.values():
            if any(p.tool_call_id == call_id for p in sub.held.pending(sub.messages)):
                sub.held.decide(sub.messages, call_id, decision)
                return
        self.decisions[call_id] = decision

    def resume_decisions(self) -> dict[str, ToolApproval]:
        """The decisions a resumed run applies: the agent's own, and an approval for each
        call whose sub-agent is held (running it again continues the sub-run)."""
        decisions = dict(self.decisions)
        for call_id in self.nested:
            decisions[call_id] = ToolApproval(True)
        return decisions

    def undecided(self, messages: Sequence[AgentMessage]) -> list[PendingApproval]:
        """The pending calls that have no decision yet."""
        return [p for p in self.pending(messages) if p.decision is None]

    def clear(self) -> None:
        """Hold nothing and forget every decision (`reset`, or a resumed run applied them)."""
        self.ids = []
        self.decisions = {}
        self.nested = {}

    # ── the stored record ──────────────────────────────────────────────────

    def to_record(self) -> str | None:
        """The record as JSON (`None` when nothing is held)."""
        if not self.ids:
            return None
        return json.dumps(self._data())

    def resuming_record(self) -> str | None:
        """The record a resume stores as it starts, instead of deleting the held calls: the
        decisions it applies, marked `resuming` (`None` when nothing is held). After a crash
        during the resume, it still decides each call left without a result: a rejected
        call gets its rejection, an approved one is never run again (at most once)."""
        if not self.ids:
            return None
        decisions = {call_id: _decision_data(d) for call_id, d in self.resume_decisions().items()}
        return json.dumps(
            {"version": 1, "held": self.ids, "decisions": decisions, "resuming": True}
        )

    def decided_result(self, interrupted: ToolResultMessage) -> ToolResultMessage:
        """The result of a call a crashed resume left without one: its rejection when it
        was rejected, else `interrupted` (the "No result: ..." repair)."""
        from yiemagent.loop import rejected_text

        decision = self.decisions.get(interrupted.tool_call_id)
        if decision is None or decision.approved:
            return interrupted
        text = rejected_text(decision)
        return dataclasses.replace(interrupted, content=[TextContent(text)], is_error=True)

    def _data(self) -> dict[str, Any]:
        decisions = {call_id: _decision_data(d) for call_id, d in self.decisions.items()}
        data: dict[str, Any] = {"version": 1, "held": self.ids, "decisions": decisions}
        if self.nested:
            data["nested"] = {
                call_id: {
                    "agent_path": list(sub.agent_path),
                    "messages": [message_to_dict(m) for m in sub.messages],
                    "held": sub.held._data(),
                }
                for call_id, sub in self.nested.items()
            }
        return data

    @classmethod
    def from_record(cls, text: str | None) -> HeldCalls:
        """The record `to_record` wrote; an unreadable one is logged and ignored."""
        if not text:
            return cls()
        try:
            return cls._from_data(json.loads(text))
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            logger.warning("ignoring an unreadable record of held tool calls: %s", exc)
            return cls()

    @classmethod
    def _from_data(cls, data: Any) -> HeldCalls:
        ids = [str(i) for i in data["held"]]
        decisions = {
            str(k): ToolApproval(bool(v["approved"]), v.get("reason"), bool(v.get("by_user", True)))
            for k, v in dict(data.get("decisions") or {}).items()
        }
        nested = {
            str(k): NestedHold(
                tuple(str(name) for name in v["agent_path"]),
                [message_from_dict(m) for m in v["messages"]],
                cls._from_data(v["held"]),
            )
            for k, v in dict(data.get("nested") or {}).items()
        }
        return cls(ids, decisions, nested, resuming=bool(data.get("resuming")))


def _refuse_if_any(calls: Sequence[PendingApproval], text: str) -> None:
    """Raise `ApprovalPendingError` naming `calls` when there are any; `text` may name
    `{count}` and `{names}` (each call as "tool (id)")."""
    if calls:
        names = ", ".join(f"{p.tool_name} ({p.tool_call_id})" for p in calls)
        raise ApprovalPendingError(
            text.format(count=len(calls), names=names), [p.tool_call_id for p in calls]
        )


def _distinct_ids(hold: NestedHold, taken: set[str]) -> None:
    """Give each call a sub-run holds (`hold`, deeper ones too) an id that no other pending
    call of the run has (`taken`, which gets each id given). Models and servers that number
    their calls (`call_0` in every reply) give a sub-run's held call the id of the parent's
    own, or of another sub-run's, and `approve(id)` would reach one of them only. The
    sub-run's transcript is its own, so its copy of the call is renamed, `<id>_2` and on."""
    held = hold.held
    found = _held(hold.messages)
    if found is None:
        return
    message, calls = found
    in_message = {call.id for call in calls}
    renamed: dict[str, str] = {}
    for call in calls:
        if call.id not in held.ids or call.id in held.nested:
            continue
        new_id, k = call.id, 1
        while new_id in taken or (new_id != call.id and new_id in in_message):
            k += 1
            new_id = f"{call.id}_{k}"
        if new_id != call.id:
            renamed[call.id] = new_id
        taken.add(new_id)
    for deeper in held.nested.values():
        _distinct_ids(deeper, taken)
    if not renamed:
        return
    content = [
        dataclasses.replace(block, id=renamed[block.id])
        if isinstance(block, ToolCall) and block.id in renamed
        else block
        for block in message.content
    ]
    at = next(i for i, m in enumerate(hold.messages) if m is message)
    hold.messages[at] = dataclasses.replace(message, content=content)
    held.ids = [renamed.get(call_id, call_id) for call_id in held.ids]
    held.decisions = {renamed.get(k, k): v for k, v in held.decisions.items()}


def _held(messages: Sequence[AgentMessage]) -> tuple[AssistantMessage, list[ToolCall]] | None:
    from yiemagent.loop import held_tool_calls

    return held_tool_calls(messages)
