"""What the protocol endpoints share (`/v1/chat/completions`, `/ag-ui`, `/api/chat`): a
conversation as such a client sends it, turned into a run of the session's agent.

These clients send the whole conversation with each request. The server's stored session is
the truth: the earlier messages seed a session only while it is empty, and the request's
last user message is the prompt. Earlier user and assistant texts are kept; the client's
own tool calls and results are not (the agent's tools run here). A request that answers
held tool calls (approvals) decides them and resumes the run instead.

A client may also offer tools of its own (AG-UI's front-end tools):
`Conversation.client_tools` are the run's own tools (`Agent.prompt(tools=...)`), offered
beside the agent's, and after a handoff beside the target's, each requiring approval, so
a call of one is held as an approval holds a call: the run ends "awaiting_approval" with
it, and the session store keeps it. The client
runs the tool and answers the call in its next request (`Conversation.answered`): the held
call is approved, and the tool, run by the resumed run, returns the result the client sent
(`client_tool`). A new prompt while such a call is pending approves it too: the tool, given
no result, fails with `CLIENT_DID_NOT_RUN`; the prompt is steered into the resumed run, so
every call gets exactly one result (R-4.1) and the model reads the prompt after them.

A request that regenerates an answer (`useChat`'s regenerate) asks its last user message
again: when the session holds that question at the same place (the same count of user
messages, the same text), the session is first cut back to before it, so it is asked once,
not twice. A request that edits a user message (`useChat`'s `sendMessage` with a
`messageId`) cuts the session back to before its user message of the same number, whatever
its text was.

These protocols have no abort endpoint: a client stops a run by closing the connection
(`useChat`'s `stop()`, a cancelled OpenAI stream, CopilotKit's stop), as with vLLM or
llama.cpp's server. So a protocol route's run is aborted when its client disconnects
(`event_stream`, `abort_on_disconnect`): it stops spending tokens at once, each tool call it
made is answered, and the session is free for the next request. The API's own event stream
(`GET /v1/runs/{rid}/events`) does not do this: it is resumable, so its reader going away
says nothing about the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.types import Message

from yiemagent.errors import ConfigError
from yiemagent.serve._api import (
    BadRequest,
    checked_session_id,
    refuse_undecided,
    refuse_undecided_resume,
    sse_ping_s,
)
from yiemagent.serve._runs import Busy, Run, RunHub, output_text
from yiemagent.types import (
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    DocumentContent,
    ImageContent,
    TextContent,
    ToolApproval,
    ToolCallFailed,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.output import OUTPUT_TOOL_NAME

if TYPE_CHECKING:
    from yiemagent.agent import Agent

__all__ = [
    "CLIENT_DID_NOT_RUN",
    "Conversation",
    "abort_on_disconnect",
    "call_at",
    "client_tool",
    "end_error",
    "event_stream",
    "final_texts",
    "held_calls",
    "message_text",
    "output_text",
    "run_batches",
    "sse_data",
    "start_conversation",
    "stopped_short",
    "tool_result_text",
]


@dataclass
class Conversation:
    """A client's request, read: the prompt, the earlier messages, extra system text, or
    the decisions on held tool calls (then no prompt)."""

    prompt: UserMessage | None = None
    history: list[AgentMessage] = field(default_factory=list)
    system: list[str] = field(default_factory=list)
    decisions: dict[str, ToolApproval] = field(default_factory=dict)
    regenerate: bool = False
    """The prompt asks again a question the session may already hold (see the module
    docstring)."""
    edit: bool = False
    """The prompt replaces the client's user message of the same number (an edit), whatever
    its text was: with `regenerate`, the session is cut back to before that message."""
    client_tools: list[AgentTool] = field(default_factory=list)
    """Tools the client runs itself (`client_tool`), offered beside the agent's own for this
    run only (a call of one is held until the client answers it)."""
    answered: set[str] = field(default_factory=set)
    """Ids of held calls of client tools that the request answers with the client's result:
    they are approved, and the tool returns that result on resume."""
    decided_paths: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Set as the run starts: the call path (`PendingApproval.tool_call_path`) of each held
    call the request decides, by its id; a sub-agent's call's result is told by it."""

    def add(
        self, role: str, text: str, attached: Sequence[ImageContent | DocumentContent] = ()
    ) -> None:
        """Add one message of the request, in order; the last user message is the prompt
        (its text, then what it `attached`)."""
        if role in ("system", "developer"):
            if text.strip():
                self.system.append(text)
            return
        if self.prompt is not None:
            self.history.append(self.prompt)
            self.prompt = None
        if role == "user":
            content: list[Any] = [TextContent(text)] if text else []
            self.prompt = UserMessage([*content, *attached])
        elif role == "assistant" and text:
            self.history.append(AssistantMessage([TextContent(text)]))

    def check(self) -> None:
        """Raises `BadRequest` unless the request asks something (a prompt, decisions, or
        results of client tools)."""
        if self.prompt is None and (self.decisions or self.answered):
            return
        if self.prompt is None or not self.prompt.content:
            raise BadRequest("the last message must be a user message with some content")


CLIENT_DID_NOT_RUN = "the client did not run the tool"
"""The error result of a pending call of a client tool that a new prompt left unanswered."""


def client_tool(
    name: str,
    description: str,
    parameters: object,
    answers: Mapping[str, AgentToolResult | str],
) -> AgentTool:
    """A tool the client runs itself, as a tool of the run: it requires approval, so a call
    of it is held, not run; approved (the client answered it, or a new prompt left it
    unanswered), it returns the client's result from `answers` (by call id; a text is an
    error the client reported, an error result) or fails with `CLIENT_DID_NOT_RUN`.

    Raises:
        BadRequest: a name that is no tool name (`^[A-Za-z0-9_-]{1,64}$`), or `parameters`
            that are not a JSON Schema of the arguments object, checked as the tool store
            checks a registered tool's schema.
    """
    from yiemagent.tools import ToolStore

    async def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        answer = answers.get(call_id)
        if answer is None:
            raise ToolCallFailed(CLIENT_DID_NOT_RUN)
        if isinstance(answer, str):
            raise ToolCallFailed(answer)
        return answer

    if not isinstance(parameters, dict):
        raise BadRequest(
            f"front-end tool {name!r}: parameters must be a JSON Schema of the arguments "
            f"object, not {type(parameters).__name__}"
        )
    try:
        tool = AgentTool(
            name, name, description, parameters, execute, parallel=True, requires_approval=True
        )
        return ToolStore("front-end").register(tool)  # the store's own checks of a tool
    except ConfigError as exc:
        raise BadRequest(f"front-end tool {name!r}: {exc}") from None


async def start_conversation(
    hub: RunHub, session_id: str, conversation: Conversation, *, ephemeral: bool = False
) -> Run:
    """Start the run `conversation` asks for on the session (see the module docstring);
    an `ephemeral` session is removed as the run ends (`RunHub.start`).

    Every check comes before anything is recorded: a refused request leaves the session as
    it was (no decision stored, no client tool left registered).

    Raises:
        Busy: the session has a run, held calls await decisions, or another writer holds it.
        BadRequest: the request asks nothing, decides a call that is not held, answers a
            call of a client tool that is not pending (unknown, or answered already) or
            whose tool it does not offer, offers a client tool named as one of the agent's,
            or names a session id that is not one (`checked_session_id`).
    """
    checked_session_id(session_id)
    conversation.check()
    resuming = False  # prepare says: a held call decided, or the client's answer to one

    def prepare(agent: Agent[Any]) -> None:
        nonlocal resuming
        decisions = _checked_decisions(agent, conversation)
        resuming = bool(decisions)
        conversation.decided_paths = {
            p.tool_call_id: p.tool_call_path
            for p in agent.pending_approvals
            if p.tool_call_id in decisions
        }
        _record(agent, conversation, decisions)

    async def run(agent: Agent[Any]) -> Any:
        # the run's own: every agent that speaks in it (after a handoff too) is given them
        tools = conversation.client_tools
        instructions = "\n\n".join(conversation.system) or None
        if resuming:
            return await agent.resume(tools=tools, instructions=instructions)
        prompt = conversation.prompt
        assert prompt is not None  # check() said so
        return await agent.prompt(prompt, tools=tools, instructions=instructions)

    return await hub.start(session_id, run, prepare=prepare, ephemeral=ephemeral)


def _checked_decisions(agent: Agent[Any], conversation: Conversation) -> dict[str, ToolApproval]:
    """Check the request against the session, recording nothing; returns the decisions it
    takes on held calls (`_decisions`), none for a new prompt.

    Raises:
        BadRequest: as `start_conversation` says.
        Busy: a new prompt while calls are held, or decisions that leave a held call
            undecided.
    """
    _check_client_tools(agent, conversation.client_tools)
    decisions = _decisions(agent, conversation)
    if conversation.prompt is None and not decisions:
        raise BadRequest(
            "the input asks nothing: its last message must be a user message with some "
            "content, or a tool message answering a pending call of a front-end tool"
        )
    if not decisions:
        refuse_undecided(agent)
        return decisions
    undecided = [
        p.tool_call_id
        for p in agent.pending_approvals
        if p.decision is None and p.tool_call_id not in decisions
    ]
    if undecided:
        raise Busy(f"tool calls without a decision: {', '.join(undecided)}")
    return decisions


def _record(
    agent: Agent[Any], conversation: Conversation, decisions: Mapping[str, ToolApproval]
) -> None:
    """Set the run up as the checked request asks (its system text and client tools go to
    the run itself, in `start_conversation`): either its decisions (the prompt, if any,
    steered into the resumed run: read after the held calls' results) or the session cut
    back for a question asked again and seeded from the request's history while empty."""
    if decisions:
        for call_id, decision in decisions.items():
            if decision.approved:
                agent.approve(call_id)
            else:
                agent.reject(call_id, decision.reason)
        refuse_undecided_resume(agent)
        if conversation.prompt is not None:
            agent.steer(conversation.prompt)
        return
    if conversation.regenerate:
        kept = _before_asked_again(agent.state.messages, conversation)
        if kept is not None:
            agent.state.messages = kept
    if conversation.history and not agent.state.messages:
        agent.state.messages = conversation.history


def _check_client_tools(agent: Agent[Any], tools: Sequence[AgentTool]) -> None:
    """Raises `BadRequest` when a client tool is named as a tool of an agent that may speak
    in the run (the agent, and each agent its handoffs reach: the client's tools are
    offered to every one), a transfer tool of theirs or the output tool (by its name,
    `OutputSpec(T, name=...)` too): the model could reach only one of them."""
    specs = (getattr(agent, "_output", None), getattr(agent, "_resume_output", None))
    own = {OUTPUT_TOOL_NAME, *(spec.name for spec in specs if spec is not None)}
    for member in _team_of(agent):
        own.update(tool.name for tool in member.state.tools)
        own.update(handoff.tool_name for handoff in member.handoffs)
    clashing = sorted(tool.name for tool in tools if tool.name in own)
    if clashing:
        raise BadRequest(
            f"front-end tool {', '.join(repr(n) for n in clashing)}: the agent has a tool of "
            "that name; rename the client's tool"
        )


def _team_of(agent: Agent[Any]) -> list[Agent[Any]]:
    """`agent` and every agent its handoffs reach, each once."""
    found: list[Agent[Any]] = []
    waiting = [agent]
    while waiting:
        member = waiting.pop()
        if any(member is seen for seen in found):
            continue
        found.append(member)
        waiting.extend(handoff.agent for handoff in member.handoffs)
    return found


def _decisions(agent: Agent[Any], conversation: Conversation) -> dict[str, ToolApproval]:
    """The decisions the request takes on held calls, checked, nothing recorded yet: its
    own (`decisions`), an approval for each call the client answered, and, with a prompt,
    an approval for each pending call of a client tool it leaves unanswered (the tool,
    given no result, fails with `CLIENT_DID_NOT_RUN`). An answer for a call of a tool the
    client does not offer that the session has a result for is skipped: the client's copy
    of the result the server sent it; so is every answer when the session is empty (the
    request's history seeds it, its tool calls and results left out as always).

    Raises:
        BadRequest: a decision for a call that is not held; an answer for a call that is
            not a pending call of a client tool (unknown, answered already, a server
            tool's) or whose tool the request does not offer (its result could not be
            given).
    """
    pending = {p.tool_call_id: p for p in agent.pending_approvals}
    client = {tool.name for tool in conversation.client_tools}
    for call_id in conversation.decisions:
        if call_id not in pending:
            raise BadRequest(f"no tool call {call_id!r} awaits approval")
    decisions = dict(conversation.decisions)
    results = {
        m.tool_call_id: m.tool_name
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    }
    for call_id in sorted(conversation.answered):
        held = pending.get(call_id)
        if held is None and call_id in results and results[call_id] not in client:
            continue  # the result of a server tool's call, sent back as the client has it
        if not agent.state.messages:
            continue  # a history that seeds the session: the client's copies, as ever
        if held is None or held.agent_path or held.decision is not None:
            raise BadRequest(
                f"a tool message answers tool call {call_id!r}, but no call of a front-end "
                "tool awaits that result (an unknown id, or one answered already)"
            )
        if held.tool_name not in client:
            raise BadRequest(
                f"a tool message answers tool call {call_id!r} of {held.tool_name!r}, which "
                'is no front-end tool this request offers (list it in "tools"; a call of the '
                'agent\'s own tools is decided in "resume")'
            )
        decisions[call_id] = ToolApproval(True)
    if conversation.prompt is not None:  # run with no answer: CLIENT_DID_NOT_RUN
        for held in pending.values():
            client_call = not held.agent_path and held.tool_name in client
            if client_call and held.decision is None and held.tool_call_id not in decisions:
                decisions[held.tool_call_id] = ToolApproval(True)
    return decisions


def _before_asked_again(
    messages: Sequence[AgentMessage], conversation: Conversation
) -> list[AgentMessage] | None:
    """The session's messages before the question `conversation` asks again: its user
    message of the same number, when that one has the prompt's text; None otherwise (the
    session holds no such question there: the prompt is asked as a new one)."""
    nth = sum(isinstance(m, UserMessage) for m in conversation.history)
    users = [i for i, m in enumerate(messages) if isinstance(m, UserMessage)]
    if conversation.prompt is None or nth >= len(users):
        return None
    at = users[nth]
    asked = messages[at]
    if not isinstance(asked, UserMessage):
        return None
    if not conversation.edit and _user_text(asked) != _user_text(conversation.prompt):
        return None
    return list(messages[:at])


def _user_text(message: UserMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if isinstance(b, TextContent))


_DISCONNECTED = "the connection to the client closed"
"""Why a protocol route's run was aborted when its client went away (or the server closed
the connection, shutting down)."""


def _abort(run: Run) -> None:
    if run.agent is not None and not run.ended:
        run.agent.abort(_DISCONNECTED)


def event_stream(
    run: Run, chunks: AsyncGenerator[bytes, None], headers: Mapping[str, str]
) -> EventSourceResponse:
    """The server-sent events answer of a protocol route: `chunks` (the run's events as
    the protocol says them, ending after the run's end), with keep-alive pings and
    `headers`. When the client disconnects before the run has ended, the run is aborted
    (see the module docstring): on the `http.disconnect` message (one that came before the
    stream began too), and whenever the stream is closed or cancelled before its end (a
    server whose write to a gone client fails, the server shutting down)."""

    async def on_disconnect(_message: Message) -> None:
        _abort(run)

    async def guarded() -> AsyncIterator[bytes]:
        async with contextlib.aclosing(chunks):
            try:
                async for chunk in chunks:
                    yield chunk
            finally:
                _abort(run)  # no-op once the run has ended

    return EventSourceResponse(
        guarded(), ping=sse_ping_s, headers=headers, client_close_handler_callable=on_disconnect
    )


@contextlib.asynccontextmanager
async def abort_on_disconnect(request: Request, run: Run) -> AsyncIterator[None]:
    """Within the block (while a route waits for `run` to end before it answers), abort
    the run when the client disconnects (see the module docstring). The request's body must
    have been read: the ASGI messages watched here come after it."""

    async def watch() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass
        _abort(run)

    watcher = asyncio.create_task(watch())
    try:
        yield
    finally:
        watcher.cancel()


async def run_batches(run: Run) -> AsyncIterator[list[dict[str, Any]]]:
    """The run's events (dicts), from the first through `agent_end`, in the batches
    `Run.follow` gives (a stream writes each batch at once). A run that ends awaiting
    approval is finished first, so its `held` calls are known when its end is read."""
    async for batch in run.follow():
        events = [run.event(n) for n in batch]
        if run.ended and events[-1].get("reason") == "awaiting_approval":
            await run.finished()
        yield events


def held_calls(run: Run) -> list[dict[str, Any]]:
    """The calls held for approval when the run ended "awaiting_approval", as the session's
    approvals list them (`{"id", "name", "arguments"}`, plus `"nested": True` for a call
    held inside a sub-agent, as deep as it goes): the run's `held`, which `run_batches`
    waits for before it gives the run's `agent_end`."""
    return run.held


def call_at(inner: dict[str, Any]) -> dict[str, Any] | None:
    """The tool call a provider `toolcall_*` event is about: its `tool_call` (on the wire,
    a `toolcall_start` or `toolcall_delta` names its call there; `toolcall_end` holds it
    whole)."""
    call = inner.get("tool_call")
    return call if isinstance(call, dict) and call.get("id") else None


def final_texts(end: dict[str, Any]) -> str:
    """The texts of the run's assistant messages (`agent_end.messages`), one paragraph each."""
    return "\n\n".join(text for text in _assistant_texts(end) if text)


def end_error(end: dict[str, Any], default: str = "the run failed") -> str:
    """Why the run ended without an answer (`agent_end`, reason "error" or "guardrail"): its
    `error` (a run that failed before its agent ran, `RunHub`), else the last assistant
    message's `error_message`, else `default`."""
    if end.get("error"):
        return str(end["error"])
    for message in reversed(end.get("messages", [])):
        if message.get("role") == "assistant" and message.get("error_message"):
            return str(message["error_message"])
    return default


_STOPPED_SHORT = {
    "usage_limit": "usage limit reached",
    "max_turns": "max_turns reached while the model still called tools",
}


def stopped_short(end: dict[str, Any]) -> str | None:
    """Which limit stopped a run before it answered (`agent_end` reason "usage_limit" or
    "max_turns"), as the run's last message names it (`usage limit reached:
    max_tool_calls=1 (used 1 tool calls)`), else a sentence naming the kind of limit; None
    for a run that ended any other way. Every protocol tells its client this text, so a
    client never takes a run cut short for the agent's answer."""
    default = _STOPPED_SHORT.get(str(end.get("reason")))
    return None if default is None else end_error(end, default)


def message_text(message: dict[str, Any]) -> str:
    """The text blocks of a message (as a dict), joined."""
    return "".join(
        b.get("text", "") for b in message.get("content", []) or [] if b.get("type") == "text"
    )


def _assistant_texts(end: dict[str, Any]) -> Iterator[str]:
    for message in end.get("messages", []):
        if message.get("role") == "assistant":
            yield message_text(message)


def tool_result_text(result: dict[str, Any]) -> str:
    """An `AgentToolResult` (as a dict) as one text: its text blocks, images named."""
    parts = []
    for block in result.get("content", []):
        if block.get("type") == "text":
            parts.append(block.get("text", ""))
        elif block.get("type") == "image":
            parts.append(f"[image {block.get('mime_type', '')}]")
    return "\n".join(parts)


def sse_data(data: Any) -> bytes:
    """One server-sent event carrying `data` as JSON (or a plain string as is)."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return f"data: {text}\n\n".encode()
