"""More cases google/adk-python checks (tests/unittests/flows/llm_flows: test_functions_simple,
test_functions_sequential, test_other_configs; tests/unittests/tools/test_function_tool.py;
tests/unittests/sessions/test_session_service.py), on our Agent with real SQLite sessions:
calls over several turns, each model request holding the whole history before it; what a
function returning nothing or an empty dict gives the model; every missing parameter named;
optional and keyword-only parameters left out; a callable object as a tool; a call the
model sent without an id; a structured answer; sessions: unknown, listed, cleared, an
image kept, a conversation continued after a run that failed; a transfer over two hops
(test_agent_transfer.py); an agent called as a tool, answering with its text or its
typed value (tools/test_agent_tool.py); and a model call answered before the model and
one changed after it (test_model_callbacks.py), by a `stream_fn` wrapping the model.

Where ours differs by choice: an object with `__call__` and no `__name__` needs a `name=`
(ADK names it after its class; docs/tools.md); a structured answer the schema refuses goes
back to the model (ADK hands the model's text on unchecked; docs/output.md); and a
long-running call's result cannot be handed in from outside, it is held for a decision
and runs its own tool (docs/approvals.md). After a transfer the agent handed to answers
the next prompt, whichever it is; ADK gives the next prompt back to the parent of an
agent that may not transfer back (`disallow_transfer_to_parent`), where ours has the
entry agent's `return_to_entry` (docs/teams.md)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import (
    Agent,
    AgentRunError,
    AssistantMessage,
    ConfigError,
    ImageContent,
    TextContent,
    ToolResultMessage,
    UserMessage,
    tool,
)
from yiemagent.ai import AssistantMessageEventStream, DoneEvent, ErrorEvent, stream
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of

PNG_1PX = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


def answered(agent: Agent[Any]) -> list[tuple[bool, str]]:
    return [
        (m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


def shape(messages: list[Any]) -> list[tuple[str, str]]:
    """(role, what it says) of each message: its text, its tool calls, or its result."""
    out: list[tuple[str, str]] = []
    for m in messages:
        if isinstance(m, AssistantMessage) and m.tool_calls:
            out.append(("assistant", ",".join(f"{c.name}{c.arguments}" for c in m.tool_calls)))
        else:
            out.append((m.role, text_of(m.content)))
    return out


async def test_calls_over_three_turns_send_the_whole_history_each_time() -> None:
    called = 0

    def increase_by_one(x: int) -> int:
        """Adds one."""
        nonlocal called
        called += 1
        return x + 1

    turns = [faux_message(faux_tool_call("increase_by_one", {"x": x})) for x in (1, 2, 3)]
    fm = FauxModel([*turns, "response1"])
    agent = faux_agent(fm, tools=[increase_by_one])
    reply = await agent.prompt("test")

    assert reply.text == "response1" and called == 3 and fm.call_count == 4
    call = "increase_by_one{'x': %d}"
    assert shape(fm.contexts[0].messages) == [("user", "test")]
    assert shape(fm.contexts[3].messages) == [
        ("user", "test"),
        ("assistant", call % 1),
        ("toolResult", "2"),
        ("assistant", call % 2),
        ("toolResult", "3"),
        ("assistant", call % 3),
        ("toolResult", "4"),
    ]
    for earlier, later in zip(fm.contexts, fm.contexts[1:], strict=False):
        assert shape(later.messages)[: len(earlier.messages)] == shape(earlier.messages)


async def test_a_function_returning_nothing_or_an_empty_dict_is_a_result_not_an_error() -> None:
    def function_returning_none() -> None:
        """Function for testing with no return value."""

    def function_returning_empty_dict() -> dict[str, str]:
        """Function for testing with empty dict return value."""
        return {}

    calls = [
        faux_tool_call("function_returning_none"),
        faux_tool_call("function_returning_empty_dict"),
    ]
    fm = FauxModel([faux_message(*calls), "done"])
    agent = faux_agent(fm, tools=[function_returning_none, function_returning_empty_dict])
    await agent.prompt("go")
    assert answered(agent) == [(False, "null"), (False, "{}")]


def four_args_sync(arg1: str, arg2: str, arg3: str, arg4: str) -> str:
    """Function for testing with 4 args."""
    return "ran"


async def four_args_async(arg1: str, arg2: str, arg3: str, arg4: str) -> str:
    """Async function for testing with 4 args."""
    return "ran"


@pytest.mark.parametrize("function", [four_args_sync, four_args_async])
@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ({"arg1": "v"}, ["arg2", "arg3", "arg4"]),
        ({"arg2": "v"}, ["arg1", "arg3", "arg4"]),
        ({}, ["arg1", "arg2", "arg3", "arg4"]),
    ],
)
async def test_every_missing_mandatory_parameter_is_named(
    function: Any, given: dict[str, str], missing: list[str]
) -> None:
    name = function.__name__
    fm = FauxModel([faux_message(faux_tool_call(name, given)), "done"])
    agent = faux_agent(fm, tools=[function])
    await agent.prompt("go")
    ((is_error, text),) = answered(agent)
    assert is_error
    named = [p for p in ("arg1", "arg2", "arg3", "arg4") if f"'{p}' is a required property" in text]
    assert named == missing
    assert f"Received: {json.dumps(given)}" in text


async def test_optional_and_keyword_only_parameters_left_out_take_their_defaults() -> None:
    def func_with_optional_args(
        arg1: str, arg2: str | None = None, *, arg3: str, arg4: str = "four"
    ) -> str:
        """Joins what it got."""
        return f"{arg1},{arg2},{arg3},{arg4}"

    fm = FauxModel(
        [
            faux_message(
                faux_tool_call(
                    "func_with_optional_args", {"arg1": "test_value_1", "arg3": "test_value_3"}
                )
            ),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[func_with_optional_args])
    await agent.prompt("go")
    assert answered(agent) == [(False, "test_value_1,None,test_value_3,four")]
    schema = fm.contexts[0].tools[0].input_schema
    assert sorted(schema["required"]) == ["arg1", "arg3"]


class AsyncCallableWith2Args:
    async def __call__(self, arg1: str, arg2: str) -> str:
        """Async call doc"""
        return arg1


async def test_a_callable_object_is_a_tool_once_it_has_a_name() -> None:
    with pytest.raises(ConfigError, match=r"name it with tool\(obj, name=\.\.\.\)"):
        faux_agent(FauxModel([]), tools=[AsyncCallableWith2Args()])  # no name= option here

    callable_tool = tool(AsyncCallableWith2Args(), name="async_callable")
    assert callable_tool.name == "async_callable"
    assert callable_tool.description == "Async call doc"
    fm = FauxModel(
        [
            faux_message(faux_tool_call("async_callable", {"arg1": "test_value_1", "arg2": "x"})),
            "done",
        ]
    )
    agent = faux_agent(fm, tools=[callable_tool])
    await agent.prompt("go")
    assert answered(agent) == [(False, "test_value_1")]


async def test_a_call_sent_without_an_id_gets_one_and_its_result_pairs_with_it() -> None:
    def increase_by_one(x: int) -> int:
        """Adds one."""
        return x + 1

    fm = FauxModel([faux_message(faux_tool_call("increase_by_one", {"x": 1}, id="")), "response1"])
    agent = faux_agent(fm, tools=[increase_by_one])
    await agent.prompt("test")
    call = next(m for m in agent.state.messages if isinstance(m, AssistantMessage)).tool_calls[0]
    result = next(m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    assert call.id != ""
    assert result.tool_call_id == call.id and text_of(result.content) == "2"


CUSTOM_OUTPUT = {
    "type": "object",
    "properties": {"custom_field": {"type": "string"}},
    "required": ["custom_field"],
}


async def test_a_structured_answer_is_checked_and_a_refused_one_asked_again() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"custom_field": 1})),
            faux_message(faux_tool_call("final_result", {"custom_field": "response1"})),
        ]
    )
    agent = faux_agent(fm)
    reply = await agent.prompt("test1", output_type=CUSTOM_OUTPUT)
    assert reply.output == {"custom_field": "response1"}
    first, second = answered(agent)
    assert first[0] and "$.custom_field: 1 is not of type 'string'" in first[1]
    assert not second[0]
    assert fm.contexts[0].tools[0].input_schema["properties"] == CUSTOM_OUTPUT["properties"]


async def test_an_unknown_session_is_empty_and_sessions_are_listed_and_cleared(
    tmp_path: Path,
) -> None:
    with SqliteSessionStore(tmp_path / "sessions.db") as store:
        assert store.load("123") == []
        for i in (2, 0, 1):  # listed in the order they were first written
            fm = FauxModel([f"answer {i}"])
            agent = faux_agent(fm, session_store=store, session_id=f"session{i}")
            await agent.prompt(f"question {i}")
            await agent.close()
        assert store.list_sessions() == ["session2", "session0", "session1"]
        assert shape(store.load("session1")) == [("user", "question 1"), ("assistant", "answer 1")]

        store.clear("session1")
        assert store.load("session1") == []
        assert store.list_sessions() == ["session2", "session0"]
        assert shape(store.load("session2"))[0] == ("user", "question 2")  # others untouched


async def test_an_image_in_a_prompt_is_stored_and_read_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    image = ImageContent(PNG_1PX, "image/png")
    with SqliteSessionStore(path) as store:
        agent = Agent(llm_call=lambda f: "a pixel", session_store=store, session_id="s")
        await agent.prompt("what is this?", images=[image])
        await agent.close()

    with SqliteSessionStore(path) as store:
        user = store.load("s")[0]
        assert isinstance(user, UserMessage)
        assert image in list(user.content)


async def test_a_conversation_goes_on_after_a_run_that_failed(tmp_path: Path) -> None:
    def increase_by_one(x: int) -> int:
        """Adds one."""
        return x + 1

    path = tmp_path / "sessions.db"
    failing = FauxModel(
        [
            faux_message(faux_tool_call("increase_by_one", {"x": 1})),
            faux_message(stop_reason="error", error_message="model overloaded"),
        ]
    )
    with SqliteSessionStore(path) as store:
        agent = faux_agent(failing, tools=[increase_by_one], session_store=store, session_id="s")
        with pytest.raises(AgentRunError, match="model overloaded"):
            await agent.prompt("test")
        await agent.close()

    sent: list[dict[str, Any]] = []

    def llm_call(formatted: dict[str, Any]) -> dict[str, Any]:
        sent.append(formatted)
        return {"role": "assistant", "content": "recovered"}

    with SqliteSessionStore(path) as store:
        stored = store.load("s")
        assert [m.role for m in stored] == ["user", "assistant", "toolResult", "assistant"]
        assert isinstance(stored[-1], AssistantMessage) and stored[-1].stop_reason == "error"

        agent = Agent(
            llm_call=llm_call, tools=[increase_by_one], session_store=store, session_id="s"
        )
        reply = await agent.prompt("again")
        await agent.close()
    assert reply.text == "recovered"
    wire = [(m["role"], m.get("content")) for m in sent[0]["messages"]]
    assert [role for role, _ in wire] == ["system", "user", "assistant", "tool", "user"]
    assert wire[3][1] == "2" and wire[-1] == ("user", "again")  # the failed reply is not sent


def scripted(name: str, responses: list[Any], **kwargs: Any) -> tuple[Agent[Any], FauxModel]:
    fm = FauxModel(responses)
    return Agent(f"You are {name}.", fm.model, stream_fn=fm.stream_fn, name=name, **kwargs), fm


async def test_a_transfer_chain_of_two_hops_ends_with_the_last_agent_answering_on() -> None:
    grandchild, grandchild_fm = scripted("sub_agent_1_1", ["response1", "response2"])
    child, child_fm = scripted(
        "sub_agent_1",
        [faux_message(faux_tool_call("transfer_to_sub_agent_1_1", {}))],
        handoffs=[grandchild],
    )
    root, root_fm = scripted(
        "root_agent",
        [faux_message(faux_tool_call("transfer_to_sub_agent_1", {}))],
        handoffs=[child],
    )

    first = await root.prompt("test1")
    assert (first.text, first.agent) == ("response1", "sub_agent_1_1")
    writers = [m.agent for m in root.state.messages if isinstance(m, AssistantMessage)]
    assert writers == ["root_agent", "sub_agent_1", "sub_agent_1_1"]
    assert [text_of(m.content) for m in root.state.messages if isinstance(m, UserMessage)] == [
        "test1"
    ]

    second = await root.prompt("test2")  # the agent handed to last answers on
    assert (second.text, second.agent) == ("response2", "sub_agent_1_1")
    assert (root_fm.call_count, child_fm.call_count, grandchild_fm.call_count) == (1, 1, 2)


async def test_an_agent_called_as_a_tool_answers_with_its_final_text() -> None:
    tool_agent, tool_fm = scripted("tool_agent", ["response1"])
    root_fm = FauxModel(
        [faux_message(faux_tool_call("tool_agent", {"input": "test1"}, id="c1")), "response2"]
    )
    root = faux_agent(root_fm, name="root_agent", tools=[tool_agent.as_tool()])
    reply = await root.prompt("test1")

    assert reply.text == "response2"
    assert answered(root) == [(False, "response1")]
    assert [text_of(m.content) for m in tool_fm.contexts[0].messages] == ["test1"]


class CustomOutput(BaseModel):
    custom_output: str


async def test_an_agent_tool_with_an_output_type_answers_with_its_value_as_json() -> None:
    tool_agent, tool_fm = scripted(
        "tool_agent",
        [faux_message(faux_tool_call("final_result", {"custom_output": "response1"}))],
        output_type=CustomOutput,
    )
    root_fm = FauxModel(
        [faux_message(faux_tool_call("tool_agent", {"input": "test1"})), "response2"]
    )
    root = faux_agent(root_fm, name="root_agent", tools=[tool_agent.as_tool(output="output")])
    reply = await root.prompt("test1")

    assert reply.text == "response2"
    ((is_error, text),) = answered(root)
    assert not is_error and json.loads(text) == {"custom_output": "response1"}
    offered = tool_fm.contexts[0].tools[0]
    assert offered.name == "final_result"
    assert offered.input_schema["properties"]["custom_output"]["type"] == "string"


def answered_from_cache(cache: dict[str, str]) -> Any:
    """A `stream_fn` that answers a question found in `cache` itself, and asks the model
    otherwise, upper-casing its text answer before the run sees it: ADK's
    before_model_callback and after_model_callback."""

    async def stream_fn(model: Any, context: Any, options: Any) -> AssistantMessageEventStream:
        question = text_of(context.messages[-1].content)
        out = AssistantMessageEventStream()
        if question in cache:
            out.push(DoneEvent("stop", AssistantMessage(cache[question], model=model.id)))
            return out
        message = await stream(model, context, options).result()
        if message.stop_reason == "stop":
            message = dataclasses.replace(message, content=[TextContent(message.text.upper())])
            out.push(DoneEvent("stop", message))
        else:
            out.push(ErrorEvent("error", message))
        return out

    return stream_fn


async def test_a_model_call_answered_before_the_model_and_one_changed_after_it() -> None:
    fm = FauxModel(["model_response"])
    agent = Agent(model=fm.model, stream_fn=answered_from_cache({"test": "before_model_callback"}))

    first = await agent.prompt("test")
    assert first.text == "before_model_callback" and fm.call_count == 0

    second = await agent.prompt("ask the model")
    assert second.text == "MODEL_RESPONSE" and fm.call_count == 1
    assert [text_of(m.content) for m in agent.state.messages] == [
        "test",
        "before_model_callback",
        "ask the model",
        "MODEL_RESPONSE",
    ]
    assert [text_of(m.content) for m in fm.contexts[0].messages][-2:] == [
        "before_model_callback",
        "ask the model",
    ]
