"""`FallbackModel` when the provider's trouble arrives inside a streamed answer (DESIGN §13):
an HTTP 200 whose stream carries the server's `error` event before any content. An
overload or a server error said so falls through to the next model after the provider's
own retries, as the same failure sent as an HTTP status does; a request error said so
(`invalid_request_error`) does not, since the next model would get the same request.
Real local servers on 127.0.0.1, the official SDKs reading them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.ai.servers import ReplayServer, load_sse, openai_chunks, sse_reply
from yiemagent.ai import FallbackEvent, FallbackModel, stream
from yiemagent.types import UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)  # the first call imports an SDK: seconds under load

ATTEMPTS = 4
"""The provider's attempts per call (`_retry.DEFAULT_MAX_ATTEMPTS`): each gets the error."""


def anthropic_error(kind: str) -> list[str]:
    """An Anthropic stream that opens the message, then sends an `error` event of `kind`."""
    start = next(iter(load_sse("anthropic_overloaded_midstream.sse")))
    error = {"type": "error", "error": {"type": kind, "message": f"said {kind}"}}
    return [start, "event: error\ndata: " + json.dumps(error)]


def openai_error(error: dict[str, object]) -> list[str]:
    """An OpenAI-compatible stream (OpenRouter's way) whose first event is an error object."""
    return ["data: " + json.dumps({"error": error}), "data: [DONE]"]


def first_model(api: str, url: str) -> Model:
    if api == "anthropic":
        return Model(
            id="claude-test-1", provider="anthropic", api="anthropic-messages", base_url=url
        )
    return Model(id="a", provider="vllm", api="openai-completions", base_url=url + "/v1")


@pytest.fixture
def first() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


@pytest.fixture
def second() -> Iterator[ReplayServer]:
    with ReplayServer() as replay:
        yield replay


async def ask(first_url: str, api: str, second_url: str) -> tuple[list[object], object]:
    second_model = Model(id="b", provider="vllm", api="openai-completions", base_url=second_url)
    fallback = FallbackModel([first_model(api, first_url), second_model])
    response = stream(
        fallback,
        Context("", [UserMessage("hi")]),
        StreamOptions(api_key="k", max_retry_delay_ms=1),
    )
    events = [event async for event in response]
    return events, await response.result()


@pytest.mark.parametrize(
    ("api", "events", "said"),
    [
        ("anthropic", anthropic_error("overloaded_error"), "overloaded_error"),
        ("anthropic", anthropic_error("api_error"), "api_error"),
        ("openai", openai_error({"message": "upstream overloaded", "code": 502}), "overloaded"),
        ("openai", openai_error({"message": "busy", "type": "server_error"}), "busy"),
    ],
    ids=["anthropic-overloaded", "anthropic-api-error", "openai-code-502", "openai-server-error"],
)
async def test_a_server_failure_in_the_stream_falls_through_after_the_retries(
    first: ReplayServer, second: ReplayServer, api: str, events: list[str], said: str
) -> None:
    first.enqueue(*[sse_reply(events) for _ in range(ATTEMPTS)])
    second.enqueue(sse_reply(openai_chunks({"content": "from b"})))
    seen, message = await ask(first.url, api, second.url + "/v1")
    assert message.stop_reason == "stop", message.error_message  # type: ignore[attr-defined]
    assert message.text == "from b"  # type: ignore[attr-defined]
    assert len(first.requests) == ATTEMPTS
    [moved] = [e for e in seen if isinstance(e, FallbackEvent)]
    assert said in moved.error_message


@pytest.mark.parametrize(
    ("api", "events"),
    [
        ("anthropic", anthropic_error("invalid_request_error")),
        (
            "openai",
            openai_error(
                {"message": "said invalid_request_error", "type": "invalid_request_error"}
            ),
        ),
    ],
    ids=["anthropic", "openai"],
)
async def test_a_request_error_in_the_stream_does_not_fall_through(
    first: ReplayServer, second: ReplayServer, api: str, events: list[str]
) -> None:
    first.enqueue(sse_reply(events))
    _, message = await ask(first.url, api, second.url + "/v1")
    assert message.stop_reason == "error"  # type: ignore[attr-defined]
    assert "invalid_request_error" in (message.error_message or "")  # type: ignore[attr-defined]
    assert len(first.requests) == 1 and second.requests == []
