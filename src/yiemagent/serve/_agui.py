"""`POST /ag-ui`: the AG-UI protocol. A `RunAgentInput` in, AG-UI events out over SSE,
each built as the `ag-ui-protocol` package's model and written by its `EventEncoder`.

The thread is the session (`threadId`); the input's `context` entries (what the page shows,
CopilotKit's readables) follow the prompt as a text of the user message. The run's events
become `RUN_STARTED`, text messages (`TEXT_MESSAGE_START/CONTENT/END`), tool calls
(`TOOL_CALL_START/ARGS/END`, then `TOOL_CALL_RESULT` when the tool has answered here),
thinking as `REASONING_*` events, a sub-agent's (an agent called as a tool) between
`SUBAGENT_STARTED` and `SUBAGENT_FINISHED` with its `subagentRunId` (one per invocation:
`<run id>.s<n>`; `parentToolCallId` names the call that runs it; held, it finishes
"suspended" and the run that resumes it continues it under that id), its tool calls' ids
prefixed `<run id>.s<n>/` of the stream, so no streamed id repeats when models number their
calls (`call_0` in every reply), progress as `CUSTOM` "tool_progress", and `RUN_FINISHED`
(outcome success, cancelled after an abort, or interrupt with one interrupt per tool call
held for approval)
or `RUN_ERROR` (also when a guardrail stopped the run, code "guardrail_tripped", and when
its limits did, code "usage_limit" or "max_turns", the message naming the limit). The next
input answers the interrupts in `resume`: status "resolved" approves unless the payload is
`false` or `{"approve": false, "reason"?}`; "cancelled" rejects.

Front-end tools: the input's `tools` (the client's own, CopilotKit's frontend actions) are
offered beside the agent's own for this run only; a name of the agent's own tools (or of
its transfer or output tools) is a 400, and each `parameters` is checked as a registered
tool's schema is. A call of one is streamed (`TOOL_CALL_START/ARGS/END`, no result) and
held as an approval holds a call (`_protocols`); the run finishes, with no interrupt for
it. The client runs the tool and answers in its next input with a `tool` message
(`toolCallId`, `content`, or `error` for an error result) after the last assistant
message: the held call gets that result (not streamed back: the client has it) and the run
goes on. A tool message there for a call of the agent's own tools that the session has
answered is the client's copy of its `TOOL_CALL_RESULT`, and is skipped, as is one for a
sub-agent's call (its prefixed id: a sub-agent is offered no front-end tool); one for an
unknown call, or a front-end call answered already, is a 400. A new user message while a
front-end call is pending gives that call the error result "the client did not run the
tool"; then the model reads the message. An input with a shared `state` is a 400 (not a
run without it).

A client names each run (`runId`) and sends a new one for each run it starts; an input
repeating a run this server answered on the thread (the same `runId`, messages and
`resume`, as CopilotKit resends after an upgrade) is a 409 naming the run, so its prompt
is not stored and its tools not run a second time. The runs are remembered in memory (the
last `ANSWERED_RUNS`): after a restart a repeated input runs again. The same `runId` with
other messages is another request, as a hand-written client that never changes it sends.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import AsyncGenerator
from typing import Any

from ag_ui import core as agui
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from yiemagent.serve._api import (
    BadRequest,
    checked_document,
    checked_image,
    checked_reason,
    read_json,
    session_header,
)
from yiemagent.serve._protocols import (
    Conversation,
    call_at,
    client_tool,
    end_error,
    event_stream,
    held_calls,
    message_text,
    run_batches,
    start_conversation,
    stopped_short,
    tool_result_text,
)
from yiemagent.serve._runs import Busy, Run, RunHub
from yiemagent.types import (
    AgentTool,
    AgentToolResult,
    DocumentContent,
    ImageContent,
    TextContent,
    ToolApproval,
)
from yiemagent.types.tools import is_json_of

__all__ = ["agui_routes"]

logger = logging.getLogger(__name__)


def _text_of(content: Any) -> tuple[str, list[ImageContent | DocumentContent]]:
    """A message's text and what it attaches: images, and PDF documents, given as data.

    Raises:
        BadRequest: a part of another kind (audio, video, a document that is no PDF) or
            given by URL or file id: dropped, the model would answer as if nothing had been
            attached; or data that is not base64.
    """
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    attached: list[ImageContent | DocumentContent] = []
    for part in content or []:
        if isinstance(part, agui.TextPart):
            texts.append(part.text)
            continue
        source = getattr(part, "source", None)
        pdf = isinstance(part, agui.DocumentPart) and getattr(source, "mime_type", None) == (
            "application/pdf"
        )
        if not (isinstance(part, agui.ImagePart) or pdf):
            kind = getattr(part, "type", type(part).__name__)
            raise BadRequest(f'a "{kind}" part: the agent takes text, images and PDFs')
        if not isinstance(source, agui.DataSource):
            raise BadRequest(
                f'a "{part.type}" part needs its content as a "data" source (base64), '
                f"not {getattr(source, 'type', source)!r}"
            )
        if isinstance(part, agui.ImagePart):
            attached.append(checked_image(source.value, source.mime_type))
        else:
            metadata = part.metadata if isinstance(part.metadata, dict) else {}
            attached.append(checked_document(source.value, metadata.get("filename")))
    return "".join(texts), attached


def _decision(entry: agui.ResumeEntry) -> ToolApproval:
    """A resume entry's decision: "cancelled" rejects; "resolved" approves unless its payload
    is `false` or `{"approve": false, "reason"?}` (`"approved"` also read).

    Raises:
        BadRequest: a payload or an `approve` that is no boolean (`"false"`, `0`, `"no"`):
            read as truthy it would run a call the user meant to reject.
    """
    if entry.status == "cancelled":
        return ToolApproval(False, "cancelled by the user")
    payload = entry.payload
    if payload is None or isinstance(payload, bool):
        return ToolApproval(payload is not False)
    if not isinstance(payload, dict):
        raise BadRequest(
            f"resume {entry.interrupt_id!r}: the payload must be true, false or an object "
            f'{{"approve": bool, "reason"?}}, not {payload!r}'
        )
    approve = payload.get("approve", payload.get("approved", True))
    if not isinstance(approve, bool):
        raise BadRequest(
            f'resume {entry.interrupt_id!r}: "approve" must be true or false, not {approve!r}'
        )
    reason = payload.get("reason")
    return ToolApproval(approve, checked_reason(reason))


def conversation_of(data: agui.RunAgentInput) -> Conversation:
    """The conversation a `RunAgentInput` asks for: its messages (or its resume entries),
    its front-end tools, and the results its `tool` messages give to their held calls.

    Raises:
        BadRequest: an attachment the agent cannot take (`_text_of`), a front-end tool that
            is not one (`_client_tools`), two tool messages answering one call.
    """
    conversation = Conversation()
    answers = _answers(data.messages)
    conversation.client_tools = _client_tools(data.tools or [], answers)
    conversation.answered = set(answers)
    if data.resume:
        conversation.decisions = {e.interrupt_id: _decision(e) for e in data.resume}
        return conversation
    for message in data.messages:
        if isinstance(message, agui.UserMessage):
            text, images = _text_of(message.content)
            conversation.add("user", text, images)
        elif isinstance(message, agui.AssistantMessage):
            conversation.add("assistant", message.content or "")
        elif isinstance(message, agui.SystemMessage | agui.DeveloperMessage):
            conversation.add("system", _text_of(message.content)[0])
    if data.context and conversation.prompt is not None:
        note = _context_note(data.context)
        content = conversation.prompt.content
        conversation.prompt.content = [*content, note] if isinstance(content, list) else [note]
    return conversation


def _context_note(context: list[agui.Context]) -> TextContent:
    """The input's `context` entries (what the page shows, CopilotKit's readables) as one
    text, `- description: value` a line. It goes with the prompt, as the user's words, not
    into the system prompt, where the client's text would speak with the operator's voice."""
    lines = [f"- {entry.description}: {entry.value}" for entry in context]
    return TextContent("Context from the application:\n" + "\n".join(lines))


def _answers(messages: list[Any]) -> dict[str, AgentToolResult | str]:
    """The `tool` messages after the last assistant message, by the call they answer: the
    client's results for its front-end tools' calls, and its copies of the results the
    server sent for the calls of the agent's own tools (`start_conversation` skips those).
    Earlier tool messages answer calls the session holds results for already (the client
    sends the whole conversation each time), and one for a sub-agent's call (its streamed
    id, `_SUB_CALL_ID`) is the client's copy of a result streamed to it: both are left out.
    Each is the result (its text and images), or its `error` text for an error result.

    Raises:
        BadRequest: two of them answer one call; a part that is neither text nor an image
            (`_text_of`).
    """
    assistants = (i for i, m in enumerate(messages) if isinstance(m, agui.AssistantMessage))
    last = max(assistants, default=-1)
    answers: dict[str, AgentToolResult | str] = {}
    for message in messages[last + 1 :]:
        if not isinstance(message, agui.ToolMessage):
            continue
        call_id = message.tool_call_id
        if _SUB_CALL_ID.fullmatch(call_id):
            continue  # no front-end call: a sub-agent is offered none
        if call_id in answers:
            raise BadRequest(f"two tool messages answer tool call {call_id!r}")
        if message.error:
            answers[call_id] = message.error
            continue
        text, attached = _text_of(message.content)
        images = [block for block in attached if isinstance(block, ImageContent)]
        if len(images) < len(attached):
            raise BadRequest(f"tool message for {call_id!r}: a tool's result takes text and images")
        content: list[TextContent | ImageContent] = [TextContent(text)] if text else []
        answers[call_id] = AgentToolResult([*content, *images] or [TextContent("(no text)")])
    return answers


_SUB_CALL_ID = re.compile(r"[0-9a-f]{32}\.s[0-9]+/.+", re.DOTALL)
"""A sub-agent's tool call as the stream names it (`Translator._id`): its invocation's
segment (the run's id, a hex UUID, then `.s<n>`), a slash, and the call's own id."""


def _client_tools(
    tools: list[agui.Tool], answers: dict[str, AgentToolResult | str]
) -> list[AgentTool]:
    """The input's front-end tools as tools of the run (`client_tool`), answered from
    `answers`.

    Raises:
        BadRequest: two tools of one name, or one that is no tool (`client_tool`).
    """
    made: dict[str, AgentTool] = {}
    for tool in tools:
        if tool.name in made:
            raise BadRequest(f'front-end tool {tool.name!r}: two tools of that name in "tools"')
        made[tool.name] = client_tool(tool.name, tool.description, tool.parameters, answers)
    return list(made.values())


class Translator:
    """The run's events (dicts) to AG-UI events, in order (see the module docstring)."""

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        run: Run,
        *,
        subagent: tuple[str, Translator] | None = None,
        client_tools: frozenset[str] = frozenset(),
        answered: frozenset[str] = frozenset(),
        earlier: frozenset[str] = frozenset(),
        streamed_before: dict[tuple[tuple[str, ...], str], str] | None = None,
        suspended: dict[tuple[str, ...], str] | None = None,
    ) -> None:
        self.thread_id = thread_id
        self.run_id = run_id
        self.run = run
        self.parent = None if subagent is None else subagent[1]
        """The translator of the run that called this sub-agent; None for the top run."""
        self.sub_run = None if subagent is None else subagent[0]
        """This sub-agent invocation's `subagentRunId`; None for the top run."""
        self.name = ""
        """A sub-agent invocation's agent, as its path names it; "" for the top run."""
        self.prefix = self.sub_run or run.id
        """Message ids are `<prefix>-<n>`; a sub-agent's tool call ids `<prefix>/<id>`. A
        sub-agent's is its invocation's segment in this run (`<run id>.s<n>`), apart from
        a continued invocation's `subagentRunId`: its model numbers its calls again."""
        self.chain: tuple[str, ...] = ()
        """The ids of the calls, from the top run's down, that run this invocation."""
        self.invocation_list: list[Translator] = []
        """Every sub-agent invocation of the run (the top run keeps them)."""
        self.streamed_before: dict[tuple[tuple[str, ...], str], str] = (
            dict(streamed_before or {}) if self.parent is None else self.parent.streamed_before
        )
        """The streamed ids of the sub-agents' calls of the run this one resumes, by the
        chain of their invocation and their own id: a held call, and the calls above it,
        get their results here under the ids of the `TOOL_CALL_START`s the client has.
        Kept in this server's memory; without it (a restart, another replica) the one id
        of the client's messages that ends with the call's own id is taken."""
        self.suspended: dict[tuple[str, ...], str] = (
            dict(suspended or {}) if self.parent is None else self.parent.suspended
        )
        """The `subagentRunId`s of the invocations suspended (a call under them held) and
        not yet continued, by their chain: those of the run this one resumes, and this
        run's own. AG-UI's `subagentRunId` names one invocation, which a later run may
        continue: a continued invocation is streamed under the id it had."""
        self.subs: dict[str, Translator] = {}
        """The running sub-agent invocations, by the id of the call (of this run) that runs
        each."""
        self.invocations = 0
        """The sub-agent invocations seen so far in the stream (the top run counts them)."""
        self.held: dict[str, tuple[str, Any]] = {} if self.parent is None else self.parent.held
        """The sub-agents' tool calls with no result yet, by streamed id: (name, arguments),
        the stream's own, so each interrupt names the `TOOL_CALL_START` of its call."""
        self.message_id = ""
        self.messages = 0
        self.text_open = False
        self.reasoning: str | None = None
        """The id of the open reasoning message (a thinking block being streamed)."""
        self.calls_open: set[str] = set()
        self.calls_started: set[str] = set()
        self.earlier = earlier
        """The ids of the calls the client has from earlier runs."""
        self.message_calls: set[str] = set()
        """The calls started in the message being streamed."""
        self.sent: dict[str, str] = {}
        """Tool call id -> the argument text sent so far in its `TOOL_CALL_ARGS`."""
        self.client_tools = client_tools
        """The front-end tools' names: their held calls are no interrupts (the client runs
        them)."""
        self.answered = answered
        """Calls the client answered in this input: their result is its own, not sent back."""

    def start(self) -> list[agui.BaseEvent]:
        """The events that open the stream, before the run's first event: `RUN_STARTED`."""
        return [agui.RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id)]

    def feed(self, event: dict[str, Any]) -> list[agui.BaseEvent]:
        """The AG-UI events that one run event (`event_to_dict`) becomes, in order; none
        for an event AG-UI has no word for (a turn's start, a user message)."""
        kind = event.get("type")
        message = event.get("message") or {}
        if kind == "message_start" and message.get("role") == "assistant":
            self.messages += 1
            self.message_id = f"{self.prefix}-{self.messages}"
            self.message_calls = set()
            return []
        if kind == "nested_agent":
            return self._nested(event)
        if kind == "message_update":
            return self._update(event.get("assistant_message_event") or {})
        if kind == "message_end" and message.get("role") == "assistant":
            return self._close(message)
        if kind == "tool_execution_update":
            value = {
                "tool_call_id": self._id(str(event.get("tool_call_id"))),
                "text": tool_result_text(event.get("partial_result") or {}),
            }
            return [agui.CustomEvent(name="tool_progress", value=value)]
        if kind == "tool_execution_end":
            if event.get("tool_call_id") in self.answered:
                return []
            call_id = self._id(str(event.get("tool_call_id")))
            self.held.pop(call_id, None)
            text = tool_result_text(event.get("result") or {}) or "(no text)"
            return [
                agui.ToolCallResultEvent(
                    message_id=f"result-{call_id}", tool_call_id=call_id, content=text, role="tool"
                )
            ]
        if kind == "agent_end":
            return self._end(event)
        return []

    def _id(self, call_id: str) -> str:
        """The streamed id of a tool call of this run: its own in the top run (the one the
        session holds, which the client's answers name); a sub-agent's prefixed by its
        `subagentRunId`, since sub-runs number their calls as the parent does, unless the
        call was streamed by the run this one resumes (`streamed_before`)."""
        if self.sub_run is None:
            return call_id
        if call_id not in self.calls_started:  # maybe started in the run this one resumes
            before = self.streamed_before.get((self.chain, call_id))
            if before is None:  # the server restarted, or another replica held it:
                # the client's messages hold the call under its streamed id
                ending = f"/{call_id}"
                named = [
                    known
                    for known in self._top().earlier
                    if known.endswith(ending) and _SUB_CALL_ID.fullmatch(known)
                ]
                before = named[0] if len(named) == 1 else None
            if before is not None:
                return before
        return f"{self.prefix}/{call_id}"

    def streamed_ids(self) -> dict[tuple[tuple[str, ...], str], str]:
        """The streamed id of each call the run's sub-agents started, by the chain of its
        invocation and its own id (see `streamed_before`), and those of the run it resumed:
        a call held again is resumed by a third run, whose results of the calls above it
        name the ids the first run streamed."""
        return {
            **self.streamed_before,
            **{
                (sub.chain, call_id): sub._id(call_id)
                for sub in self.invocation_list
                for call_id in sub.calls_started
            },
        }

    def _top(self) -> Translator:
        return self if self.parent is None else self.parent._top()

    def _nested(self, event: dict[str, Any]) -> list[agui.BaseEvent]:
        """A sub-agent's event (an agent called as a tool): `SUBAGENT_STARTED` at the first
        event of each invocation, its events attributed by its `subagentRunId` (one per
        invocation in the thread: `<run id>.s<n>`, kept by the run that continues it), and
        `SUBAGENT_FINISHED` (outcome "suspended" when a call under it is held) or
        `SUBAGENT_ERROR` at its end."""
        call_id = str(event.get("tool_call_id"))
        if self.parent is None:
            above = [str(c) for c in event.get("tool_call_path") or ()][:-1]
            owner = self._owner(list(event.get("agent_path") or ()), call_id, above)
            if owner is not self:
                return owner._nested(event)
        out: list[agui.BaseEvent] = []
        sub = self.subs.get(call_id)
        if sub is None:
            top = self._top()
            top.invocations += 1
            segment = f"{top.run.id}.s{top.invocations}"
            chain = (*self.chain, call_id)
            sub_run = top.suspended.pop(chain, segment)  # a continued invocation keeps its id
            sub = Translator(self.thread_id, self.run_id, self.run, subagent=(sub_run, self))
            sub.prefix = segment  # new in each run: a continued invocation's ids may repeat
            sub.chain = chain
            top.invocation_list.append(sub)
            self.subs[call_id] = sub
            path = event.get("agent_path") or ["agent"]
            sub.name = str(path[-1])
            out.append(
                agui.SubagentStartedEvent(
                    subagent_run_id=sub_run,
                    name=str(path[-1]),
                    parent_tool_call_id=self._id(call_id),
                    parent_subagent_run_id=self.sub_run,
                )
            )
        sub_run = str(sub.sub_run)
        inner = event.get("event") or {}
        for made in sub.feed(inner):
            if isinstance(made, agui.RunErrorEvent | agui.RunFinishedEvent):
                del self.subs[call_id]  # the call's next sub-run continues it, or is new
            if isinstance(made, agui.RunErrorEvent):
                out.append(agui.SubagentErrorEvent(subagent_run_id=sub_run, message=made.message))
            elif isinstance(made, agui.RunFinishedEvent) and (
                inner.get("reason") == "awaiting_approval"
            ):  # a call under it is held: the run that decides it continues the invocation
                self._top().suspended[sub.chain] = sub_run
                suspended = agui.SubagentFinishedSuspendedOutcome()
                out.append(agui.SubagentFinishedEvent(subagent_run_id=sub_run, outcome=suspended))
            elif isinstance(made, agui.RunFinishedEvent):
                out.append(agui.SubagentFinishedEvent(subagent_run_id=sub_run))
            else:
                if "subagent_run_id" in type(made).model_fields:
                    setattr(made, "subagent_run_id", sub_run)  # noqa: B010 (not on BaseEvent)
                out.append(made)
        return out

    def _owner(self, path: list[Any], call_id: str, above: list[str]) -> Translator:
        """The translator of the run whose call `call_id` runs the sub-agent at `path` (the
        agents' names from the top run's down), `above` the calls that run that run (the
        event's `tool_call_path` without its last). A deeper level's events reach the top
        run as they are, so an invocation two levels down is attributed to the running
        invocation that `above` leads to; with no such path, to the one that started its
        call, or, for a call a resumed invocation made before its hold, the one whose
        chain and call the held run streamed (`streamed_before`; after a restart, the one
        running invocation of the agent above it), not to the top run."""
        walked: Translator | None = self
        for above_id in above:
            walked = walked.subs.get(above_id) if walked is not None else None
        if above and walked is not None:
            return walked
        level = [self]
        for _ in range(len(path) - 2):
            level = [sub for translator in level for sub in translator.subs.values()]
        for translator in level:
            if call_id in translator.subs or call_id in translator.calls_started:
                return translator
            if (translator.chain, call_id) in self.streamed_before:  # made before the hold
                return translator
        named = [t for t in level if t.parent is not None and t.name == str(path[-2])]
        return named[0] if len(named) == 1 else self

    def _update(self, inner: dict[str, Any]) -> list[agui.BaseEvent]:
        """The AG-UI events of one provider event of the streamed message (`inner`): text,
        reasoning and tool-call starts, arguments and ends."""
        kind = inner.get("type")
        out: list[agui.BaseEvent] = []
        if kind == "text_delta" and inner.get("delta"):
            if not self.text_open:
                self.text_open = True
                out.append(agui.TextMessageStartEvent(message_id=self.message_id, role="assistant"))
            out.append(
                agui.TextMessageContentEvent(message_id=self.message_id, delta=inner["delta"])
            )
        elif kind in ("thinking_start", "thinking_delta"):
            if self.reasoning is None:
                self.reasoning = f"{self.message_id}-r{inner.get('content_index', 0)}"
                out.append(agui.ReasoningStartEvent(message_id=self.reasoning))
                out.append(
                    agui.ReasoningMessageStartEvent(message_id=self.reasoning, role="reasoning")
                )
            if kind == "thinking_delta" and inner.get("delta"):
                out.append(
                    agui.ReasoningMessageContentEvent(
                        message_id=self.reasoning, delta=inner["delta"]
                    )
                )
        elif kind == "thinking_end":
            out.extend(self._end_reasoning())
        elif kind in ("toolcall_start", "toolcall_delta", "toolcall_end"):
            call = call_at(inner)
            if call is None or self._streamed_before(call["id"]):
                return out
            out.extend(self._call_start(call))
            if kind == "toolcall_delta" and inner.get("delta"):
                self.sent[call["id"]] = self.sent.get(call["id"], "") + inner["delta"]
                made = agui.ToolCallArgsEvent(
                    tool_call_id=self._id(call["id"]), delta=inner["delta"]
                )
                out.append(made)
            elif kind == "toolcall_end" and call.get("partial_json") is None:
                # arguments still cut off may be completed later (a server streaming several
                # calls at once): those calls end with the message
                out.extend(self._call_end(call))
        return out

    def _end_reasoning(self) -> list[agui.BaseEvent]:
        if self.reasoning is None:
            return []
        done, self.reasoning = self.reasoning, None
        return [
            agui.ReasoningMessageEndEvent(message_id=done),
            agui.ReasoningEndEvent(message_id=done),
        ]

    def _streamed_before(self, call_id: str) -> bool:
        """Whether a call of an earlier message (streamed, or the client's) had the id the
        provider gives a call now: the loop gives the new one an id of its own at the
        message's end (`call_0_2`), and the call is streamed whole then (`_close`)."""
        known = call_id in self.calls_started or call_id in self.earlier
        return known and call_id not in self.message_calls

    def _call_start(self, call: dict[str, Any]) -> list[agui.BaseEvent]:
        if call["id"] in self.calls_started:
            return []
        self.calls_started.add(call["id"])
        self.message_calls.add(call["id"])
        self.calls_open.add(call["id"])
        return [
            agui.ToolCallStartEvent(
                tool_call_id=self._id(call["id"]),
                tool_call_name=call.get("name", ""),
                parent_message_id=self.message_id,
            )
        ]

    def _call_end(self, call: dict[str, Any]) -> list[agui.BaseEvent]:
        """`TOOL_CALL_END`, after what the streamed arguments lack: a client reads the
        arguments only from `TOOL_CALL_ARGS`, so a call streamed with no argument text (or
        all of it at once) gets them whole, and one whose last fragments came after another
        call had started (a server streaming several calls at once) gets the rest."""
        if call["id"] not in self.calls_open:
            return []
        self.calls_open.discard(call["id"])
        out: list[agui.BaseEvent] = []
        rest = self._rest_of_args(call)
        if rest:
            self.sent[call["id"]] = self.sent.get(call["id"], "") + rest
            out.append(agui.ToolCallArgsEvent(tool_call_id=self._id(call["id"]), delta=rest))
        out.append(agui.ToolCallEndEvent(tool_call_id=self._id(call["id"])))
        return out

    def _rest_of_args(self, call: dict[str, Any]) -> str:
        """The argument text to send so that the text sent for `call` is its arguments."""
        args = call.get("arguments") or {}
        sent = self.sent.get(call["id"], "")
        if not sent:
            return json.dumps(args, ensure_ascii=False)
        if is_json_of(sent, args):
            return ""
        # the raw text is gone (only its parse is kept): the usual ways of writing the JSON
        for ascii_only in (False, True):
            for separators in ((", ", ": "), (",", ":")):
                whole = json.dumps(args, ensure_ascii=ascii_only, separators=separators)
                if whole.startswith(sent):
                    return whole[len(sent) :]
        logger.warning("AG-UI: the arguments streamed for tool call %s are incomplete", call["id"])
        return ""

    def _close(self, message: dict[str, Any]) -> list[agui.BaseEvent]:
        """The events that end an assistant message: its text (all at once when it was not
        streamed) and each of its tool calls started and ended, once each."""
        out: list[agui.BaseEvent] = self._end_reasoning()
        text = message_text(message)
        if not self.text_open and text:  # not streamed (guardrails held it): all at once
            out.append(agui.TextMessageStartEvent(message_id=self.message_id, role="assistant"))
            out.append(agui.TextMessageContentEvent(message_id=self.message_id, delta=text))
            self.text_open = True
        if self.text_open:
            self.text_open = False
            out.append(agui.TextMessageEndEvent(message_id=self.message_id))
        for block in message.get("content", []):
            if block.get("type") != "toolCall" or not block.get("id"):
                continue
            out.extend(self._call_start(block))
            out.extend(self._call_end(block))
            if self.sub_run is not None:  # until its result: it may be held for approval
                self.held[self._id(block["id"])] = (block.get("name"), block.get("arguments") or {})
        return out

    def _end(self, event: dict[str, Any]) -> list[agui.BaseEvent]:
        """The event that ends the run (`agent_end`): `RUN_ERROR` when it gave no answer (an
        error, a guardrail, a limit), else `RUN_FINISHED` with its outcome."""
        reason = event.get("reason")
        if reason == "error":
            return [agui.RunErrorEvent(message=end_error(event), code="run_failed")]
        if reason == "guardrail":  # its answer is left out: not a success with no text
            text = end_error(event, "a guardrail stopped the run")
            return [agui.RunErrorEvent(message=text, code="guardrail_tripped")]
        limit = stopped_short(event)
        if limit is not None:  # no answer: not a success with no text either
            return [agui.RunErrorEvent(message=limit, code=str(reason))]
        outcome: Any = agui.RunFinishedSuccessOutcome()
        if reason == "aborted":
            outcome = agui.RunFinishedCancelledOutcome()
        elif reason == "awaiting_approval" and self.parent is None:  # not a sub-run's end
            interrupts = self._interrupts()
            if interrupts:
                outcome = agui.RunFinishedInterruptOutcome(interrupts=interrupts)
        return [
            agui.RunFinishedEvent(
                thread_id=self.thread_id,
                run_id=self.run_id,
                outcome=outcome,
                result=event.get("output"),  # an output type's value (None without one)
            )
        ]

    def _interrupts(self) -> list[agui.Interrupt]:
        """One interrupt per call held for approval (`held_calls`, a sub-agent's too),
        asking the user whether to run it; none for a call of a front-end tool, which the
        client runs and answers with a tool message instead. Its id is the one `resume`
        answers (the session's); its `toolCallId` the call's streamed id (a sub-agent's
        call: its prefixed id, found by tool and arguments among the sub-agents' calls
        still without a result)."""
        interrupts = []
        for call in held_calls(self.run):
            if not call.get("nested") and call.get("name") in self.client_tools:
                continue
            streamed = call["id"]
            if call.get("nested"):
                wanted = (call.get("name"), call.get("arguments") or {})
                found = next((k for k, v in self.held.items() if v == wanted), None)
                if found is not None:
                    streamed = found
                    del self.held[found]
            interrupts.append(
                agui.Interrupt(
                    id=call["id"],
                    reason="tool_approval",
                    tool_call_id=streamed,
                    message=f"Run {call.get('name')} with "
                    f"{json.dumps(call.get('arguments') or {}, ensure_ascii=False)}?",
                )
            )
        return interrupts


def _problems(exc: ValidationError) -> str:
    """`field: problem; ...` of a validation error's first five problems, on one line:
    pydantic's own text spans lines and sends the client to its documentation site for each
    error."""
    most = 5
    errors = exc.errors()
    parts = []
    for error in errors[:most]:
        where = ".".join(str(part) for part in error["loc"])
        parts.append(f"{where}: {error['msg']}" if where else str(error["msg"]))
    more = f" (and {len(errors) - most} more)" if len(errors) > most else ""
    return "; ".join(parts) + more


def _refuse_what_is_not_run(data: agui.RunAgentInput) -> None:
    """Shared state is refused, not dropped.

    Raises:
        BadRequest: `state` holds a value: the agent neither reads it nor sends
            `STATE_SNAPSHOT`/`STATE_DELTA` back.
    """
    if data.state:
        raise BadRequest(
            "shared state is not supported: the agent neither reads nor updates it; "
            'send "state": {}'
        )


ANSWERED_RUNS = 10_000
"""How many runs (thread, run id) `AnsweredRuns` remembers, the oldest forgotten first."""


class AnsweredRuns:
    """The runs this server started, by thread and run id, each with a digest of what it
    was asked (its messages and resume entries), and per thread the streamed ids of the
    sub-agents' calls and invocations its last run left held: one per app, read and
    written on the event loop only."""

    def __init__(self) -> None:
        self._runs: OrderedDict[tuple[str, str], str] = OrderedDict()
        self._held: OrderedDict[
            str, tuple[dict[tuple[tuple[str, ...], str], str], dict[tuple[str, ...], str]]
        ] = OrderedDict()

    def streamed_before(self, thread_id: str) -> dict[tuple[tuple[str, ...], str], str]:
        """The sub-agents' streamed call ids of the run that left `thread_id` holding a
        sub-agent's call (`Translator.streamed_ids`); empty when none did."""
        return self._held.get(thread_id, ({}, {}))[0]

    def suspended(self, thread_id: str) -> dict[tuple[str, ...], str]:
        """The `subagentRunId`s of the invocations the run that left `thread_id` holding a
        sub-agent's call suspended, by their chain (`Translator.suspended`)."""
        return self._held.get(thread_id, ({}, {}))[1]

    def keep_streamed(self, thread_id: str, translator: Translator) -> None:
        """Remember the sub-agents' streamed call ids of `translator`'s run when it ended
        holding a sub-agent's call, for the run that resumes it; forget them otherwise."""
        self._held.pop(thread_id, None)
        if any(call.get("nested") for call in held_calls(translator.run)):
            self._held[thread_id] = (translator.streamed_ids(), dict(translator.suspended))
            while len(self._held) > ANSWERED_RUNS:
                self._held.popitem(last=False)

    @staticmethod
    def _asked(data: agui.RunAgentInput) -> str:
        asked = data.model_dump(mode="json", by_alias=True, include={"messages", "resume"})
        return hashlib.sha256(json.dumps(asked, sort_keys=True).encode()).hexdigest()

    def refuse_repeat(self, data: agui.RunAgentInput) -> None:
        """Raises `Busy` when `data` repeats a run started already: the same thread, run id
        and messages (a retry of a request that was answered)."""
        if self._runs.get((data.thread_id, data.run_id)) == self._asked(data):
            raise Busy(
                f"run {data.run_id!r} of thread {data.thread_id!r} was answered already "
                "(the same runId and messages); a new run needs a new runId"
            )

    def add(self, data: agui.RunAgentInput) -> None:
        """Remember `data`'s run as started."""
        key = (data.thread_id, data.run_id)
        self._runs[key] = self._asked(data)
        self._runs.move_to_end(key)
        while len(self._runs) > ANSWERED_RUNS:
            self._runs.popitem(last=False)


async def _handle(hub: RunHub, answered: AnsweredRuns, request: Request) -> Response:
    """`POST /ag-ui`: the input checked (a 400 says what is wrong; a 409 for a run started
    already), its run started on the thread's session, and the run's events streamed back
    as AG-UI events."""
    data = await read_json(request)
    try:
        run_input = agui.RunAgentInput.model_validate(data)
    except ValidationError as exc:
        raise BadRequest(f"not an AG-UI RunAgentInput: {_problems(exc)}") from exc
    _refuse_what_is_not_run(run_input)
    answered.refuse_repeat(run_input)
    conversation = conversation_of(run_input)
    run = await start_conversation(hub, run_input.thread_id, conversation)
    answered.add(run_input)
    translator = Translator(
        run_input.thread_id,
        run_input.run_id,
        run,
        client_tools=frozenset(tool.name for tool in conversation.client_tools),
        answered=frozenset(conversation.answered),
        earlier=frozenset(
            call.id
            for message in run_input.messages
            if isinstance(message, agui.AssistantMessage)
            for call in message.tool_calls or []
        ),
        streamed_before=answered.streamed_before(run_input.thread_id),
        suspended=answered.suspended(run_input.thread_id),
    )
    encoder = EventEncoder(accept=request.headers.get("accept", ""))

    async def stream() -> AsyncGenerator[bytes, None]:
        now = int(time.time() * 1000)
        for first in translator.start():
            first.timestamp = now
            yield encoder.encode(first).encode()
        async for batch in run_batches(run):
            out = [encoder.encode(e) for event in batch for e in translator.feed(event)]
            if out:
                yield "".join(out).encode()
        answered.keep_streamed(run_input.thread_id, translator)

    headers = {"X-Session-Id": session_header(run.session_id), "X-Run-Id": run.id}
    return event_stream(run, stream(), headers)


def agui_routes(hub: RunHub) -> list[Route]:
    """`POST /ag-ui`."""

    answered = AnsweredRuns()

    async def endpoint(request: Request) -> Response:
        return await _handle(hub, answered, request)

    return [Route("/ag-ui", endpoint, methods=["POST"])]
