"""Local servers whose model writes tool calls as text (DESIGN §21), against REAL llama.cpp
HTTP servers (xllamacpp) on 127.0.0.1 serving the bundled Qwen2.5-Coder-0.5B: one with the
server's own tool handling on (`--jinja`: its chat template renders the tools, it parses
what it recognises), one with it off (it refuses `tools`). Plus the streaming side against
a replay server: calls become tool-call events while the text still arrives."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any, TypeVar, cast

import pytest

from tests.ai._local_kit import CALC, TIME
from tests.ai.servers import LlamaServer, ReplayServer, openai_chunks, sse_reply, start_llama_server
from yiemagent import Agent, tool
from yiemagent.ai import Context, StreamOptions, complete, get_model, stream
from yiemagent.ai.providers.local import is_installed, local_spec
from yiemagent.ai.providers.local.weights import ensure_model_file
from yiemagent.cli.options import example_tools
from yiemagent.types.messages import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

SPEC = local_spec("qwen2.5-coder-0.5b")
QUESTION = UserMessage("What time is it in London?")

F = TypeVar("F", bound=Callable[..., Any])


def needs_model(test: F) -> F:
    """The marks of a test that runs the 0.5B model on a llama.cpp server."""
    marked = pytest.mark.local_model(
        pytest.mark.skipif(not is_installed(SPEC), reason="the 0.5B model's packages are missing")(
            pytest.mark.timeout(900)(test)  # a real server on 2 shared cores: a bound
        )
    )
    return cast(F, marked)


def _server(tmp: pytest.TempPathFactory, *, jinja: bool) -> Iterator[LlamaServer]:
    server = start_llama_server(
        api_key="test-" + secrets.token_hex(8),
        log_dir=tmp.mktemp("llama"),
        model_path=ensure_model_file(SPEC),
        jinja=jinja,
        timeout_s=300,
    )
    yield server
    server.stop()


@pytest.fixture(scope="module")
def jinja(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    yield from _server(tmp_path_factory, jinja=True)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    yield from _server(tmp_path_factory, jinja=False)


def options(server: LlamaServer) -> StreamOptions:
    return StreamOptions(api_key=server.api_key, max_tokens=80, temperature=0.0)


def the_call(message: AssistantMessage) -> ToolCall:
    assert message.stop_reason == "toolUse", (message.stop_reason, message.error_message)
    [call] = message.tool_calls
    return call


@needs_model
async def test_text_calls_with_the_servers_tool_handling_on(jinja: LlamaServer) -> None:
    """The server renders the tools, the 0.5B answers with bare JSON in the content and the
    server passes it on as text: plain Chat Completions gets no call, text recovery does."""
    url = jinja.base_url
    context = Context("You are a helpful assistant.", [QUESTION], [TIME, CALC])
    native = get_model("openai-compatible/qwen", base_url=url)
    plain_reply = await complete(native, context, options(jinja))
    assert plain_reply.stop_reason == "stop" and not plain_reply.tool_calls
    assert '"get_time"' in plain_reply.text  # the call is there, as text

    model = get_model("openai-compatible/qwen", base_url=url, tool_calls="text")
    call = the_call(await complete(model, context, options(jinja)))
    assert call.name == "get_time" and "london" in str(call.arguments).lower()
    assert call.partial_json is None


@needs_model
async def test_text_calls_with_the_servers_tool_handling_off(plain: LlamaServer) -> None:
    """Without --jinja the server refuses `tools`; text recovery then puts the tools in the
    system prompt (Hermes wording) and reads the call the model writes."""
    url = plain.base_url
    context = Context("You are a helpful assistant.", [QUESTION], [TIME, CALC])
    refused = await complete(
        get_model("openai-compatible/q", base_url=url), context, options(plain)
    )
    assert refused.stop_reason == "error" and "jinja" in (refused.error_message or "")

    model = get_model("openai-compatible/qwen", base_url=url, tool_calls="text")
    call = the_call(await complete(model, context, options(plain)))
    assert call.name == "get_time" and "london" in str(call.arguments).lower()
    # Its result goes back as <tool_response> text, and the model answers from it.
    after = Context(
        context.system_prompt,
        [
            QUESTION,
            AssistantMessage([call], stop_reason="toolUse", provider="openai-compatible"),
            _result(call, "It is 14:05 in London."),
        ],
        [TIME, CALC],
    )
    answer = await complete(model, after, options(plain))
    assert answer.stop_reason in ("stop", "toolUse", "length"), answer.error_message


def _result(call: ToolCall, text: str) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, [TextContent(text)])


@needs_model
async def test_the_embedded_models_reply_schema_over_http(
    jinja: LlamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tool_calls="schema": the embedded model's pipeline (reply schema, rules, guards) with
    the server as its runtime; an Agent gets the call, runs it and answers from it."""
    monkeypatch.setenv("OPENAI_COMPATIBLE_API_KEY", jinja.api_key or "")
    model = get_model("openai-compatible/qwen", base_url=jinja.base_url, tool_calls="schema")
    agent = Agent(model=model, tools=example_tools("calculator"))
    answer = await agent.prompt("What is 17 * 23? Use the calculator.")
    calls = [
        c for m in agent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert [c.name for c in calls][:1] == ["calculator"]
    assert "391" in answer.text


async def test_calls_become_events_while_the_text_still_streams(server: ReplayServer) -> None:
    """A `<tool_call>` cut across chunks, text before and after it: the call's events come
    as soon as its closing tag has arrived, before the text that follows."""
    call_text = '{"name": "get_time", "arguments": {"place": "Oslo"}}'
    text = f"Let me check.\n<tool_call>\n{call_text}\n</tool_call>\nOne moment."
    deltas = [{"content": text[i : i + 5]} for i in range(0, len(text), 5)]
    server.replies.put(sse_reply(openai_chunks(*deltas, finish_reason="stop")))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1", tool_calls="text")
    events = stream(model, Context("", [QUESTION], [TIME]), StreamOptions())
    kinds = [(e.type, getattr(e, "delta", "")) async for e in events]
    message = await events.result()
    assert [type(b).__name__ for b in message.content] == ["TextContent", "ToolCall", "TextContent"]
    assert message.content[0].text == "Let me check.\n"  # type: ignore[union-attr]
    assert message.content[2].text == "\nOne moment."  # type: ignore[union-attr]
    assert message.stop_reason == "toolUse"
    call = message.content[1]
    assert isinstance(call, ToolCall) and call.arguments == {"place": "Oslo"}
    end = kinds.index(("toolcall_end", ""))
    after = "".join(delta for kind, delta in kinds[end:] if kind == "text_delta")
    assert after == "\nOne moment."
    # the request offered the tools as usual
    assert server.requests[0].body["tools"][0]["function"]["name"] == "get_time"


async def test_chunks_without_events_keep_the_stream_alive(server: ReplayServer) -> None:
    """A call held back while it arrives, after prompt-progress chunks with no content,
    takes longer than the idle limit in all but sends a chunk well within it: the run goes
    on (counts what the server sends, not only the message's events)."""
    call_text = '{"name": "get_time", "arguments": {"place": "Oslo"}}'
    progress = [{"role": "assistant", "content": None}] * 3
    pieces = [{"content": call_text[i : i + 10]} for i in range(0, len(call_text), 10)]
    server.replies.put(sse_reply(openai_chunks(*progress, *pieces), delay_s=0.3))
    server.replies.put(sse_reply(openai_chunks({"content": "It is noon in Oslo."})))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1", tool_calls="text")
    time_tool = replace(TIME, execute=lambda *_: "12:00")
    agent = Agent(model=model, tools=[time_tool], stream_idle_timeout_s=1.0)
    answer = await agent.prompt("What time is it in Oslo?")
    assert answer.text == "It is noon in Oslo."
    [call] = [
        c for m in agent.state.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    assert call.arguments == {"place": "Oslo"}


async def test_qwen3_coder_xml_calls_run_with_their_values_coerced(server: ReplayServer) -> None:
    """A server without Qwen3-Coder's parser leaves its XML calls in the content: they run,
    each value (a string in XML) coerced by the tool's schema, and the answer follows."""
    xml = (
        "<tool_call>\n<function=add>\n<parameter=a>\n2\n</parameter>\n"
        "<parameter=b>\n40\n</parameter>\n</function>\n</tool_call>"
    )
    server.replies.put(
        sse_reply(openai_chunks(*[{"content": xml[i : i + 7]} for i in range(0, len(xml), 7)]))
    )
    server.replies.put(sse_reply(openai_chunks({"content": "It is 42."})))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1", tool_calls="text")
    added: list[tuple[int, int]] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        added.append((a, b))
        return a + b

    agent = Agent(model=model, tools=[add])
    answer = await agent.prompt("What is 2 + 40?")
    assert answer.text == "It is 42."
    assert added == [(2, 40)]
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert not result.is_error and result.content == [TextContent("42")]


async def test_llama_python_calls_run(server: ReplayServer) -> None:
    """Llama 3.2 on a server without its parser writes `[f(x=1)]` into the content: the
    call runs (its name a known tool, its arguments literals), and the answer follows."""
    line = "[add(a=2, b=40)]"
    server.replies.put(sse_reply(openai_chunks(*[{"content": c} for c in (line[:5], line[5:])])))
    server.replies.put(sse_reply(openai_chunks({"content": "It is 42."})))
    model = get_model("openai-compatible/m", base_url=server.url + "/v1", tool_calls="text")
    added: list[tuple[int, int]] = []

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        added.append((a, b))
        return a + b

    agent = Agent(model=model, tools=[add])
    answer = await agent.prompt("What is 2 + 40?")
    assert answer.text == "It is 42." and added == [(2, 40)]
