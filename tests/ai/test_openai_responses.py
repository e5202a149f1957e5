"""The `openai-responses` provider (DESIGN §21) through the official `openai` SDK against a
replay server on 127.0.0.1 that records each request: streamed text and function calls,
reasoning items kept and sent back exactly as received with `store=False`, usage and cost,
stop reasons and failures."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent import Agent, tool
from yiemagent.ai import Context, StreamOptions, complete, get_model, stream
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
REASONING_ITEM = {
    "type": "reasoning",
    "id": "rs_0a1b2c",
    "summary": [{"type": "summary_text", "text": "The user wants Oslo's time."}],
    "encrypted_content": "gAAAAABo-opaque-ENCRYPTED==",
}


def gpt(server: ReplayServer, name: str = "gpt-5-mini") -> Model:
    return get_model(f"openai-responses/{name}", base_url=server.url + "/v1")


def a_call_with_reasoning() -> list[str]:
    """Turn 1: a reasoning item (summary streamed), then a function call streamed in
    argument fragments; usage with cached input."""
    call_item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_oslo",
        "name": "get_time",
        "arguments": "",
        "status": "in_progress",
    }
    started = {**REASONING_ITEM, "summary": []}
    return responses_sse(
        {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
        {"type": "response.output_item.added", "output_index": 0, "item": started},
        {"type": "response.reasoning_summary_part.added", "item_id": "rs_0a1b2c"},
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_0a1b2c",
            "delta": "The user wants ",
        },
        {
            "type": "response.reasoning_summary_text.delta",
            "item_id": "rs_0a1b2c",
            "delta": "Oslo's time.",
        },
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING_ITEM},
        {"type": "response.output_item.added", "output_index": 1, "item": call_item},
        {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": '{"pla'},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "delta": 'ce": "Oslo"}',
        },
        {
            "type": "response.output_item.done",
            "output_index": 1,
            "item": {**call_item, "arguments": '{"place": "Oslo"}', "status": "completed"},
        },
        responses_done(input_tokens=1000, cached=600, output_tokens=50),
    )


def an_answer(text: str = "It is noon in Oslo.") -> list[str]:
    return responses_sse(
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []},
        },
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": text[:6]},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": text[6:]},
        responses_done(),
    )


async def test_function_call_reasoning_usage_and_cost(server: ReplayServer) -> None:
    server.replies.put(sse_reply(a_call_with_reasoning()))
    model = gpt(server)
    assert model.cost.cache_read > 0  # priced from the openai catalogue entry
    events = stream(
        model,
        Context("Be brief.", [UserMessage("Time in Oslo?")], [GET_TIME]),
        StreamOptions(api_key=KEY, reasoning="low"),
    )
    kinds = [event.type async for event in events]
    message = await events.result()
    assert message.stop_reason == "toolUse", message.error_message
    thinking, call = message.content
    assert (
        isinstance(thinking, ThinkingContent) and thinking.thinking == "The user wants Oslo's time."
    )
    assert json.loads(thinking.signature or "") == REASONING_ITEM  # the item, as received
    assert (
        isinstance(call, ToolCall)
        and call.id == "call_oslo"
        and call.arguments == {"place": "Oslo"}
    )
    assert kinds.count("toolcall_delta") == 2 and kinds[-1] == "done"
    usage = message.usage
    assert (usage.input, usage.cache_read, usage.output) == (400, 600, 50)
    cost = usage.cost
    assert cost.cache_read == pytest.approx(600 * model.cost.cache_read / 1e6)
    assert cost.total == pytest.approx(cost.input + cost.output + cost.cache_read)

    body = server.requests[0].body
    assert server.requests[0].path == "/v1/responses"
    assert body["store"] is False and body["include"] == ["reasoning.encrypted_content"]
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert body["instructions"] == "Be brief."
    assert body["tools"][0]["type"] == "function" and body["tools"][0]["name"] == "get_time"
    assert body["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Time in Oslo?"}]}
    ]


@tool
def get_time(place: str) -> str:
    """The current time in a place.

    Args:
        place: A city.
    """
    return f"12:00 in {place}"


GET_TIME = get_time


async def test_reasoning_items_go_back_exactly_with_store_false(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai-agents #2265: with store=False a reasoning item must come back with its
    encrypted content, or the API answers 404 for an item it never stored. Through an
    Agent: the call runs, and the next request holds the item as received, then the call,
    then its output."""
    server.replies.put(sse_reply(a_call_with_reasoning()))
    server.replies.put(sse_reply(an_answer()))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    agent = Agent(model=gpt(server), tools=[get_time])
    answer = await agent.prompt("Time in Oslo?")
    assert answer.text == "It is noon in Oslo."
    second = server.requests[1].body
    assert second["store"] is False
    _, reasoning, call, output = second["input"]
    assert reasoning == REASONING_ITEM
    assert call == {
        "type": "function_call",
        "call_id": "call_oslo",
        "name": "get_time",
        "arguments": '{"place": "Oslo"}',
    }
    assert output == {
        "type": "function_call_output",
        "call_id": "call_oslo",
        "output": "12:00 in Oslo",
    }


async def test_another_models_reasoning_is_not_sent(server: ReplayServer) -> None:
    server.replies.put(sse_reply(a_call_with_reasoning()))
    first = await complete(
        gpt(server), Context("", [UserMessage("Oslo?")], [GET_TIME]), StreamOptions(api_key=KEY)
    )
    server.replies.put(sse_reply(an_answer()))
    history: list[Message] = [
        UserMessage("Oslo?"),
        first,
        ToolResultMessage("call_oslo", "get_time", [TextContent("12:00")]),
    ]
    await complete(
        gpt(server, "gpt-5"), Context("", history, [GET_TIME]), StreamOptions(api_key=KEY)
    )
    items = server.requests[1].body["input"]
    # transform_messages turns another model's thinking into text: no reasoning item
    assert [item.get("type") for item in items] == [
        None,
        None,
        "function_call",
        "function_call_output",
    ]
    assert items[1] == {"role": "assistant", "content": "The user wants Oslo's time."}


async def test_reasoning_with_no_output_after_it_is_not_sent_back(server: ReplayServer) -> None:
    """openai/openai-agents-js#326 and #929: a reasoning item must be followed by the output
    it led to. A turn cut off while reasoning (max_output_tokens) or ending in blank text
    left one alone, and every later request was refused: "Item 'rs_...' of type
    'reasoning' was provided without its required following item"."""
    from yiemagent.ai.providers.openai_responses import build_request_body
    from yiemagent.types.messages import AssistantMessage

    model = gpt(server)
    seen = {"api": model.api, "provider": model.provider, "model": model.id}

    def thought(n: int) -> ThinkingContent:
        return ThinkingContent("", signature=json.dumps({**REASONING_ITEM, "id": f"rs_{n}"}))

    history: list[Message] = [
        UserMessage("q"),
        AssistantMessage([thought(1)], stop_reason="length", **seen),
        UserMessage("go on"),
        AssistantMessage([thought(2), TextContent(" \n")], **seen),
        UserMessage("and?"),
        AssistantMessage([thought(3), TextContent("Yes.")], **seen),
        UserMessage("thanks"),
    ]
    body = build_request_body(model, Context("", history), StreamOptions())
    kinds = [item.get("type") or item["role"] for item in body["input"]]
    assert kinds == ["user", "user", "user", "reasoning", "assistant", "user"]
    assert body["input"][3]["id"] == "rs_3"


@pytest.mark.parametrize(
    ("status", "reason", "stop_reason"),
    [
        ("incomplete", "max_output_tokens", "length"),
        ("incomplete", "content_filter", "error"),
        ("incomplete", "steered", "stop"),
        ("incomplete", "max_messages", "stop"),
        ("incomplete", None, "length"),
        ("failed", None, "error"),
    ],
)
async def test_incomplete_and_failed_responses(
    server: ReplayServer, status: str, reason: str | None, stop_reason: str
) -> None:
    done = responses_done(status)
    if reason:
        done["response"]["incomplete_details"] = {"reason": reason}
    if status == "failed":
        done["response"]["error"] = {"code": "server_error", "message": "boom"}
    server.replies.put(
        sse_reply(
            responses_sse(
                {"type": "response.output_text.delta", "item_id": "m", "delta": "par"}, done
            )
        )
    )
    message = await complete(
        gpt(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    assert message.stop_reason == stop_reason
    if status == "failed":
        assert message.error_message == "server_error: boom"


@pytest.mark.parametrize(
    ("reason", "stop_reason"),
    [("steered", "toolUse"), ("max_messages", "toolUse"), ("max_output_tokens", "length")],
)
async def test_an_incomplete_response_runs_its_whole_calls_unless_cut_by_tokens(
    server: ReplayServer, reason: str, stop_reason: str
) -> None:
    """Every incomplete response was read as "length", so its calls were answered as cut
    off. One steered (stopped at a safe output boundary after `response.steer`) or stopped
    at the API's limit on messages ends on whole items: its calls run. Only
    max_output_tokens can cut a call's arguments."""
    done = responses_done("incomplete")
    done["response"]["incomplete_details"] = {"reason": reason}
    server.replies.put(sse_reply([*a_call_with_reasoning()[:-1], *responses_sse(done)]))
    message = await complete(
        gpt(server), Context("", [UserMessage("Oslo?")], [GET_TIME]), StreamOptions(api_key=KEY)
    )
    assert message.stop_reason == stop_reason
    assert [call.arguments for call in message.tool_calls] == [{"place": "Oslo"}]


def _failed(code: str) -> dict[str, Any]:
    done = responses_done("failed")
    done["response"]["error"] = {"code": code, "message": "An error occurred, retry"}
    return done


async def test_a_transient_failure_before_any_output_is_retried(server: ReplayServer) -> None:
    """`response.failed` with `server_error` (the API's 500 inside a 200 stream) before
    anything was streamed was the call's end; it is retried like a 500, and a request
    error is not."""
    created = {"type": "response.created", "response": {"id": "resp_0", "status": "in_progress"}}
    server.replies.put(sse_reply(responses_sse(created, _failed("server_error"))))
    server.replies.put(sse_reply(an_answer("Retried fine.")))
    message = await complete(
        gpt(server),
        Context("", [UserMessage("hi")]),
        StreamOptions(api_key=KEY, max_retry_delay_ms=50),
    )
    assert message.stop_reason == "stop" and message.text == "Retried fine."
    assert len(server.requests) == 2

    server.replies.put(sse_reply(responses_sse(created, _failed("invalid_prompt"))))
    message = await complete(
        gpt(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    assert message.stop_reason == "error" and message.error_message == (
        "invalid_prompt: An error occurred, retry"
    )
    assert len(server.requests) == 3


async def test_a_transient_failure_that_lasts_names_its_status_for_fallback(
    server: ReplayServer,
) -> None:
    for _ in range(4):
        server.replies.put(sse_reply(responses_sse(_failed("server_error"))))
    events = stream(
        gpt(server),
        Context("", [UserMessage("hi")]),
        StreamOptions(api_key=KEY, max_retry_delay_ms=20),
    )
    kinds = [event async for event in events]
    message = await events.result()
    assert message.stop_reason == "error"
    assert (message.error_message or "").startswith("server_error: An error occurred, retry")
    assert kinds[-1].type == "error" and kinds[-1].error_type == "500"  # type: ignore[union-attr]


async def test_http_400_is_one_clear_error_and_the_key_is_scrubbed(server: ReplayServer) -> None:
    server.replies.put(
        json_reply(
            400, {"error": {"message": f"bad input for key {KEY}", "type": "invalid_request_error"}}
        )
    )
    message = await complete(
        gpt(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    assert message.stop_reason == "error"
    assert "400" in (message.error_message or "") and KEY not in (message.error_message or "")


async def test_no_key_for_openai_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    message = await complete(
        get_model("openai-responses/gpt-4o-mini"), Context("", [UserMessage("hi")])
    )
    assert message.stop_reason == "error" and "OPENAI_API_KEY" in (message.error_message or "")


async def test_a_reasoning_item_without_its_encrypted_content_is_not_sent_back(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """vercel/ai #7543 (and opencode #7724): "Item with id 'rs_...' not found. Items are not
    persisted when `store` is set to false": a reasoning item went back by its id alone,
    without the encrypted content that stands in for it. Here a model not marked as a
    reasoning one (its encrypted content not asked for) that reasoned all the same had its
    item sent back so on the next turn, and every later request was refused."""
    bare = {k: v for k, v in REASONING_ITEM.items() if k != "encrypted_content"}
    events = [
        e.replace(json.dumps(REASONING_ITEM), json.dumps(bare)) for e in a_call_with_reasoning()
    ]
    server.replies.put(sse_reply(events))
    server.replies.put(sse_reply(an_answer()))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = dataclasses.replace(gpt(server), reasoning=False)
    agent = Agent(model=model, tools=[get_time])
    assert (await agent.prompt("Time in Oslo?")).text == "It is noon in Oslo."
    assert "include" not in server.requests[0].body
    kinds = [item.get("type", "message") for item in server.requests[1].body["input"]]
    assert kinds == ["message", "function_call", "function_call_output"]


@pytest.mark.parametrize(
    "messages",
    [
        [UserMessage([])],
        [UserMessage("")],
        [UserMessage("   \n\t  ")],
        [UserMessage("Hello"), AssistantMessage([]), UserMessage("Please respond")],
    ],
    ids=["no-content", "empty-text", "whitespace", "empty-assistant-turn"],
)
async def test_empty_messages_go_as_items_the_api_takes(
    server: ReplayServer, messages: list[Message]
) -> None:
    """pi-mono's empty.test.ts: a user message with no content blocks, an empty or blank
    text, an assistant turn that wrote nothing. The API refuses an item whose `content` is
    an empty list ("expected an array with minimum length 1"), so every item sent has
    content, and the model answers."""
    server.enqueue(sse_reply(an_answer("Hi.")))
    message = await complete(gpt(server), Context("", messages), StreamOptions(api_key=KEY))
    assert message.stop_reason == "stop", message.error_message
    items = server.requests[0].body["input"]
    assert [item.get("role") for item in items] == ["user"] * (1 + (len(messages) > 1))
    assert all(item["content"] for item in items)


async def test_input_tokens_written_to_the_cache_are_cache_writes(server: ReplayServer) -> None:
    """mindroom-ai/mindroom#2134: the Responses API's `input_tokens_details.cache_write_tokens`
    are cache writes, not input, as on Chat Completions."""
    done = responses_done(input_tokens=100, output_tokens=5, cached=80)
    done["response"]["usage"]["input_tokens_details"]["cache_write_tokens"] = 15
    server.replies.put(sse_reply(responses_sse(done)))
    message = await complete(
        gpt(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    u = message.usage
    assert (u.input, u.cache_read, u.cache_write, u.output, u.total_tokens) == (5, 80, 15, 5, 105)


def message_item(text: str, status: str = "completed") -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}] if text else []
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": status,
            "content": content}  # fmt: skip


def text_done(text: str) -> dict[str, Any]:
    return {"type": "response.output_text.done", "item_id": "msg_1", "output_index": 0,
            "content_index": 0, "text": text}  # fmt: skip


def item_event(kind: str, item: dict[str, Any]) -> dict[str, Any]:
    return {"type": f"response.output_item.{kind}", "output_index": 0, "item": item}


WHOLE = "The whole answer."
SHAPES = {
    # Sophomoresty/gemini-web2api #57: created, output_text.done, completed; no deltas
    "text_done_only": [text_done(WHOLE)],
    # the text only in the finished item (lidge-jun/opencodex #4652: done-only arguments)
    "item_done_only": [
        item_event("added", message_item("", "in_progress")),
        item_event("done", message_item(WHOLE)),
    ],
    # OpenAI's own: deltas, then the done events repeat the text, which is not taken twice
    "deltas_then_done": [
        item_event("added", message_item("", "in_progress")),
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": WHOLE[:9]},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": WHOLE[9:]},
        text_done(WHOLE),
        item_event("done", message_item(WHOLE)),
    ],
}


@pytest.mark.parametrize("shape", SHAPES)
async def test_text_sent_whole_in_a_done_event_is_the_answer_once(
    server: ReplayServer, shape: str
) -> None:
    """A Responses server that streams no text deltas (a compatible proxy) gave an empty
    answer with stop reason "stop": the text came only in `response.output_text.done` or
    in the finished message item, which were ignored. The text is taken from there when no
    delta brought it, and never twice."""
    server.replies.put(sse_reply(responses_sse(*SHAPES[shape], responses_done())))
    message = await complete(
        gpt(server), Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    assert message.stop_reason == "stop", message.error_message
    assert message.text == WHOLE


async def test_arguments_sent_only_in_their_done_event_are_the_calls(
    server: ReplayServer,
) -> None:
    """lidge-jun/opencodex #4652 (done-only Responses tool arguments): a server that sends
    a call's arguments only in `response.function_call_arguments.done` (no deltas, no
    finished item) gave the call `{}`, so the tool ran without its arguments."""
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_oslo", "name": "get_time",
            "arguments": "", "status": "in_progress"}  # fmt: skip
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_1",
            "output_index": 0, "arguments": '{"place": "Oslo"}'}  # fmt: skip
    server.replies.put(sse_reply(responses_sse(item_event("added", call), done, responses_done())))
    message = await complete(
        gpt(server), Context("", [UserMessage("time?")], [GET_TIME]), StreamOptions(api_key=KEY)
    )
    assert message.stop_reason == "toolUse", message.error_message
    assert [(c.id, c.arguments) for c in message.tool_calls] == [("call_oslo", {"place": "Oslo"})]
