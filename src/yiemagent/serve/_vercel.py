"""`POST /api/chat`: the Vercel AI SDK's UI message stream protocol (`useChat`'s default
transport): UI messages in, UI message chunks out as server-sent events, header
`x-vercel-ai-ui-message-stream: v1`, ending with `data: [DONE]`.

The chat `id` is the session; `trigger: "regenerate-message"` asks the last user message
again in place of its old answer, and a `messageId` naming the last (user) message with
`trigger: "submit-message"` is an edit of it, in place of it and all that followed
(`_protocols`). One assistant message per run: `start`,
then per model call `start-step` … `finish-step`, text as `text-start/-delta/-end`, thinking as
`reasoning-start/-delta/-end`, tool calls as
`tool-input-start/-delta/-available` and, once run here, `tool-output-available` (or
`tool-output-error`); a call held for approval sends `tool-approval-request` (its approval
id is the tool call id; a call held inside a sub-agent gets its own tool part first, under
`sub/<its approval id>`, since a sub-run's calls may have its parent's ids, and its result
once decided), and the next request answers it with the tool part's
`approval: {id, approved, reason}` (state "approval-responded"; the approval's `id` names
the call, else the part's `toolCallId`; a rejected call's result is
then `tool-output-denied`, not an error). Then `finish` (its
`finishReason` "content-filter" when a guardrail stopped the run), or `abort` after an
abort. A run that failed, or that its limits stopped before it answered, sends `error`
(its `errorText` the failure, or naming the limit), inside the step when a model call
failed (then `finish-step`), and `finish` (`finishReason` "error", or "length" for a
limit), in the order the AI SDK's own `streamText` gives them.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Collection
from typing import Any

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
    end_error,
    event_stream,
    held_calls,
    message_text,
    run_batches,
    sse_data,
    start_conversation,
    stopped_short,
    tool_result_text,
)
from yiemagent.serve._runs import Run, RunHub
from yiemagent.types import DocumentContent, ImageContent, ToolApproval

__all__ = ["vercel_routes"]

HEADERS = {"x-vercel-ai-ui-message-stream": "v1", "x-accel-buffering": "no"}


def _attachment(part: dict[str, Any]) -> ImageContent | DocumentContent:
    """A `file` part as the agent takes it: an image, checked as the native API checks
    one, or a PDF (read by models whose input has "pdf"; others get a stand-in text).

    Raises:
        BadRequest: a file of another type (dropping it, the model would answer as if
            nothing were attached), or one whose `url` is not a base64 data URL, or does
            not decode.
    """
    url = part.get("url")
    media = str(part.get("mediaType") or "")
    if not media.startswith("image/") and media != "application/pdf":
        raise BadRequest(
            f'a "file" part of type {media or "(none)"!r}: the agent takes images and PDFs'
        )
    if not (isinstance(url, str) and url.startswith("data:") and ";base64," in url):
        raise BadRequest(
            f'a "file" part needs its "url" as a base64 data: URL, not {str(url)[:60]!r}'
        )
    if media.startswith("image/"):
        return checked_image(url, media)
    return checked_document(url, part.get("filename"))


def conversation_of(data: dict[str, Any]) -> Conversation:
    """The conversation of a `useChat` request (its UI messages)."""
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest('"messages" must be a non-empty list of UI messages')
    conversation = Conversation()
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
            raise BadRequest("each UI message needs a role and a list of parts")
        parts = [p for p in message["parts"] if isinstance(p, dict)]
        texts = [p.get("text", "") for p in parts if p.get("type") == "text"]
        if not all(isinstance(t, str) for t in texts):
            raise BadRequest('a "text" part\'s "text" must be a string')
        text = "".join(texts)
        attached = [_attachment(p) for p in parts if p.get("type") == "file"]
        conversation.add(str(message.get("role")), text, attached)
    conversation.regenerate = data.get("trigger") == "regenerate-message"
    last = messages[-1]
    edited = data.get("messageId")
    if data.get("trigger") == "submit-message" and edited and last.get("id") == edited:
        # `sendMessage({text, messageId})`: the client replaced that user message and
        # dropped what followed it; the session drops the same
        conversation.regenerate = conversation.edit = last.get("role") == "user"
    if last.get("role") == "assistant":
        conversation.decisions = _decisions(last["parts"])
    return conversation


def _decisions(parts: list[Any]) -> dict[str, ToolApproval]:
    """The user's answers to approval requests in the parts of the last (assistant) UI
    message: each tool part in state "approval-responded", by its call id.

    Raises:
        BadRequest: an `approved` that is no boolean (`"false"` read as truthy would run
            the call).
    """
    decisions: dict[str, ToolApproval] = {}
    for part in parts:
        if not isinstance(part, dict):  # skipped, as in every other message
            continue
        approval = part.get("approval")
        if part.get("state") == "approval-responded" and isinstance(approval, dict):
            call_id = str(approval.get("id") or part.get("toolCallId"))
            approved, reason = approval.get("approved"), approval.get("reason")
            if not isinstance(approved, bool):
                raise BadRequest(
                    f'approval of {call_id!r}: "approved" must be true or false, not {approved!r}'
                )
            decisions[call_id] = ToolApproval(approved, checked_reason(reason))
    return decisions


class Translator:
    """The run's events (dicts) to UI message chunks, in order (see the module docstring)."""

    def __init__(
        self,
        run: Run,
        message_id: str,
        *,
        decided: Collection[tuple[str, ...]] = (),
        denied: Collection[str] = (),
        earlier: Collection[str] = (),
    ) -> None:
        self.run = run
        self.message_id = message_id
        self.decided = frozenset(decided)
        """The call paths (`PendingApproval.tool_call_path`) of the held calls this request
        decides: their results are sent also when they are a sub-agent's (whose other
        events the stream leaves out). Not their ids: models number their calls, so
        another invocation of the sub-agent, or its next reply, may make a call of one."""
        self.denied = frozenset(denied)
        """The held calls this request rejects: their results are `tool-output-denied`."""
        self.messages = 0
        self.text_id: str | None = None
        self.reasoning_id: str | None = None
        self.calls_started: set[str] = set()
        self.earlier = frozenset(earlier)
        """The ids of the tool parts of the client's messages."""
        self.message_calls: set[str] = set()
        """The calls started in the model call being streamed."""
        self.calls_ready: set[str] = set()
        self.step_open = False

    def feed(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The UI message chunks of one run event (as the wire sends it)."""
        kind = event.get("type")
        message = event.get("message") or {}
        if kind == "agent_start":
            return [{"type": "start", "messageId": self.message_id}]
        if kind == "message_start" and message.get("role") == "assistant":
            self.messages += 1
            out = [{"type": "finish-step"}] if self.step_open else []  # a failed step's
            self.step_open = True
            self.message_calls = set()
            return [*out, {"type": "start-step"}]
        if kind == "message_update":
            return self._update(event.get("assistant_message_event") or {})
        if kind == "message_end" and message.get("role") == "assistant":
            return self._close(message)
        if kind == "tool_execution_end":
            return self._result(event)
        if kind == "nested_agent":  # only the result of a sub-agent's call decided here
            inner = event.get("event") or {}
            above = event.get("tool_call_path") or [event.get("tool_call_id")]
            path = (*(str(c) for c in above), str(inner.get("tool_call_id")))
            ours = inner.get("type") == "tool_execution_end" and path in self.decided
            return self._result(inner, nested=True) if ours else []
        if kind == "turn_end" and self.step_open:
            if message.get("stop_reason") == "error":
                return []  # a failed step ends after its error (`_end`)
            self.step_open = False
            return [{"type": "finish-step"}]
        if kind == "agent_end":
            return self._end(event)
        return []

    def _result(self, event: dict[str, Any], *, nested: bool = False) -> list[dict[str, Any]]:
        """The result chunk of a call (`tool_execution_end`); `nested`: a sub-agent's call
        held for approval, whose part is `_nested_part_id`'s."""
        call_id = str(event.get("tool_call_id"))
        denied = call_id in self.denied
        if nested:
            call_id = _nested_part_id(call_id)
        text = tool_result_text(event.get("result") or {})
        if event.get("is_error") and denied:  # not a failure: the user said no
            return [{"type": "tool-output-denied", "toolCallId": call_id}]
        if event.get("is_error"):
            return [{"type": "tool-output-error", "toolCallId": call_id, "errorText": text}]
        return [{"type": "tool-output-available", "toolCallId": call_id, "output": text}]

    def _update(self, inner: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunks of one provider event of the streamed message (`inner`): text,
        reasoning and tool-input starts and deltas."""
        kind = inner.get("type")
        out: list[dict[str, Any]] = []
        if kind == "text_delta" and inner.get("delta"):
            if self.text_id is None:
                self.text_id = f"text-{self.run.id}-{self.messages}"
                out.append({"type": "text-start", "id": self.text_id})
            out.append({"type": "text-delta", "id": self.text_id, "delta": inner["delta"]})
        elif kind in ("thinking_start", "thinking_delta"):
            if self.reasoning_id is None:
                self.reasoning_id = f"reasoning-{self.run.id}-{self.messages}"
                out.append({"type": "reasoning-start", "id": self.reasoning_id})
            if kind == "thinking_delta" and inner.get("delta"):
                out.append(
                    {"type": "reasoning-delta", "id": self.reasoning_id, "delta": inner["delta"]}
                )
        elif kind == "thinking_end":
            out.extend(self._end_reasoning())
        elif kind in ("toolcall_start", "toolcall_delta", "toolcall_end"):
            call = call_at(inner)
            if call is None or self._given_before(call["id"]):
                # an id a call of an earlier model call had: the loop gives this call its
                # own at the message's end, and its part is made then (`_close`)
                return out
            out.extend(self._call_start(call))
            if kind == "toolcall_delta" and inner.get("delta"):
                out.append(
                    {
                        "type": "tool-input-delta",
                        "toolCallId": call["id"],
                        "inputTextDelta": inner["delta"],
                    }
                )
        return out

    def _given_before(self, call_id: str) -> bool:
        """Whether a part of an earlier model call (this stream's, or the client's) has the
        id the provider gives a call now."""
        known = call_id in self.calls_started or call_id in self.earlier
        return known and call_id not in self.message_calls

    def _end_reasoning(self) -> list[dict[str, Any]]:
        if self.reasoning_id is None:
            return []
        done, self.reasoning_id = self.reasoning_id, None
        return [{"type": "reasoning-end", "id": done}]

    def _call_start(self, call: dict[str, Any]) -> list[dict[str, Any]]:
        if call["id"] in self.calls_started:
            return []
        self.calls_started.add(call["id"])
        self.message_calls.add(call["id"])
        return [
            {"type": "tool-input-start", "toolCallId": call["id"], "toolName": call.get("name", "")}
        ]

    def _close(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunks that end an assistant message: its text (all at once when it was not
        streamed) and each tool call's `tool-input-available`, once each."""
        out: list[dict[str, Any]] = self._end_reasoning()
        text = message_text(message)
        if self.text_id is None and text:  # not streamed (guardrails held it): all at once
            self.text_id = f"text-{self.run.id}-{self.messages}"
            out.append({"type": "text-start", "id": self.text_id})
            out.append({"type": "text-delta", "id": self.text_id, "delta": text})
        if self.text_id is not None:
            out.append({"type": "text-end", "id": self.text_id})
            self.text_id = None
        for block in message.get("content", []):
            if block.get("type") != "toolCall" or not block.get("id"):
                continue
            out.extend(self._call_start(block))
            if block["id"] not in self.calls_ready:
                self.calls_ready.add(block["id"])
                out.append(_input_available(block))
        return out

    def _end(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """The chunks that end the run (`agent_end`): approval requests for held calls,
        then `finish` with its reason, or `abort` or `error` (see the module docstring)."""
        out: list[dict[str, Any]] = []
        reason = event.get("reason")
        if reason == "awaiting_approval":
            for call in held_calls(self.run):
                part_id = call["id"]
                if call.get("nested"):  # a sub-agent's call: no part of this message yet
                    part_id = _nested_part_id(call["id"])
                    out.extend(self._call_start({**call, "id": part_id}))
                    out.append(_input_available({**call, "id": part_id}))
                out.append(
                    {
                        "type": "tool-approval-request",
                        "approvalId": call["id"],
                        "toolCallId": part_id,
                    }
                )
        # no answer: `useChat` shows the failure, or the limit that stopped the run, as its
        # error; then the step and the message finish, as the AI SDK's `streamText` ends
        failure = end_error(event) if reason == "error" else stopped_short(event)
        if failure is not None:
            out.append({"type": "error", "errorText": failure})
        if self.step_open:
            self.step_open = False
            out.append({"type": "finish-step"})
        if failure is not None:
            finish_reason = "error" if reason == "error" else "length"
            out.append({"type": "finish", "finishReason": finish_reason})
            return out
        if reason == "aborted":
            out.append({"type": "abort"})
            return out
        finish = {
            "stop": "stop",
            "terminate": "stop",
            "awaiting_approval": "tool-calls",
            "guardrail": "content-filter",  # its answer is left out
        }.get(str(reason), "other")
        out.append({"type": "finish", "finishReason": finish})
        return out


def _nested_part_id(call_id: str) -> str:
    """The `toolCallId` of the part of a call held inside a sub-agent (`call_id`: its id in
    the session's approvals, the part's `approvalId`): sub-runs number their calls as the
    parent does (`call_0` in every reply), and a part under the parent call's id would be
    taken for that call's part, its input and result overwritten."""
    return f"sub/{call_id}"


def _input_available(call: dict[str, Any]) -> dict[str, Any]:
    """The `tool-input-available` chunk of a tool call (a `toolCall` block as a dict): its
    arguments whole, as the UI shows them."""
    return {
        "type": "tool-input-available",
        "toolCallId": call["id"],
        "toolName": call.get("name", ""),
        "input": call.get("arguments") or {},
    }


async def _handle(hub: RunHub, request: Request) -> Response:
    """`POST /api/chat`: the chat's UI messages read as a conversation of the session the
    chat `id` names, its run started, and the run streamed back as UI message chunks."""
    data = await read_json(request)
    chat_id = data.get("id")
    if not isinstance(chat_id, str) or not chat_id:
        raise BadRequest('"id" (the chat id) must be a non-empty string')
    conversation = conversation_of(data)
    run = await start_conversation(hub, chat_id, conversation)
    # answering approvals continues the client's last (assistant) message
    last = data["messages"][-1].get("id") if conversation.decisions else None
    decisions = conversation.decisions
    denied = [call_id for call_id, d in decisions.items() if not d.approved]
    earlier = [
        str(part["toolCallId"])
        for message in data["messages"]
        if isinstance(message, dict) and message.get("role") == "assistant"
        for part in message.get("parts") or []
        if isinstance(part, dict) and part.get("toolCallId")
    ]
    decided = [conversation.decided_paths.get(c, (c,)) for c in decisions]
    translator = Translator(
        run, str(last or f"msg-{run.id}"), decided=decided, denied=denied, earlier=earlier
    )

    async def stream() -> AsyncGenerator[bytes, None]:
        async for batch in run_batches(run):
            out = [sse_data(chunk) for event in batch for chunk in translator.feed(event)]
            if out:
                yield b"".join(out)
        yield sse_data("[DONE]")

    headers = {**HEADERS, "X-Session-Id": session_header(run.session_id), "X-Run-Id": run.id}
    return event_stream(run, stream(), headers)


def vercel_routes(hub: RunHub) -> list[Route]:
    """`POST /api/chat`."""

    async def endpoint(request: Request) -> Response:
        return await _handle(hub, request)

    return [Route("/api/chat", endpoint, methods=["POST"])]
