"""A client's own tools on `/v1/chat/completions` (DESIGN §18), through the official
`openai` client against a real Uvicorn server: the agent runs its own tools on the server
and never hands a call back to the client, so a client that sends `tools` (or the older
`functions`) waiting for `tool_calls` would wait for ever. Like `n` and `response_format`,
they are a 400 that says so, before any run starts (hermes-agent #28825: silently dropped
tools break LangChain, LibreChat and the SDKs' tool loops); no tools (`[]`) or tools the
client forbids calling (`tool_choice="none"`) change nothing and are answered."""

from __future__ import annotations

from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.serve._kit import faux_server
from yiemagent.sessions import InMemorySessionStore

pytestmark = pytest.mark.timeout(120)

TOOL: Any = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "look a word up",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
    },
}
ASK: Any = [{"role": "user", "content": "hi"}]


def test_a_clients_tools_are_refused_not_ignored() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as refused:
                client.chat.completions.create(model="m", messages=ASK, tools=[TOOL], stream=stream)
            assert refused.value.type == "invalid_request_error"
            assert "the agent runs its own tools" in str(refused.value)
        with pytest.raises(openai.BadRequestError, match='"functions"'):
            client.chat.completions.create(
                model="m", messages=ASK, functions=[TOOL["function"]], tool_choice="auto"
            )
        assert store.list_sessions() == []  # no run started


@pytest.mark.parametrize(
    "tools", [{"tools": []}, {"tools": [TOOL], "tool_choice": "none"}, {"tool_choice": "auto"}]
)
def test_no_tools_or_tools_the_client_forbids_are_answered(tools: dict[str, Any]) -> None:
    with faux_server(InMemorySessionStore()) as (url, _):
        client = OpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        reply = client.chat.completions.create(model="m", messages=ASK, **tools)
        assert reply.choices[0].message.content == "echo: hi"
        assert reply.choices[0].message.tool_calls is None
