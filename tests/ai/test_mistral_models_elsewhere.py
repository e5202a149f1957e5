"""Mistral's models refuse tool-call ids that are not 9 letters and digits wherever they
are served, not only on Mistral's API: vLLM with `--tokenizer-mode mistral` runs
`mistral-common`'s check ("Tool call id was chatcmpl-tool-e5ad… but must be a-z, A-Z, 0-9,
with a length of 9", vllm#12332), and their chat templates in llama.cpp, mlx-lm and others
raise "Tool call IDs should be alphanumeric strings with length 9!" (llama.cpp#14349,
mlx-lm#1375), often on the ids the server itself made a turn before. A model whose id
names a Mistral model gets such ids on any server; the rules of Mistral's own API (the
tool's name on tool messages, an assistant turn between tool results and a user message)
stay Mistral's, as their templates do not take them. Through the real `openai` SDK against
`ReplayServer` on 127.0.0.1."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

IDS = [
    "chatcmpl-tool-e5add885dbb342de950be95dd89b71e7",
    "toolu_01A09q90qw90lq917835lq9",
    "call_49c89af0",
]


def transcript() -> list[Message]:
    return [
        UserMessage("go"),
        AssistantMessage(
            [ToolCall(i, "get", {"n": n}) for n, i in enumerate(IDS)], stop_reason="toolUse"
        ),
        *(ToolResultMessage(i, "get", [TextContent(str(n))]) for n, i in enumerate(IDS)),
        UserMessage("and then?"),
    ]


async def sent_for(server: ReplayServer, model_id: str) -> list[dict[str, Any]]:
    model = Model(id=model_id, provider="vllm", api="openai-completions", base_url=server.url)
    server.enqueue(sse_reply(openai_chunks({"content": "ok"})))
    stream = stream_openai_completions(model, Context("", transcript()), StreamOptions(api_key="k"))
    assert (await stream.result()).error_message is None
    messages: list[dict[str, Any]] = server.requests[-1].body["messages"]
    return messages


@pytest.mark.parametrize(
    "model_id",
    [
        "mistralai/Mistral-Small-3.2-24B-Instruct-2506",
        "devstral:24b",
        "mlx-community/Ministral-8B-Instruct-2410-4bit",
        "Mixtral-8x7B-Instruct-v0.1.Q4_K_M.gguf",
        "magistral-small",
    ],
)
async def test_a_mistral_model_on_any_server_gets_nine_character_ids(
    server: ReplayServer, model_id: str
) -> None:
    sent = await sent_for(server, model_id)
    call_ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert all(re.fullmatch(r"[A-Za-z0-9]{9}", i) for i in call_ids)
    assert len(set(call_ids)) == len(IDS)
    assert [m["tool_call_id"] for m in sent[2:5]] == call_ids
    assert [m["content"] for m in sent[2:5]] == ["0", "1", "2"]
    # the rules of Mistral's own API are not its templates'
    assert [m["role"] for m in sent] == ["user", "assistant", "tool", "tool", "tool", "user"]
    assert all("name" not in m for m in sent[2:5])


async def test_another_model_keeps_its_ids(server: ReplayServer) -> None:
    sent = await sent_for(server, "Qwen/Qwen3-8B")
    call_ids = [c["id"] for c in sent[1]["tool_calls"]]
    assert call_ids[1:] == IDS[1:]  # (the first is longer than the 40 characters kept)
