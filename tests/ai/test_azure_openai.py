"""Azure OpenAI through `openai-compatible/<deployment>`: a deployment's base URL carries
the `api-version` query the service requires, and its key goes in the `api-key` header
(Azure's own; `Authorization: Bearer` is for Entra ID tokens), on every request (DESIGN §7).
"""

from __future__ import annotations

import json

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.models import get_model
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.ai.providers.openai_responses import stream_openai_responses
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Context, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "azure-key-0123456789abcdef"


@pytest.mark.parametrize("tail", ["", "/chat/completions"])
async def test_a_deployments_api_version_and_key_reach_the_service(
    server: ReplayServer, tail: str
) -> None:
    """The query of a base URL goes on the request's URL, after the API's path (the SDK
    appended its path after the query: `…/gpt-4o/?api-version=2024-10-21chat/completions`,
    which Azure answers with 404)."""
    base = f"{server.url}/openai/deployments/gpt-4o{tail}?api-version=2024-10-21"
    model = get_model("openai-compatible/gpt-4o", base_url=base)
    for _ in range(2):  # the second request reuses the client
        server.enqueue(sse_reply(openai_chunks({"content": "hello"})))
        stream = stream_openai_completions(
            model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
        )
        message = await stream.result()
        assert message.error_message is None
        assert message.text == "hello"
    for request in server.requests:
        assert request.path == "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21"
        assert request.headers["api-key"] == KEY


async def test_a_query_of_several_keys_is_kept_whole(server: ReplayServer) -> None:
    base = f"{server.url}/v1?api-version=preview&tenant=a%20b"
    model = get_model("openai-compatible/m", base_url=base)
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    assert (await stream.result()).text == "ok"
    assert server.requests[0].path == "/v1/chat/completions?api-version=preview&tenant=a+b"
    assert "api-key" not in server.requests[0].headers  # not Azure: the key goes as Bearer only
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_the_responses_api_of_a_deployment_gets_its_api_version_too(
    server: ReplayServer,
) -> None:
    done = {
        "type": "response.completed",
        "response": {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [],
            "usage": {"input_tokens": 3, "output_tokens": 0, "total_tokens": 3},
        },
    }
    server.enqueue(sse_reply([f"event: response.completed\ndata: {json.dumps(done)}"]))
    base = f"{server.url}/openai?api-version=2025-04-01-preview"
    model = get_model("openai-compatible/gpt-4o", base_url=base)
    stream = stream_openai_responses(
        model, Context("", [UserMessage("hi")]), StreamOptions(api_key=KEY)
    )
    await stream.result()
    assert server.requests[0].path == "/openai/responses?api-version=2025-04-01-preview"
