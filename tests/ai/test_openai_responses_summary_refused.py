"""An organization OpenAI has not verified may not have reasoning summaries: the Responses
API answers 400 `unsupported_value` for `reasoning.summary` ("Your organization must be
verified to generate reasoning summaries"). The call is sent once more without the summary
(the model still reasons, out of sight), the refusal is remembered for that server and
model, and the user reads one warning line. Any other 400 stays the request's error.

The server is `ReplayServer` on 127.0.0.1: it answers the scripted 400, then a stream."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, json_reply, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent import Agent, AgentRunError, Model

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")


VERIFY = (
    "Your organization must be verified to generate reasoning summaries. Please go to: "
    "https://platform.openai.com/settings/organization/general and click on Verify "
    "Organization. If you just verified, it can take up to 15 minutes for access to propagate."
)


def refused(param: str = "reasoning.summary", message: str = VERIFY) -> Any:
    error = {"message": message, "type": "invalid_request_error", "param": param,
             "code": "unsupported_value"}  # fmt: skip
    return json_reply(400, {"error": error})


def answer(text: str) -> Any:
    item = {"type": "message", "id": "msg_1", "role": "assistant", "status": "in_progress",
            "content": []}  # fmt: skip
    return sse_reply(
        responses_sse(
            {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": text,
            },
            responses_done(),
        )
    )


def agent(server: ReplayServer, id: str = "o4-mini") -> Agent[Any]:
    model = Model(id=id, provider="openai", api="openai-responses", base_url=server.url + "/v1",
                  reasoning=True)  # fmt: skip
    return Agent(model=model, reasoning="high")


def summaries(server: ReplayServer) -> list[object]:
    return [r.body.get("reasoning", {}).get("summary") for r in server.requests]


async def test_a_refused_summary_is_asked_once_more_without_it(
    server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.enqueue(refused())
    server.enqueue(answer("Thought it through."))
    server.enqueue(answer("Again."))
    chat = agent(server)
    with caplog.at_level(logging.WARNING, logger="yiemagent"):
        reply = await chat.prompt("think")
        assert reply.stop_reason == "stop", reply.error_message
        assert reply.text == "Thought it through."
        assert summaries(server) == ["auto", None]
        assert [r.body["reasoning"]["effort"] for r in server.requests] == ["high", "high"]
        # remembered for the model: the next call goes without it at once, no second warning
        again = await chat.prompt("and again")
        assert again.text == "Again."
        assert summaries(server) == ["auto", None, None]
    lines = [r.getMessage() for r in caplog.records if "summar" in r.getMessage()]
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "o4-mini" in lines[0] and "verified" in lines[0]


async def test_another_model_on_the_server_still_asks_for_a_summary(
    server: ReplayServer,
) -> None:
    server.enqueue(refused())
    server.enqueue(answer("one"))
    server.enqueue(answer("two"))
    await agent(server, "o3-pro-like").prompt("think")
    await agent(server, "gpt-5-like").prompt("think")
    assert summaries(server) == ["auto", None, "auto"]


async def test_another_400_is_the_request_error(server: ReplayServer) -> None:
    server.enqueue(refused(param="reasoning.effort", message="Unsupported value: 'high'"))
    server.enqueue(answer("never sent"))
    with pytest.raises(AgentRunError, match="Unsupported value"):
        await agent(server, "o1-like").prompt("think")
    assert summaries(server) == ["auto"]


async def test_a_second_refusal_is_not_asked_again(server: ReplayServer) -> None:
    """The retry goes once: a server that refuses the request without the summary too
    ends the call with its error."""
    server.enqueue(refused())
    server.enqueue(refused(message="still refused"))
    with pytest.raises(AgentRunError, match="still refused"):
        await agent(server, "o3-like").prompt("think")
    assert summaries(server) == ["auto", None]
