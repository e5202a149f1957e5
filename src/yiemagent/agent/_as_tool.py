"""`Agent.as_tool`: an agent called as a tool by another agent (DESIGN §17; `docs/teams.md`).

Each call runs a fresh copy of the agent's configuration (its own transcript and queues,
no session store), so parallel calls share nothing. While the sub-run goes, its events
reach the parent run's sink as `NestedAgentEvent`s (deeper levels pass through, each
level adding its call to their `tool_call_path`); the parent's abort aborts it; its
usage limits are its own capped by what the parent's limits leave. It answers with the
sub-run's final text (or its output as JSON) and its total usage; a sub-run that fails
is an error result naming the agent, with its usage, and so is one cut off by the call's
timeout or an abort (its cancellation carries what it spent), and so is one stopped by
its `max_turns` while it still called tools. A call that would nest more than
`MAX_NESTED_RUNS` sub-runs is an error result at once. A sub-run that ends awaiting
approval holds the parent's call (`HeldToolResult`) and leaves its transcript with the
parent's run (`RunFrame.holds`); the parent's resume runs the call again, which
continues that sub-run with the decisions taken.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from yiemagent.agent._run import AgentRunError
from yiemagent.agent._team import AgentLike, NestedHold, RunFrame, current_frame
from yiemagent.errors import ConfigError
from yiemagent.types import (
    AbortSignal,
    AgentEvent,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    NestedAgentEvent,
    TextContent,
    ToolCallFailed,
    Usage,
    UsageLimits,
    check_tool_name,
    transcript_usage,
)
from yiemagent.types.tools import HeldToolResult

__all__ = ["MAX_NESTED_RUNS", "agent_as_tool", "fresh_copy", "team_output_tools"]

MAX_NESTED_RUNS = 8
"""Sub-agent runs one inside another, at most: an agent that is its own tool (or two that
are each other's) and a model that always delegates would nest runs without end, each
waiting for the next, until Python's recursion limit broke the event relay."""

_INPUT_SCHEMA = {
    "type": "object",
    "properties": {
        "input": {
            "type": "string",
            "description": "What to ask: the whole task, with everything needed to do it.",
        }
    },
    "required": ["input"],
}


def agent_as_tool(
    agent: AgentLike,
    name: str | None = None,
    description: str | None = None,
    *,
    output: str = "text",
) -> AgentTool:
    """`Agent.as_tool`: this agent as a tool another agent calls with `{"input": "..."}`.

    Each call runs a fresh copy of this agent's configuration (parallel calls share
    nothing) and answers with its final text (`output="output"`, or a run that ended with
    a validated output and no text: that output as JSON). Its events reach the calling
    agent's listeners as `NestedAgentEvent`s, its usage counts in the caller's totals and
    limits, the caller's abort aborts it, its held approvals are the caller's
    (`pending_approvals` with their `agent_path`), and a failure is an error result naming
    the agent. See `docs/teams.md`.

    Args:
        name: the tool's name (default the agent's name).
        description: what the model reads (default the agent's `description`).
        output: "text" or "output".

    Raises:
        ConfigError: an invalid tool name, an unknown `output`, or `output="output"` for an
            agent without an output type.
    """
    if output not in ("text", "output"):
        raise ConfigError(f"as_tool(output=...) must be 'text' or 'output', not {output!r}")
    if output == "output" and agent._output is None:
        raise ConfigError(
            f"as_tool(output='output') needs an output type: Agent(name={agent.name!r}, "
            "output_type=...)"
        )
    tool_name = check_tool_name(name or agent.name)
    text = description or agent.description or f"Ask the agent {agent.name!r}."

    return AgentTool(
        name=tool_name,
        label=agent.name,
        description=text,
        input_schema=_INPUT_SCHEMA,
        execute=SubAgentCall(agent, output),
        parallel=True,
    )


class SubAgentCall:
    """The `execute` of an `as_tool` tool: runs `agent` on the call's `input`. Its `agent`
    tells `team_output_tools` which tools run sub-agents."""

    def __init__(self, agent: AgentLike, output: str) -> None:
        self.agent = agent
        """The agent each call runs a fresh copy of."""
        self.output = output
        """What the call answers with: "text" or "output" (see `agent_as_tool`)."""

    async def __call__(
        self, tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: Any
    ) -> AgentToolResult:
        return await _call(self.agent, tool_call_id, str(args["input"]), signal, self.output)


def team_output_tools(agent: AgentLike) -> dict[str, str]:
    """The output tool a front end hides, by the name of the agent that calls it: `agent`'s
    own (its run's), and for each sub-agent run as a tool (`as_tool`, at any depth) that has
    an output type, that sub-agent's, under its name and the names of the agents its
    handoffs reach, as a run keeps the output type of the agent it starts on whoever
    answers. A typed run's answer is handed over through these calls, and a
    `NestedAgentEvent`'s last `agent_path` name (the agent speaking) finds the one in
    effect. A name that speaks in runs of two typed sub-agents keeps the first found, its
    own run's before another's."""
    names: dict[str, str] = {}
    if agent._output is not None:
        names[agent.name] = agent._output.name
    starts: list[Any] = [agent]  # the agents runs start on: `agent`, then its sub-agents
    for start in starts:
        for member in _reachable(start):
            tools = member.tool_store.tools.values()
            subs = (t.execute.agent for t in tools if isinstance(t.execute, SubAgentCall))
            starts.extend(s for s in subs if all(s is not o for o in starts))
    typed = [(s, s._output.name) for s in starts[1:] if s._output is not None]
    for sub, tool in typed:
        names.setdefault(sub.name, tool)
    for sub, tool in typed:
        for member in _reachable(sub):
            names.setdefault(member.name, tool)
    return names


def _reachable(start: AgentLike) -> list[AgentLike]:
    """`start` and every agent its handoffs reach."""
    seen = [start]
    for agent in seen:
        seen.extend(h.agent for h in agent.handoffs if all(h.agent is not o for o in seen))
    return seen


async def _call(
    agent: AgentLike, call_id: str, text: str, signal: AbortSignal, output: str
) -> AgentToolResult:
    """One call of `agent` as a tool: a fresh copy of it run on `text` (or the sub-run this
    call held, resumed), inside the parent run's frame; its answer as the tool's result.

    Raises:
        ToolCallFailed: the sub-run was not started, failed, was aborted or stopped at its
            `max_turns` before answering (with what it spent), or held calls outside a run.
        asyncio.CancelledError: the call was cut off (its cause carries what it spent).
    """
    frame = current_frame.get()
    path = (*(frame.path if frame is not None else ()), agent.name)
    _refuse_to_start(agent.name, path, signal)
    resume = frame.resumes.pop(call_id, None) if frame is not None else None
    sub = fresh_copy(
        agent,
        messages=resume.messages if resume is not None else None,
        usage_limits=_budget(agent._config.get("usage_limits"), frame),
        tracer_provider=frame.tracer_provider if frame is not None else None,
        trace_content=frame.trace_content if frame is not None else False,
    )
    if resume is not None:
        sub._driver.held = resume.held
        from yiemagent.loop import count_spent_before

        count_spent_before(transcript_usage(resume.messages))  # the held run counted it
    if frame is not None:
        sub.subscribe(_forward(frame.emit, path, call_id))
    stop = signal.add_listener(lambda reason: sub.abort(reason or "the parent run was aborted"))
    details = {"agent": agent.name, "agent_path": list(path)}
    try:
        reply = await (sub.resume() if resume is not None else sub.prompt(text))
    except AgentRunError as exc:  # GuardrailTripped and UsageLimitExceeded too
        usage = transcript_usage(sub.state.messages)
        text = f"agent {agent.name!r} failed: {exc}"
        raise ToolCallFailed(text, usage=usage, details=details) from exc
    except asyncio.CancelledError as exc:  # cut off: the call's timeout, an abort's grace
        usage = transcript_usage(sub.state.messages)
        spent = ToolCallFailed(f"agent {agent.name!r} was cut off", usage=usage, details=details)
        raise exc from spent  # the pipeline puts what it spent on its result
    finally:
        stop()
    usage = transcript_usage(sub.state.messages)
    end = sub._driver.last_end
    if end is not None and end.reason == "awaiting_approval":
        if frame is None:
            raise ToolCallFailed(
                f"agent {agent.name!r} holds a tool call for approval, but runs outside an "
                "Agent's run that could hold it",
                usage=usage,
                details=details,
            )
        # the held calls' maker: the agent handed off to, when the sub-run handed off
        maker = next(
            (m.agent for m in reversed(sub.state.messages) if isinstance(m, AssistantMessage)),
            None,
        )
        held_path = (*path[:-1], maker or agent.name)
        frame.holds[call_id] = NestedHold(held_path, list(sub.state.messages), sub._driver.held)
        return HeldToolResult([TextContent(f"waiting for approval inside agent {agent.name}")])
    if reply.stop_reason == "aborted":
        raise ToolCallFailed(f"agent {agent.name!r} was aborted", usage=usage, details=details)
    if end is not None and end.reason == "max_turns":  # still calling tools: no answer yet
        raise ToolCallFailed(
            f"agent {agent.name!r} stopped at its max_turns ({sub.max_turns}) before it answered",
            usage=usage,
            details=details,
        )
    try:
        answer = _answer(agent, reply, output)
    except ValueError as exc:  # pydantic's serialisation error: a value with no JSON form
        raise ToolCallFailed(
            f"agent {agent.name!r} answered with an output that has no JSON form: {exc}",
            usage=usage,
            details=details,
        ) from exc
    return AgentToolResult([TextContent(answer)], details=details, usage=usage)


def _refuse_to_start(name: str, path: tuple[str, ...], signal: AbortSignal) -> None:
    """Raise `ToolCallFailed` (nothing spent) when the sub-run of agent `name` (at `path`,
    the agents whose runs hold it, itself last) must not start: more than
    `MAX_NESTED_RUNS` runs would be nested, or the parent run is aborted already (an idle
    agent ignores `abort()`, so a sub-run started now would run to its end)."""
    details = {"agent": name, "agent_path": list(path)}
    if len(path) - 1 > MAX_NESTED_RUNS:
        raise ToolCallFailed(
            f"agent {name!r} not run: {MAX_NESTED_RUNS} agent runs are already nested "
            f"here ({' > '.join(path[:-1])}); do this part yourself",
            usage=Usage(),
            details=details,
        )
    if signal.aborted:
        raise ToolCallFailed(f"agent {name!r} was aborted", usage=Usage(), details=details)


def _answer(agent: AgentLike, reply: AssistantMessage, output: str) -> str:
    """The tool's answer from the sub-run's final `reply`: its validated output as JSON
    (`output="output"`, or an output type answered through its output tool, with no text),
    else its text, or a note that it was empty."""
    value = getattr(reply, "output", None)
    if output == "output" or (not reply.text and value is not None and agent._output is not None):
        return json.dumps(agent._output.to_json(value), ensure_ascii=False)
    return reply.text or f"(agent {agent.name} gave an empty answer)"


def _forward(
    emit: Callable[[AgentEvent], Awaitable[None] | None], path: tuple[str, ...], call_id: str
) -> Callable[[AgentEvent, AbortSignal], Awaitable[None] | None]:
    """The sub-agent's listener that relays its events into the parent run's sink (a plain
    function: a coroutine only when the parent's sink has something to await)."""

    def forward(event: AgentEvent, signal: AbortSignal) -> Awaitable[None] | None:
        if isinstance(event, NestedAgentEvent):  # a deeper level's: its calls gain this one
            event = replace(event, tool_call_path=(call_id, *event.tool_call_path))
        else:
            # the sub-run's frame names its speaker, who changes when it hands off
            inner = current_frame.get()
            speaking = inner.path if inner is not None and inner.path[:-1] == path[:-1] else path
            event = NestedAgentEvent(speaking, call_id, event, (call_id,))
        return emit(event)

    return forward


def _budget(own: UsageLimits | None, frame: RunFrame | None) -> UsageLimits | None:
    """The sub-run's limits: its own, each capped by what the parent run's limits leave."""
    parent = frame.limits if frame is not None else None
    if parent is None:
        return own
    spent: Usage = frame.spent()  # type: ignore[union-attr]
    used_in = spent.prompt_tokens
    left = {
        "max_input_tokens": _left(parent.max_input_tokens, used_in),
        "max_output_tokens": _left(parent.max_output_tokens, spent.output),
        "max_total_tokens": _left(parent.max_total_tokens, used_in + spent.output),
        "max_cost_usd": _left(parent.max_cost_usd, spent.cost.total),
    }
    mine = own or UsageLimits()
    capped = {k: _least(getattr(mine, k), v) for k, v in left.items()}
    return UsageLimits(**capped, max_tool_calls=mine.max_tool_calls)


def _left(cap: Any, used: Any) -> Any:
    return None if cap is None else max(0, cap - used)


def _least(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a if b is None else min(a, b)


def fresh_copy(
    agent: AgentLike,
    *,
    messages: list[Any] | None = None,
    usage_limits: UsageLimits | None = None,
    tracer_provider: Any = None,
    trace_content: bool = False,
) -> AgentLike:
    """A new `Agent` with `agent`'s configuration as it is now (its tool store, model,
    reasoning level, prompt, team), its own state, no session store and no `on_event`;
    `tracer_provider` and `trace_content` (the parent run's) where `agent` set none of its
    own."""
    options = dict(agent._config)
    model = agent.state.model
    if model is None and agent._driver.placeholder is None:
        model = agent._driver.resolve_model()  # the embedded model: loaded once, shared
    options.update(
        system_prompt=agent.state.system_prompt,
        model=model,
        reasoning=agent.state.reasoning,
        tools=None,
        tool_store=agent.tool_store,  # shared, not copied: tools are definitions, and a
        # copy would check every schema again on each call
        messages=messages,
        session_store=None,
        session_id=None,
        on_event=None,
        usage_limits=usage_limits,
        name=agent.name,
        description=agent.description,
        handoffs=agent.handoffs,
        input_guardrails=agent.input_guardrails,
        output_guardrails=agent.output_guardrails,
        max_handoffs=agent.max_handoffs,
        return_to_entry=agent.return_to_entry,
    )
    if options.get("tracer_provider") is None:
        options["tracer_provider"] = tracer_provider
    if options.get("trace_content") is None:
        options["trace_content"] = trace_content
    return type(agent)(**options)
