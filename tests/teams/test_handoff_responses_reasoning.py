"""A handoff between agents on the OpenAI Responses API (DESIGN §17, §21): the reasoning item
the first model wrote before its transfer call goes to the target's model followed by that
call, or is left out with the call when the handoff turns are filtered out; never alone,
which the API refuses ("reasoning was provided without its required following item").
Replay server on 127.0.0.1, the official `openai` SDK."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from tests.ai.test_openai_responses import REASONING_ITEM, an_answer, gpt
from yiemagent import Agent, Handoff
from yiemagent.agent import remove_handoff_turns

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds under load


def a_transfer_after_reasoning() -> list[str]:
    """A reasoning item, then the call `transfer_to_target` with its arguments whole."""
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_hand",
        "name": "transfer_to_target",
        "arguments": '{"reason": "Oslo"}',
        "status": "completed",
    }
    return responses_sse(
        {"type": "response.output_item.added", "output_index": 0, "item": REASONING_ITEM},
        {"type": "response.output_item.done", "output_index": 0, "item": REASONING_ITEM},
        {"type": "response.output_item.added", "output_index": 1, "item": call},
        {"type": "response.output_item.done", "output_index": 1, "item": call},
        responses_done(),
    )


def kinds(body: Any) -> list[str]:
    return [item.get("type") or item["role"] for item in body["input"]]


@pytest.mark.parametrize("filtered", [False, True], ids=["whole", "handoff-turns-removed"])
async def test_reasoning_before_a_transfer_never_reaches_the_target_alone(
    filtered: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    with ReplayServer() as server:
        server.replies.put(sse_reply(a_transfer_after_reasoning()))
        server.replies.put(sse_reply(an_answer()))
        server.replies.put(sse_reply(an_answer("You are welcome.")))
        model = gpt(server)
        target = Agent("You are target.", model, name="target")
        handoff = Handoff(target, input_filter=remove_handoff_turns if filtered else None)
        entry = Agent("You are entry.", model, name="entry", handoffs=[handoff])

        reply = await entry.prompt("Time in Oslo?")
        again = await entry.prompt("Thanks!")

    assert (reply.text, reply.agent) == ("It is noon in Oslo.", "target")
    assert again.text == "You are welcome."
    first, second = (request.body for request in server.requests[1:])
    if filtered:
        assert kinds(first) == ["user"]
    else:
        assert kinds(first) == ["user", "reasoning", "function_call", "function_call_output"]
        assert first["input"][2]["call_id"] == first["input"][3]["call_id"] == "call_hand"
    for body in (first, second):
        order = kinds(body)
        for at, kind in enumerate(order):
            if kind == "reasoning":
                assert order[at + 1] in ("function_call", "message", "assistant"), order
