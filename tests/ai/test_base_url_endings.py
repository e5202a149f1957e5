"""A base URL given with the path the SDK appends itself (DESIGN §7, §8): Anthropic's
"/v1" (the form OpenAI-style base URLs take), or a whole endpoint pasted as the base URL.
The request goes to the API's one path, not to it doubled (a 404 on a real server), through
the real SDKs against a local replay server."""

from __future__ import annotations

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_openai_responses import an_answer
from yiemagent.ai import complete
from yiemagent.types import Context, Model, StreamOptions, UserMessage

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"

CASES = [
    ("anthropic-messages", "", "/v1/messages"),
    ("anthropic-messages", "/", "/v1/messages"),
    ("anthropic-messages", "/v1", "/v1/messages"),
    ("anthropic-messages", "/v1/", "/v1/messages"),
    ("anthropic-messages", "/v1/messages", "/v1/messages"),
    ("anthropic-messages", "/anthropic/v1", "/anthropic/v1/messages"),
    ("openai-completions", "/v1", "/v1/chat/completions"),
    ("openai-completions", "/v1/chat/completions", "/v1/chat/completions"),
    ("openai-completions", "/api/v3/chat/completions/", "/api/v3/chat/completions"),
    ("openai-responses", "/v1", "/v1/responses"),
    ("openai-responses", "/v1/responses", "/v1/responses"),
]


@pytest.mark.parametrize(("api", "given", "path"), CASES)
async def test_the_request_goes_to_the_apis_path_once(
    server: ReplayServer, api: str, given: str, path: str
) -> None:
    if api == "anthropic-messages":
        server.enqueue(sse_reply("anthropic_text.sse"))
    elif api == "openai-completions":
        server.enqueue(sse_reply(openai_chunks({"content": "Hello."})))
    else:
        server.enqueue(sse_reply(an_answer()))
    model = Model(id="m", provider="gateway", api=api, base_url=server.url + given)
    message = await complete(model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY))
    assert message.stop_reason == "stop", message.error_message
    assert [r.path for r in server.requests] == [path]
