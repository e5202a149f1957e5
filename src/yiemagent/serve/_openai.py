"""`POST /v1/chat/completions` and `GET /v1/models`: the agent as an OpenAI chat model.

Any OpenAI client (streamed or not) talks to the agent as to a model: the request's messages
are a conversation (`_protocols`), the agent's tools run here, and the answer is the texts of
the run's assistant messages (then, for an agent with an output type that answered through its
output tool, the output as JSON). Each request is a run of a session: the one the
`X-Session-Id` header names (continued, and kept), else a one-off session seeded from the
request, as stateless as the API: it is removed from the store before the answer ends,
unless the run ended with tool calls held for approval (the answer names them and the
session; decide them through `/v1/sessions/{sid}/approvals`). Every answer names its
session in `X-Session-Id`. A field the agent cannot honour is a 400, not ignored: an `n`
other than 1 (a run is one answer), a `response_format` other than text (the agent's output
type sets the answer's shape), and a client's own `tools` or `functions` (the agent runs its
own tools and hands no call back; none, or `tool_choice` "none", is answered). A run that
failed answers
500 with `x-should-retry: false`, so the OpenAI and Anthropic SDKs do not run it again. A
client that disconnects before the answer's end (a cancelled stream, a timeout) aborts the
run (`_protocols`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Any
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from yiemagent.agent import user_message_from_openai
from yiemagent.serve._api import BadRequest, read_json, session_header
from yiemagent.serve._protocols import (
    Conversation,
    abort_on_disconnect,
    end_error,
    event_stream,
    final_texts,
    held_calls,
    message_text,
    output_text,
    run_batches,
    sse_data,
    start_conversation,
    stopped_short,
)
from yiemagent.serve._runs import Run, RunHub
from yiemagent.types import DocumentContent, ImageContent

__all__ = ["openai_routes"]

MODEL_ID = "yiem-agent"
"""The model id `GET /v1/models` lists; a request may name any model."""


def _conversation(data: dict[str, Any]) -> Conversation:
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest('"messages" must be a non-empty list of chat messages')
    conversation = Conversation()
    for message in messages:
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequest("each message must be an object with a role")
        role = message["role"]
        if role == "user":
            try:
                user = user_message_from_openai(message)
            except (TypeError, ValueError) as exc:
                raise BadRequest(f"a user message is not valid: {exc}") from exc
            content = user.content if isinstance(user.content, list) else []
            text = "".join(getattr(b, "text", "") for b in content)
            attached = [b for b in content if isinstance(b, ImageContent | DocumentContent)]
            conversation.add("user", text, attached)
        else:
            conversation.add(role, _text(message.get("content"), role))
    return conversation


def _refuse_client_tools(data: dict[str, Any]) -> None:
    """Refuse a request that offers the model the client's own tools: the agent never
    answers with `tool_calls` for the client to run, so a client waiting for them would
    wait for ever. No tools, or tools with `tool_choice` "none", ask for nothing.

    Raises:
        BadRequest: a non-empty `tools` or `functions` list that may be called.
    """
    if data.get("tool_choice") == "none" and not data.get("functions"):
        return
    for key in ("tools", "functions"):
        if data.get(key):
            raise BadRequest(
                f'"{key}" are not run here: the agent runs its own tools on the server and '
                f'returns no tool calls; send the request without "{key}" (the client\'s own tools '
                "run through /ag-ui)"
            )


def _text(content: Any, role: str) -> str:
    """The text of a message that is not the user's: a string, or the `text` of its parts
    (parts of other types, such as a refusal, are left out); no content is "".

    Raises:
        BadRequest: the content is neither, or a part's `text` is not a string.
    """
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise BadRequest(
            f"a {role} message's content must be a string or a list of parts, "
            f"not {type(content).__name__}"
        )
    texts = [p.get("text", "") for p in content if isinstance(p, dict)]
    if not all(isinstance(text, str) for text in texts):
        raise BadRequest(f'a {role} message\'s text part must hold a string "text"')
    return "".join(texts)


_SPENDING_ROLES = ("assistant", "toolResult")


def _usage(end: dict[str, Any]) -> dict[str, Any]:
    """The run's tokens: its model calls, the summaries written for them
    (`compaction_usage`) and its tool results (what sub-agents spent). The prompt is every
    input token, read from a cache, written to it or neither; of the completion, the
    tokens spent reasoning are `completion_tokens_details.reasoning_tokens`, as OpenAI
    says them."""
    prompt = completion = reasoning = 0
    for message in end.get("messages", []):
        if message.get("role") not in _SPENDING_ROLES:
            continue
        for usage in (message.get("usage"), message.get("compaction_usage")):
            if usage:
                prompt += sum(usage.get(key, 0) for key in ("input", "cache_read", "cache_write"))
                completion += usage.get("output", 0)
                reasoning += usage.get("reasoning", 0)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "completion_tokens_details": {"reasoning_tokens": reasoning},
    }


def _end_note(run: Run, end: dict[str, Any], session_url: str) -> str | None:
    """The text that ends the answer of a run that stopped without its answer: the calls
    held for approval, or the limit that stopped it (with finish reason "length", which
    alone does not say which limit: an OpenAI client has no other place for it in an
    answer that is no error, and the run's texts stay its content); None otherwise."""
    if end.get("reason") == "awaiting_approval":
        return _held_note(run, session_url)
    limit = stopped_short(end)
    return None if limit is None else f"The run stopped before its answer: {limit}."


def _held_note(run: Run, session_url: str) -> str:
    """Each held call with its arguments (what a person decides on) and its id, and where
    to decide them (`session_url`: the session's path, under the app's mount)."""
    calls = ", ".join(
        f"{c['name']}({json.dumps(c['arguments'], ensure_ascii=False)}) [{c['id']}]"
        for c in held_calls(run)
    )
    return (
        f"Tool calls await approval: {calls}. Decide them at "
        f"{session_url}/approvals, then POST {session_url}/resume."
    )


class _Completions:
    """The two OpenAI routes over the server's `RunHub`: `GET /v1/models` names the one
    model (`MODEL_ID`), `POST /v1/chat/completions` runs a request's conversation and
    answers as a chat completion, streamed as chunks or whole."""

    def __init__(self, hub: RunHub) -> None:
        self.hub = hub

    async def models(self, request: Request) -> Response:
        created = int(time.time())
        model = {"id": MODEL_ID, "object": "model", "created": created, "owned_by": "yiemagent"}
        return JSONResponse({"object": "list", "data": [model]})

    async def complete(self, request: Request) -> Response:
        data = await read_json(request)
        stream = data.get("stream")
        if stream is not None and not isinstance(stream, bool):  # "false" is truthy
            raise BadRequest(f'"stream" must be true or false, not {stream!r}')
        choices = data.get("n")
        if choices is not None and (type(choices) is not int or choices != 1):
            # a run is one answer: answering n=2 with one choice would fail the client's
            # choices[1] far from the cause (llama-cpp-python #1906)
            raise BadRequest(f'"n" must be 1: an agent run gives one answer, not {choices!r}')
        shape = data.get("response_format")
        kind = shape.get("type") if isinstance(shape, dict) else shape
        if shape is not None and kind != "text":
            # Ignoring it would hand a client that expects JSON prose, failing far from the
            # cause (webai-at-home #191): the shape of the answer is the agent's to set.
            raise BadRequest(
                f"response_format {kind!r} is not applied here: the agent answers in text; "
                "for JSON, give the agent an output type (output_schema in its agent file)"
            )
        _refuse_client_tools(data)
        conversation = _conversation(data)
        named = request.headers.get("x-session-id")
        session_id = named or f"chat-{uuid.uuid4().hex[:16]}"
        one_off = not named
        run = await start_conversation(self.hub, session_id, conversation, ephemeral=one_off)
        reply_id = f"chatcmpl-{run.id}"
        model = str(data.get("model") or MODEL_ID)
        headers = {"X-Session-Id": session_header(session_id), "X-Run-Id": run.id}
        root = request.scope.get("root_path", "")
        session_url = f"{root}/v1/sessions/{quote(session_id, safe='')}"
        if stream:
            options = data.get("stream_options") or {}
            usage = isinstance(options, dict) and bool(options.get("include_usage"))
            chunks = self._chunks(run, reply_id, model, session_url, usage, one_off)
            return event_stream(run, chunks, headers)
        end: dict[str, Any] = {}
        async with abort_on_disconnect(request, run):
            async for batch in run_batches(run):
                end = batch[-1]
        if one_off:
            await run.finished()  # its session is gone: a client may count on it
        return _completion(run, end, reply_id, model, session_url, headers)

    async def _chunks(
        self,
        run: Run,
        reply_id: str,
        model: str,
        session_url: str,
        with_usage: bool,
        one_off: bool,
    ) -> AsyncGenerator[bytes, None]:
        created = run.created_ms // 1000

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}
            return sse_data(
                {
                    "id": reply_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [choice],
                }
            )

        yield chunk({"role": "assistant", "content": ""})
        said = False  # some text was sent: a later message's text opens a new paragraph
        fresh = True  # no text yet in the current assistant message
        end: dict[str, Any] = {}
        async for batch in run_batches(run):
            out: list[bytes] = []
            for event in batch:
                kind = event.get("type")
                message = event.get("message") or {}
                if kind == "message_start" and message.get("role") == "assistant":
                    fresh = True
                elif kind in ("message_update", "message_end"):
                    inner = event.get("assistant_message_event") or {}
                    text = ""
                    if inner.get("type") == "text_delta":
                        text = inner.get("delta") or ""
                    elif kind == "message_end" and fresh and message.get("role") == "assistant":
                        text = message_text(message)  # not streamed (guardrails held it)
                    if text:
                        if fresh and said:
                            text = "\n\n" + text
                        fresh, said = False, True
                        out.append(chunk({"content": text}))
                elif kind == "agent_end":
                    end = event
            if out:
                yield b"".join(out)
        if one_off:
            await run.finished()  # its session is gone before the last chunk
        reason = end.get("reason")
        if reason == "error":
            error = {"message": end_error(end), "type": "server_error", "code": "run_failed"}
            yield sse_data({"error": error})
            return
        output = output_text(end)
        if output is not None:  # an output type's value, given through its tool
            yield chunk({"content": ("\n\n" if said else "") + output})
            said = True
        note = _end_note(run, end, session_url)
        if note:
            yield chunk({"content": ("\n\n" if said else "") + note})
        yield chunk({}, _finish_reason(reason))
        if with_usage:
            yield sse_data(
                {
                    "id": reply_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": _usage(end),
                }
            )
        yield sse_data("[DONE]")


def _completion(
    run: Run,
    end: dict[str, Any],
    reply_id: str,
    model: str,
    session_url: str,
    headers: dict[str, str],
) -> JSONResponse:
    """The answer to a request that did not stream, once `run` has ended with `end` (its
    `agent_end`): a `chat.completion` whose content is the run's texts (its output as JSON,
    a note on calls held for approval), or a 500 with OpenAI's error object when it failed
    (`x-should-retry: false`: the run, its tools too, has happened, and the SDKs retry a
    500 unless told not to)."""
    reason = end.get("reason")
    if reason == "error":
        error = {"message": end_error(end), "type": "server_error", "code": "run_failed"}
        return JSONResponse(
            {"error": error}, status_code=500, headers={**headers, "x-should-retry": "false"}
        )
    content = "\n\n".join(filter(None, [final_texts(end), output_text(end)]))
    content = "\n\n".join(filter(None, [content, _end_note(run, end, session_url)]))
    choice = {
        "index": 0,
        "message": {"role": "assistant", "content": content},
        "finish_reason": _finish_reason(reason),
        "logprobs": None,
    }
    body = {
        "id": reply_id,
        "object": "chat.completion",
        "created": run.created_ms // 1000,
        "model": model,
        "choices": [choice],
        "usage": _usage(end),
    }
    return JSONResponse(body, headers=headers)


def _finish_reason(reason: Any) -> str:
    """The `finish_reason` of a run that ended for `reason`: "length" at a limit,
    "content_filter" when a guardrail stopped it (its answer is left out, so an empty
    content is not taken for the agent's answer), "tool_calls" when it waits on tool calls
    held for approval (OpenAI's word for a reply that ended calling tools: the content is
    the note naming them, not an answer, and the server runs them, so the message has no
    `tool_calls` for the client to run), else "stop"."""
    if reason in ("max_turns", "usage_limit"):
        return "length"
    if reason == "awaiting_approval":
        return "tool_calls"
    return "content_filter" if reason == "guardrail" else "stop"


def openai_routes(hub: RunHub) -> list[Route]:
    """`POST /v1/chat/completions` and `GET /v1/models`."""
    completions = _Completions(hub)
    return [
        Route("/v1/chat/completions", completions.complete, methods=["POST"]),
        Route("/v1/models", completions.models),
    ]
