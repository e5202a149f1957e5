"""`openai-responses/<model>` at its edges (DESIGN §21), through the official `openai` SDK
against a replay server on 127.0.0.1: a refusal item is the answer's text, once; a
reasoning summary streamed in several parts is one thinking block, its parts apart, and
the item goes back exactly; a response cut off by `max_output_tokens` inside a function
call stops with "length" and the half call never runs."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from tests.ai.test_openai_responses import an_answer
from yiemagent import Agent, tool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.types.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolResultMessage,
    UserMessage,
)

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
REFUSAL = "I'm sorry, but I can't help with that."


def gpt(server: ReplayServer) -> Any:
    return get_model("openai-responses/gpt-5-mini", base_url=server.url + "/v1")


async def test_a_refusal_is_the_answers_text_once(server: ReplayServer) -> None:
    message_item = {"type": "message", "id": "msg_r", "role": "assistant", "content": []}
    part = {"type": "refusal", "refusal": REFUSAL}
    server.enqueue(
        sse_reply(
            responses_sse(
                {"type": "response.output_item.added", "output_index": 0, "item": message_item},
                {
                    "type": "response.content_part.added",
                    "item_id": "msg_r",
                    "output_index": 0,
                    "content_index": 0,
                    "part": {"type": "refusal", "refusal": ""},
                },
                *[
                    {
                        "type": "response.refusal.delta",
                        "item_id": "msg_r",
                        "output_index": 0,
                        "content_index": 0,
                        "delta": REFUSAL[i : i + 9],
                    }
                    for i in range(0, len(REFUSAL), 9)
                ],
                {
                    "type": "response.refusal.done",
                    "item_id": "msg_r",
                    "output_index": 0,
                    "content_index": 0,
                    "refusal": REFUSAL,
                },
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {**message_item, "content": [part], "status": "completed"},
                },
                responses_done(),
            )
        )
    )
    events = stream(gpt(server), Context("", [UserMessage("help me")]), StreamOptions(api_key=KEY))
    deltas = [e.delta for e in [e async for e in events] if e.type == "text_delta"]
    message = await events.result()
    assert "".join(deltas) == REFUSAL
    assert message.content == [TextContent(REFUSAL)]
    assert message.stop_reason == "stop"


async def test_a_summary_in_two_parts_is_one_thinking_block_sent_back_exactly(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    parts = ["First, the city.", "Then, its time zone."]
    item = {
        "type": "reasoning",
        "id": "rs_2p",
        "summary": [{"type": "summary_text", "text": text} for text in parts],
        "encrypted_content": "gAAAAAB-two-parts==",
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_time",
        "arguments": '{"place": "Oslo"}',
        "status": "completed",
    }
    summary_events: list[dict[str, Any]] = []
    for index, text in enumerate(parts):
        summary_events += [
            {
                "type": "response.reasoning_summary_part.added",
                "item_id": "rs_2p",
                "output_index": 0,
                "summary_index": index,
                "part": {"type": "summary_text", "text": ""},
            },
            {
                "type": "response.reasoning_summary_text.delta",
                "item_id": "rs_2p",
                "output_index": 0,
                "summary_index": index,
                "delta": text,
            },
        ]
    server.enqueue(
        sse_reply(
            responses_sse(
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {**item, "summary": []},
                },
                *summary_events,
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {"type": "response.output_item.added", "output_index": 1, "item": call},
                {"type": "response.output_item.done", "output_index": 1, "item": call},
                responses_done(),
            )
        ),
        sse_reply(an_answer()),
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    @tool
    def get_time(place: str) -> str:
        """The time in a place."""
        return f"12:00 in {place}"

    agent = Agent(model=gpt(server), tools=[get_time])
    thinking: list[str] = []
    agent.subscribe(
        lambda event, *_: (
            thinking.append(event.assistant_message_event.delta)
            if event.type == "message_update"
            and event.assistant_message_event.type == "thinking_delta"
            else None
        )
    )
    await agent.prompt("Time in Oslo?")
    first = agent.state.messages[1]
    assert isinstance(first, AssistantMessage)
    [block] = [b for b in first.content if isinstance(b, ThinkingContent)]
    assert block.thinking == "First, the city.\n\nThen, its time zone."
    assert "".join(thinking) == block.thinking  # streamed as it came, parts apart
    sent = server.requests[1].body["input"]
    assert [i for i in sent if i.get("type") == "reasoning"] == [item]


async def test_cut_off_inside_a_function_call_is_length_and_the_call_never_runs(
    server: ReplayServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_cut",
        "name": "delete_file",
        "arguments": "",
        "status": "in_progress",
    }
    incomplete = responses_done("incomplete")
    incomplete["response"]["incomplete_details"] = {"reason": "max_output_tokens"}
    server.enqueue(
        sse_reply(
            responses_sse(
                {"type": "response.output_item.added", "output_index": 0, "item": call},
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": '{"path": "/tmp/important',
                },
                incomplete,
            )
        ),
        sse_reply(an_answer("I ran out of room; ask again.")),
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    deleted: list[str] = []

    @tool
    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return "deleted"

    agent = Agent(model=gpt(server), tools=[delete_file])
    answer = await agent.prompt("Delete /tmp/important-files")
    assert answer.text == "I ran out of room; ask again."
    assert deleted == []
    cut = agent.state.messages[1]
    assert isinstance(cut, AssistantMessage) and cut.stop_reason == "length"
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error and "output token limit" in str(result.content)
    [output] = [
        i for i in server.requests[1].body["input"] if i.get("type") == "function_call_output"
    ]
    assert output["call_id"] == "call_cut" and "not executed" in str(output["output"])


@pytest.mark.parametrize(
    ("name", "reasons"),
    [
        ("gpt-5.1", True),  # newer than the catalogue: a reasoning family by its name
        ("gpt-5.1-codex", True),
        ("o3-pro", True),
        ("gpt-5-chat-latest", False),  # GPT-5's chat model does not reason
        ("gpt-4.5-preview", False),
    ],
)
async def test_a_model_the_catalogue_lacks_is_a_reasoning_model_by_its_family(
    server: ReplayServer, name: str, reasons: bool
) -> None:
    """`openai-responses/<id>` takes any id, as new models come out before the catalogue
    knows them: one of a reasoning family asks for its reasoning items' encrypted content
    (with `store=False`, the only way to send them back) and gets no temperature, which such
    models refuse; any other keeps its temperature and asks for none."""
    server.enqueue(sse_reply(an_answer()))
    model = get_model(f"openai-responses/{name}", base_url=server.url + "/v1")
    assert model.reasoning is reasons
    options = StreamOptions(api_key=KEY, temperature=0.5)
    message = await stream(model, Context("", [UserMessage("hi")]), options).result()
    assert message.stop_reason == "stop", message.error_message
    body = server.requests[0].body
    assert ("reasoning.encrypted_content" in body.get("include", [])) is reasons
    assert ("temperature" in body) is not reasons
