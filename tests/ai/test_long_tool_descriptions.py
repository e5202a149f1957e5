"""A tool description longer than OpenAI takes (1024 characters: "string_above_max_length"
refuses the whole request, every turn) on both OpenAI wire formats, as a docstring or an MCP
server easily writes one: the description sent is cut to fit, and the whole text goes in the
parameters' description, where no such limit holds, so the model still reads all of it."""

from __future__ import annotations

from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from tests.ai.test_openai_responses import an_answer, gpt
from yiemagent import AgentTool
from yiemagent.ai import Context, StreamOptions, stream
from yiemagent.types.messages import UserMessage
from yiemagent.types.model import Model

pytestmark = pytest.mark.timeout(120)  # the first test imports the SDK: seconds under load

KEY = "sk-test-0123456789abcdef"
LONG = " ".join(f"Rule {n}: read the ledger before writing to it." for n in range(60))
SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "The entry to book.",
    "properties": {"amount": {"type": "integer"}},
}


def tools() -> list[AgentTool]:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "booked"

    return [
        AgentTool("book", "Book", LONG, SCHEMA, execute),
        AgentTool("peek", "Peek", "Show the ledger.", {"type": "object"}, execute),
    ]


def check(sent: list[dict[str, Any]]) -> None:
    long, short = sent
    assert len(LONG) > 2500 and len(long["description"]) <= 1024
    assert long["description"].startswith("Rule 0: read the ledger")
    assert long["description"].endswith("… (the whole description is the parameters')")
    assert long["parameters"]["description"] == LONG + "\n\nThe entry to book."
    assert long["parameters"]["properties"] == SCHEMA["properties"]
    assert short["description"] == "Show the ledger."
    assert "description" not in short["parameters"]


async def test_chat_completions_get_a_long_description_cut_and_whole(
    server: ReplayServer,
) -> None:
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    model = Model(id="gpt-4o", provider="openai", api="openai-completions", base_url=server.url)
    context = Context("", [UserMessage("book it")], tools())
    await stream(model, context, StreamOptions(api_key=KEY)).result()
    check([tool["function"] for tool in server.requests[0].body["tools"]])


async def test_responses_get_a_long_description_cut_and_whole(server: ReplayServer) -> None:
    server.replies.put(sse_reply(an_answer()))
    context = Context("", [UserMessage("book it")], tools())
    await stream(gpt(server), context, StreamOptions(api_key=KEY)).result()
    check(server.requests[0].body["tools"])
