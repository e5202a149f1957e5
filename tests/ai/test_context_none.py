"""`Context(system_prompt=None)` is no system prompt for every provider, and
`messages=None` no messages: the value is made "" / [] where the `Context` is built, so the
embedded model, Anthropic and the OpenAI APIs all answer, none sends a system text, and
the Agent reads its own `system_prompt=None` the same way. Anything else that is not text
is one `ConfigError` where the `Context` is made."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.ai._local_kit import FakeRuntime, _answer, _events
from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply
from tests.ai.test_attachments import responses_done, responses_sse
from yiemagent import Agent, ConfigError, UserMessage
from yiemagent.ai import Context, Model, StreamOptions, complete, get_model
from yiemagent.ai.providers.faux import FauxModel

pytestmark = pytest.mark.timeout(120)  # the first call imports a provider SDK

KEY = "sk-test-0123456789abcdef"


@pytest.fixture
def server() -> Iterator[ReplayServer]:
    with ReplayServer() as s:
        yield s


def openai_text() -> Reply:
    return sse_reply(openai_chunks({"content": "hi there"}))


def responses_text() -> Reply:
    delta = {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "hi there"}
    return sse_reply(responses_sse(delta, responses_done()))


def anthropic_text() -> Reply:
    return sse_reply("anthropic_text.sse")


def system_sent(body: dict[str, Any]) -> list[Any]:
    """Whatever system text a request body carries, in any provider's shape."""
    found = [body[key] for key in ("system", "instructions") if key in body]
    for message in body.get("messages") or body.get("input") or []:
        if isinstance(message, dict) and message.get("role") in ("system", "developer"):
            found.append(message)
    return found


@pytest.mark.parametrize(
    ("make_model", "reply"),
    [
        (lambda url: get_model("openai/gpt-4o-mini", base_url=url + "/v1"), openai_text),
        (
            lambda url: get_model("openai-responses/gpt-4o-mini", base_url=url + "/v1"),
            responses_text,
        ),
        (
            lambda url: Model(
                id="claude-test-1", provider="anthropic", api="anthropic-messages", base_url=url
            ),
            anthropic_text,
        ),
        (
            lambda url: Model(
                id="m", provider="vllm", api="openai-text-calls", base_url=url + "/v1"
            ),
            openai_text,
        ),
    ],
    ids=["openai-completions", "openai-responses", "anthropic-messages", "openai-text-calls"],
)
async def test_every_http_provider_answers_with_no_system_prompt(
    server: ReplayServer, make_model: Callable[[str], Model], reply: Callable[[], Reply]
) -> None:
    server.enqueue(reply())
    context = Context(system_prompt=None, messages=[UserMessage("hello")])  # type: ignore[arg-type]

    message = await complete(make_model(server.url), context, StreamOptions(api_key=KEY))

    assert message.stop_reason == "stop", message.error_message
    assert message.text
    assert system_sent(server.requests[0].body) == []


async def test_the_embedded_model_answers_with_no_system_prompt(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([_answer("hi there")])
    context = Context(system_prompt=None, messages=[UserMessage("hello")])  # type: ignore[arg-type]

    events = await _events(context)

    assert events[-1].type == "done", events[-1]
    assert "None" not in str(runtime.requests[0]["messages"][0])


async def test_the_faux_model_and_none_for_messages() -> None:
    fm = FauxModel(["hi there"])
    message = await complete(fm.model, Context(None, None))  # type: ignore[arg-type]
    assert message.stop_reason == "stop"
    assert fm.contexts[0].system_prompt == "" and fm.contexts[0].messages == []


@pytest.mark.parametrize("bad", [3, ["You are terse."], b"bytes"])
def test_a_system_prompt_that_is_not_text_is_one_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"Context\.system_prompt must be text"):
        Context(system_prompt=bad, messages=[])  # type: ignore[arg-type]


async def test_the_agent_reads_none_as_no_system_prompt_too() -> None:
    fm = FauxModel(["one", "two"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, system_prompt=None)
    assert agent.state.system_prompt == ""
    await agent.prompt("hello")

    agent.state.system_prompt = None  # type: ignore[assignment]
    await agent.prompt("again")

    assert [c.system_prompt for c in fm.contexts] == ["", ""]
