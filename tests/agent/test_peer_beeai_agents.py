"""Agents and tools as beeai-framework checks its own (python/tests/agents/
test_tool_calling_agent.py and test_lite_agent.py, tests/tools/test_decorator.py,
tests/middleware/test_stream_tool_call.py), on the faux provider and a real SQLite session
store.

beeai's ToolCallingAgent always offers a `final_answer` tool; ours offers `final_result`
when the run has an output type, and a plain run ends on a text answer. Where ours differs
it is by choice: a run that reaches `max_turns` returns its last message (beeai raises
`AgentError`), and raises only when it has an output type it could not fill
(docs/agent.md, Queues); `@tool` on a function with no docstring describes it by its name
(beeai refuses it; docs/tools.md)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import (
    Agent,
    AgentContext,
    AgentRunError,
    AssistantMessage,
    ToolResultMessage,
    UserMessage,
    tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import text_of


def weather_tool(city: str) -> str:
    """Tell the weather in a city."""
    return f"sunny in {city}"


class Answer(BaseModel):
    text: str


def faux_agent(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)


async def test_a_final_answer_returns_at_once() -> None:
    # test_returns_final_answer_directly
    fm = FauxModel(["The answer is 42"])
    reply = await faux_agent(fm).prompt("What is the answer?")
    assert reply.text == "The answer is 42" and fm.call_count == 1


async def test_a_tool_then_the_final_answer() -> None:
    # test_executes_tool_then_final_answer
    fm = FauxModel(
        [faux_message(faux_tool_call("weather_tool", {"city": "Prague"})), "It is sunny in Prague"]
    )
    agent = faux_agent(fm, tools=[tool(weather_tool)])
    reply = await agent.prompt("What is the weather in Prague?")
    assert reply.text == "It is sunny in Prague" and fm.call_count == 2
    results = [text_of(m.content) for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert results == ["sunny in Prague"]


async def test_the_output_tool_is_offered_beside_the_agents_tools() -> None:
    # test_final_answer_tool_is_always_offered
    fm = FauxModel([faux_message(faux_tool_call("final_result", {"text": "done"}))])
    agent = faux_agent(fm, tools=[tool(weather_tool)], output_type=Answer)
    reply = await agent.prompt("anything")
    assert reply.output == Answer(text="done")
    assert {t.name for t in fm.contexts[0].tools} == {"weather_tool", "final_result"}


async def test_the_turn_bound_ends_a_model_that_never_answers() -> None:
    # test_raises_when_max_iterations_exceeded: distinct calls, never an answer
    calls = [faux_message(faux_tool_call("weather_tool", {"city": c})) for c in ("Prague", "Brno")]
    fm = FauxModel([*calls, *calls])
    agent = faux_agent(fm, tools=[tool(weather_tool)], max_turns=2)
    reply = await agent.prompt("solve this")
    assert fm.call_count == 2 and reply.stop_reason == "toolUse"
    with pytest.raises(AgentRunError, match="max_turns"):
        await agent.prompt("again", output_type=Answer)
    assert fm.call_count == 4


async def test_the_conversation_is_kept_in_the_agent_and_its_session(tmp_path: Path) -> None:
    # test_conversation_is_persisted_to_memory, and read back by a new agent
    store = SqliteSessionStore(str(tmp_path / "sessions.db"))
    fm = FauxModel(
        [faux_message(faux_tool_call("weather_tool", {"city": "Prague"})), "hello there", "again"]
    )
    agent = faux_agent(fm, tools=[tool(weather_tool)], session_store=store, session_id="s1")
    assert agent.state.messages == []
    await agent.prompt("hi")
    kinds = [type(m) for m in agent.state.messages]
    assert kinds == [UserMessage, AssistantMessage, ToolResultMessage, AssistantMessage]
    [call] = agent.state.messages[1].tool_calls  # type: ignore[union-attr]
    assert call.name == "weather_tool"
    await agent.close()

    reopened = SqliteSessionStore(str(tmp_path / "sessions.db"))
    again = faux_agent(fm, tools=[tool(weather_tool)], session_store=reopened, session_id="s1")
    await again.prompt("and now?")
    assert [type(m) for m in again.state.messages][:4] == kinds
    assert text_of(fm.contexts[-1].messages[0].content) == "hi"  # the model read it all
    await again.close()


async def test_an_agent_offered_as_a_tool_runs_on_a_copy() -> None:
    # test_cloning_the_agent_does_not_share_model_state: each call runs a fresh copy, and
    # the original's transcript stays empty
    child_fm = FauxModel(["from the copy", "from the copy"])
    child = Agent(name="child", model=child_fm.model, stream_fn=child_fm.stream_fn)
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("child", {"input": "a"}), faux_tool_call("child", {"input": "b"})
            ),
            "done",
        ]
    )
    parent = faux_agent(fm, tools=[child.as_tool()])
    await parent.prompt("go")
    results = [
        text_of(m.content) for m in parent.state.messages if isinstance(m, ToolResultMessage)
    ]
    assert results == ["from the copy", "from the copy"]
    assert child.state.messages == []
    assert [len(c.messages) for c in child_fm.contexts] == [1, 1]  # neither saw the other


async def test_tools_with_no_parameters_or_no_docstring() -> None:
    # test_tool_annotation_no_params / _empty_desc / _no_desc
    def no_params() -> str:
        """Say hello."""
        return "Hello!"

    def empty_doc() -> str:
        """"""
        return "Hello!"

    def no_doc(query: str) -> str:
        return query

    made = [tool(no_params), tool(empty_doc), tool(no_doc)]
    assert [m.description for m in made] == ["Say hello.", "Empty doc", "No doc"]
    assert made[0].input_schema == {"type": "object", "properties": {}}
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("no_params", {}),
                faux_tool_call("empty_doc", {}),
                faux_tool_call("no_doc", {"query": "Hello!"}),
            ),
            "ok",
        ]
    )
    agent = faux_agent(fm, tools=made)
    await agent.prompt("go")
    results = [text_of(m.content) for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert results == ["Hello!", "Hello!", "Hello!"]


async def test_a_streamed_calls_arguments_grow_in_the_updates() -> None:
    # test_process_delta_tracks_incremental_output: each update's arguments are a dict
    # that grows to the final call's, never an empty step back
    fm = FauxModel(
        [
            faux_message(faux_tool_call("weather_tool", {"city": "Ceske Budejovice"})),
            "sunny",
        ],
        chunk_size=3,
    )
    agent = faux_agent(fm, tools=[tool(weather_tool)])
    seen: list[str] = []

    def listen(event: Any, signal: Any) -> None:
        if event.type == "message_update":
            delta = event.assistant_message_event
            if delta.type == "toolcall_delta":
                [call] = delta.partial.tool_calls
                seen.append(call.arguments.get("city", ""))

    agent.subscribe(listen)
    await agent.prompt("weather?")
    assert len(seen) > 2 and seen[-1] == "Ceske Budejovice"
    assert all(later.startswith(earlier) for earlier, later in pairwise(seen))


async def test_a_hidden_tool_leaves_the_others_and_the_output_tool_offered() -> None:
    # test_hidden_tool_does_not_disable_other_tools (RequirementAgent's hidden rule)
    def alpha_tool() -> str:
        """Dummy tool used for tests."""
        return "alpha"

    def beta_tool() -> str:
        """Dummy tool used for tests."""
        return "beta"

    def hide_beta(state: Any) -> AgentContext:
        offered = [t for t in state.tools if t.name != "beta_tool"]
        return AgentContext(state.system_prompt, state.messages, offered)

    fm = FauxModel(
        [
            faux_message(faux_tool_call("alpha_tool", {}), faux_tool_call("beta_tool", {})),
            faux_message(faux_tool_call("final_result", {"text": "alpha"})),
        ]
    )
    agent = faux_agent(
        fm, tools=[tool(alpha_tool), tool(beta_tool)], prepare_context=hide_beta, output_type=Answer
    )
    assert (await agent.prompt("go")).output == Answer(text="alpha")
    assert [t.name for t in fm.contexts[0].tools] == ["alpha_tool", "final_result"]
    alpha, beta, output = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert output.tool_name == "final_result" and not output.is_error
    assert (alpha.is_error, text_of(alpha.content)) == (False, "alpha")
    assert beta.is_error and 'Tool "beta_tool" not found' in text_of(beta.content)
