"""DESIGN R-6.1: the seeds' simple model path `llm_call(formatted)`, the OpenAI chat format of
seed 000 §14, the answer shapes of seed 000 §7, and the end-to-end example of seed 000 §16."""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentContext,
    AgentToolResult,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    format_openai_messages,
    tool,
    user_message_from_openai,
)
from yiemagent.agent import AgentRunError
from yiemagent.types import DocumentContent, ThinkingContent, text_of

from ._kit import EventWaiter


@tool
def getWeather(city: str) -> str:
    """Fetch current weather.

    Args:
        city: The city name.
    """
    return f"Weather in {city}: Sunny, 22°C"


class ScriptedLlm:
    """A plain (blocking) llm_call answering from a script; records what it received."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.received: list[dict[str, Any]] = []
        self.threads: set[str] = set()

    def __call__(self, formatted: dict[str, Any]) -> Any:
        self.received.append(json.loads(json.dumps(formatted)))  # must be JSON-ready
        self.threads.add(threading.current_thread().name)
        return self.answers.pop(0)


def tool_results(agent: Agent) -> list[ToolResultMessage]:
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


# ── seed 000 §16 end to end ─────────────────────────────────────────────────


async def test_r6_1_seed_16_weather_example_through_llm_call() -> None:
    llm = ScriptedLlm(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "getWeather", "arguments": '{"city": "Tokyo"}'},
                }
            ],
        },
        {"role": "assistant", "content": "The weather in Tokyo is sunny, 22°C."},
    )
    agent = Agent(tools=[getWeather], llm_call=llm, tool_execution="sequential")
    waiter = EventWaiter(agent)
    agent.send(
        {"role": "user", "content": [{"type": "text", "text": "What's the weather in Tokyo?"}]}
    )
    answer = await agent.take_response()

    assert answer.text == "The weather in Tokyo is sunny, 22°C."
    first, second = llm.received
    # The seed's example writes content as lists of text parts; the one format of the
    # provider and `format_openai_messages` sends a string, which every server accepts.
    system = {"role": "system", "content": "You are a helpful assistant."}
    user = {"role": "user", "content": "What's the weather in Tokyo?"}
    assert first["messages"] == [system, user]
    assert first["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "getWeather",
                "description": "Fetch current weather.",
                "parameters": getWeather.input_schema,
            },
        }
    ]
    assert second["messages"][:2] == [system, user]
    assistant, result = second["messages"][2:]
    assert assistant["role"] == "assistant" and assistant["content"] is None
    assert assistant["tool_calls"] == [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "getWeather", "arguments": json.dumps({"city": "Tokyo"})},
        }
    ]
    assert result == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "Weather in Tokyo: Sunny, 22°C",
    }
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "assistant",
    ]
    types = waiter.types()
    assert types.count("tool_execution_start") == 1 and types.count("message_update") >= 2
    assert threading.main_thread().name not in llm.threads  # a plain llm_call runs on a thread


# ── seed 000 §7 answer shapes ───────────────────────────────────────────────

TOKYO = {"city": "Tokyo"}
SHAPES: dict[str, Any] = {
    "seed format 1 (tool_calls block, function)": AssistantMessage(
        content=[
            {  # type: ignore[list-item]
                "type": "tool_calls",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "getWeather", "arguments": TOKYO}}
                ],
            }
        ]
    ),
    "seed format 1 (flat name/arguments)": {
        "content": [
            {
                "type": "tool_calls",
                "tool_calls": [{"id": "c1", "name": "getWeather", "arguments": TOKYO}],
            }
        ]
    },
    "seed format 2 (single tool_call block)": {
        "role": "assistant",
        "content": [{"type": "tool_call", "id": "c1", "name": "getWeather", "arguments": TOKYO}],
    },
    "chat completion": {
        "choices": [
            {
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "getWeather", "arguments": json.dumps(TOKYO)},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    },
    "AssistantMessage": AssistantMessage(content=[ToolCall("c1", "getWeather", dict(TOKYO))]),
}


@pytest.mark.parametrize("shape", list(SHAPES))
async def test_r6_1_llm_call_answer_shapes_run_the_tool(shape: str) -> None:
    llm = ScriptedLlm(SHAPES[shape], "done")
    agent = Agent(tools=[getWeather], llm_call=llm)
    answer = await agent.prompt("weather?")
    assert answer.text == "done"
    (result,) = tool_results(agent)
    assert (result.tool_call_id, result.is_error) == ("c1", False)
    assert text_of(result.content) == "Weather in Tokyo: Sunny, 22°C"
    call = agent.state.messages[1]
    assert isinstance(call, AssistantMessage) and call.stop_reason == "toolUse"
    if shape == "chat completion":
        assert (call.usage.input, call.usage.output, call.usage.total_tokens) == (12, 5, 17)


async def test_r6_1_missing_id_gets_a_uuid_and_string_arguments_are_parsed() -> None:
    llm = ScriptedLlm(
        {"content": [{"type": "tool_call", "name": "getWeather", "arguments": '{"city": "Oslo"}'}]},
        "done",
    )
    agent = Agent(tools=[getWeather], llm_call=llm)
    await agent.prompt("weather?")
    (result,) = tool_results(agent)
    uuid.UUID(result.tool_call_id)
    assert text_of(result.content) == "Weather in Oslo: Sunny, 22°C"


async def test_r6_1_invalid_json_arguments_become_a_tool_error_the_model_can_fix() -> None:
    raw = "{city: Oslo"
    llm = ScriptedLlm(
        {"content": [{"type": "tool_call", "id": "c1", "name": "getWeather", "arguments": raw}]},
        "sorry",
    )
    agent = Agent(tools=[getWeather], llm_call=llm)
    assert (await agent.prompt("weather?")).text == "sorry"
    call = agent.state.messages[1]
    assert isinstance(call, AssistantMessage)
    assert call.tool_calls[0].arguments == {}
    assert call.tool_calls[0].partial_json == raw  # the raw text kept, as providers do
    (result,) = tool_results(agent)
    assert result.is_error
    assert "not valid JSON" in text_of(result.content)
    assert raw in text_of(result.content)  # echoed so the model can correct itself


async def test_r6_1_async_llm_call_text_answer_and_prepare_context() -> None:
    seen: list[dict[str, Any]] = []

    async def llm_call(formatted: dict[str, Any]) -> str:
        seen.append(formatted)
        return "plain text"

    def prepare_context(state: Any) -> AgentContext:
        return AgentContext("prepared prompt", state.messages[-1:], [])

    agent = Agent(
        tools=[getWeather],
        llm_call=llm_call,
        prepare_context=prepare_context,
        messages=[UserMessage("old")],
    )
    answer = await agent.prompt("new")
    assert answer.text == "plain text"
    (formatted,) = seen
    assert formatted["messages"] == [
        {"role": "system", "content": "prepared prompt"},
        {"role": "user", "content": "new"},
    ]
    assert formatted["tools"] == []


async def test_r6_1_custom_format_messages_reaches_llm_call() -> None:
    got: list[Any] = []
    agent = Agent(
        llm_call=lambda formatted: got.append(formatted) or "ok",
        format_messages=lambda context: {"n": len(context.messages)},
    )
    assert (await agent.prompt("hi")).text == "ok"
    assert got == [{"n": 1}]


async def test_r6_1_a_raising_or_odd_llm_call_ends_the_run_in_error_not_an_exception() -> None:
    def broken(formatted: dict[str, Any]) -> Any:
        raise ConnectionError("server down")

    agent = Agent(llm_call=broken)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    failed = raised.value.message
    assert failed.stop_reason == "error" and "server down" in (failed.error_message or "")
    odd = Agent(llm_call=lambda formatted: 42)
    with pytest.raises(AgentRunError) as raised:
        await odd.prompt("hi")
    failed = raised.value.message
    assert failed.stop_reason == "error" and "int" in (failed.error_message or "")


@pytest.mark.parametrize("calls", [5, True, 1.5, "echo", {"id": "c1"}])
async def test_tool_calls_that_are_not_a_list_say_so(calls: Any) -> None:
    """`tool_calls` of another type than a list ended the run in "TypeError: 'int' object
    is not iterable" (or, for a dict or a string, calls made of its keys or letters)."""
    for response in [
        {"role": "assistant", "content": "x", "tool_calls": calls},
        {"role": "assistant", "content": [{"type": "tool_calls", "tool_calls": calls}]},
    ]:
        agent = Agent(llm_call=lambda formatted, response=response: response)
        with pytest.raises(AgentRunError) as raised:
            await agent.prompt("hi")
        said = raised.value.message.error_message or ""
        shown = type(calls).__name__
        assert said.endswith(f"tool_calls must be a list of tool calls, not {shown}"), said


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ({"type": "tool_calls", "tool_calls": [5]}, "a tool call must be a dict, not 5"),
        ({"type": "tool_calls", "tool_calls": ["x"]}, "a tool call must be a dict, not 'x'"),
    ],
)
async def test_a_tool_calls_block_holding_no_dict_says_so(block: Any, said: str) -> None:
    """Inside a content list, a `tool_calls` entry that was not a dict ended the run in
    "AttributeError: 'int' object has no attribute 'get'"."""
    agent = Agent(llm_call=lambda formatted: {"role": "assistant", "content": [block]})
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("hi")
    assert (raised.value.message.error_message or "").endswith(said)


async def test_a_thinking_signature_that_is_a_number_is_kept_as_text() -> None:
    """A thinking block whose signature was a number ended the run in "TypeError: can only
    concatenate str (not "float") to str", outside of llm_call's own errors."""
    thinking = {"type": "thinking", "thinking": "hm", "signature": 1.5}
    answer = {"role": "assistant", "content": [thinking, {"type": "text", "text": "ok"}]}
    agent = Agent(llm_call=lambda formatted: answer)
    reply = await agent.prompt("hi")
    assert reply.text == "ok"
    assert reply.content[0] == ThinkingContent("hm", "1.5")


async def test_r6_1_abort_during_llm_call_ends_the_run_aborted() -> None:
    started = asyncio.Event()

    async def hanging(formatted: dict[str, Any]) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    agent = Agent(llm_call=hanging)
    run = asyncio.create_task(agent.prompt("hi"))
    await asyncio.wait_for(started.wait(), 5)
    agent.abort()
    answer = await asyncio.wait_for(run, 5)
    assert answer.stop_reason == "aborted"


async def test_r6_1_terminating_tool_through_llm_call() -> None:
    @tool
    def submit(report: str) -> AgentToolResult:
        """Submit the report and stop."""
        return AgentToolResult.text(f"submitted {report}", terminate=True)

    llm = ScriptedLlm(
        {"content": [{"type": "tool_call", "name": "submit", "arguments": {"report": "r"}}]}
    )
    agent = Agent(tools=[submit], llm_call=llm)
    answer = await agent.prompt("go")
    assert answer.stop_reason == "tool_use_terminated"
    assert answer.text == "Tool execution completed.\n\nsubmitted r"


# ── the formats themselves ──────────────────────────────────────────────────


def test_r6_1_format_openai_messages_covers_every_role() -> None:
    image = ImageContent(data="aGk=", mime_type="image/png")
    context = AgentContext(
        "sys",
        [
            UserMessage([TextContent("look"), image]),
            AssistantMessage(content=[TextContent("calling"), ToolCall("c1", "shot", {"x": 1})]),
            ToolResultMessage("c1", "shot", [TextContent("taken"), image]),
        ],
        [],
    )
    messages = format_openai_messages(context)["messages"]
    assert messages[0] == {"role": "system", "content": "sys"}
    assert messages[1]["content"][1] == {
        "type": "image_url",
        "image_url": {"url": "data:image/png;base64,aGk="},
    }
    assert messages[2]["content"] == "calling"
    assert messages[2]["tool_calls"][0]["function"] == {"name": "shot", "arguments": '{"x": 1}'}
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "taken"}
    assert messages[4]["role"] == "user" and messages[4]["content"][1]["type"] == "image_url"
    assert format_openai_messages(AgentContext("", [], []))["messages"] == []


def test_r6_1_user_message_from_openai() -> None:
    assert text_of(user_message_from_openai({"role": "user", "content": "hi"}).content) == "hi"
    message = user_message_from_openai(
        {
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,aGk="}},
            ]
        }
    )
    assert message.content == [TextContent("see"), ImageContent("aGk=", "image/jpeg")]
    with pytest.raises(ValueError, match="role 'user'"):
        user_message_from_openai({"role": "assistant", "content": "x"})
    with pytest.raises(ValueError, match="data: URL"):
        user_message_from_openai(
            {"content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}]}
        )
    with pytest.raises(ValueError, match="unknown user content part"):
        user_message_from_openai({"content": [{"type": "audio"}]})
    # a PDF goes out as a `file` part and comes back from one as it was
    pdf = UserMessage([TextContent("read"), DocumentContent("JVBERi0xLjQK", name="a.pdf")])
    [sent] = format_openai_messages(AgentContext("", [pdf], []))["messages"]
    assert user_message_from_openai(sent).content == pdf.content
