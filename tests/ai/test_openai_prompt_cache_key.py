"""OpenAI refuses a `prompt_cache_key` longer than 64 characters (HTTP 400, "Invalid
'prompt_cache_key': string too long. Expected a string with maximum length 64"): a longer
session id goes as its SHA-256, the same for every request of the session. Through the real
`openai` SDK, on both OpenAI APIs, to a server on 127.0.0.1."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.openai_wire import MAX_CACHE_KEY_CHARS, openai_only_fields
from yiemagent.types.messages import UserMessage

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"
LONG = "tenant-7f3a/user-0c9e4d1b-2a6f-4e8b-9d3c-5f1e7a2b4c6d/agent-researcher/run-12"


def answer(api: str) -> list[str]:
    if api == "openai-completions":
        return openai_chunks({"role": "assistant", "content": "ok"})
    item = {"type": "message", "id": "msg_1", "role": "assistant", "content": []}
    return responses_sse(
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "ok"},
        responses_done(),
    )


@pytest.mark.parametrize("name", ["openai/gpt-4.1-mini", "openai-responses/gpt-4.1-mini"])
async def test_a_long_session_id_goes_as_a_key_openai_takes(
    server: ReplayServer, name: str
) -> None:
    model = get_model(name, base_url=server.url + "/v1")
    sent = []
    for session in (LONG, LONG, LONG + "-2", "short-session"):
        server.enqueue(sse_reply(answer(model.api)))
        options = StreamOptions(api_key=KEY, session_id=session)
        message = await stream(model, Context("", [UserMessage("hi")]), options).result()
        assert message.stop_reason == "stop", message.error_message
        sent.append(server.requests[-1].body["prompt_cache_key"])
    assert len(LONG) > 64 and all(len(key) <= 64 for key in sent)
    assert sent[0] == sent[1] != sent[2]  # one key per session
    assert sent[3] == "short-session"  # one that fits goes as it is


@given(st.text(min_size=1, max_size=64) | st.text(min_size=65, max_size=300))
def test_any_session_id_gives_a_key_of_at_most_64_characters(session_id: str) -> None:
    model = get_model("openai/gpt-4o")
    key = openai_only_fields(model, StreamOptions(session_id=session_id))["prompt_cache_key"]
    assert 0 < len(key) <= MAX_CACHE_KEY_CHARS
    if len(session_id) <= MAX_CACHE_KEY_CHARS:
        assert key == session_id
