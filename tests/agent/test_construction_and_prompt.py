"""DESIGN R-6.1 (construction), R-6.2 (state reduced from events), R-6.3 (prompt, terminate,
busy, resume) through the public API on the faux provider."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import Any

import pytest

from yiemagent import (
    AbortSignal,
    AfterToolCallResult,
    Agent,
    AgentBusyError,
    AgentToolResult,
    AssistantMessage,
    ConfigError,
    ImageContent,
    ToolResultMessage,
    ToolStore,
    UserMessage,
)
from yiemagent.agent import AgentRunError
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.tools import list_tools_tool, write_tool_tool
from yiemagent.types import text_of

from ._kit import EventWaiter, faux_agent, make_tool, user_texts

# ── construction ──────────────────────────────────────────────────────


def test_r6_1_defaults_and_no_model_loaded_at_construction() -> None:
    agent = Agent(llm_call=lambda formatted: {"role": "assistant", "content": "hi"})
    assert agent.state.system_prompt == "You are a helpful assistant."
    assert agent.state.model is None
    assert agent.state.messages == []
    assert agent.state.tools == []
    assert agent.state.active_run is False


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"system_prompt": 3}, "system_prompt"),
        ({"model": 5}, "model must be a model id"),
        ({"tools": [object()]}, "not a tool"),
        ({"tools": 5}, "tools must be"),
        ({"llm_call": "call"}, "llm_call must be a function"),
        ({"tool_execution": "fast"}, "tool_execution"),
        ({"steering_mode": "some"}, "steering_mode"),
        ({"follow_up_mode": 1}, "follow_up_mode"),
        ({"max_turns": 0}, "max_turns"),
        ({"tool_timeout_s": "30"}, "tool_timeout_s must be > 0 seconds"),
        ({"tool_timeout_s": True}, "tool_timeout_s must be > 0 seconds"),
        ({"stream_idle_timeout_s": "120"}, "stream_idle_timeout_s must be > 0 seconds"),
        ({"max_parallel_tools": True}, "max_parallel_tools"),
        ({"max_retry_delay_ms": -1}, "max_retry_delay_ms"),
        ({"messages": "hello"}, "messages"),
        ({"messages": [42]}, "not a message"),
        ({"tool_store": {}}, "tool_store must be a ToolStore"),
        ({"llm_call": print, "stream_fn": print}, "either stream_fn or llm_call"),
        ({"format_messages": print}, "only applies with llm_call"),
    ],
)
def test_r6_1_invalid_arguments_raise_config_error_saying_what(
    kwargs: dict[str, Any], says: str
) -> None:
    with pytest.raises(ConfigError, match=says):
        Agent(**kwargs)


def test_r6_1_tools_are_copied_from_lists_and_dicts() -> None:
    tool = make_tool("a", lambda *args: "ok")
    tools = [tool]
    by_name = {"a": tool}
    from_list = Agent(tools=tools, llm_call=print)
    from_dict = Agent(tools=by_name, llm_call=print)
    tools.append(make_tool("b", lambda *args: "ok"))
    by_name["b"] = make_tool("b", lambda *args: "ok")
    assert [t.name for t in from_list.state.tools] == ["a"]
    assert [t.name for t in from_dict.state.tools] == ["a"]
    assert from_list.tool_store is not from_dict.tool_store


def test_r6_1_a_tool_store_is_the_agents_own_store() -> None:
    store = ToolStore("mine")
    agent = Agent(tool_store=store, tools=[make_tool("a", lambda *args: "ok")], llm_call=print)
    store.register(make_tool("late", lambda *args: "ok"))
    assert [t.name for t in agent.state.tools] == ["a", "late"]


async def test_r6_1_tool_registered_mid_run_is_offered_and_runs_next_turn() -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("install", {})),
            faux_message(faux_tool_call("fresh", {})),
            "done",
        ]
    )
    agent = faux_agent(fm)

    def install(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> AgentToolResult:
        agent.tool_store.register(make_tool("fresh", lambda *a: "fresh ran"))
        return AgentToolResult.text("installed", added_tool_names=["fresh"])

    agent.tool_store.register(make_tool("install", install))
    answer = await agent.prompt("go")
    assert answer.text == "done"
    assert [t.name for t in fm.contexts[0].tools or []] == ["install"]
    assert [t.name for t in fm.contexts[1].tools or []] == ["install", "fresh"]
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error, text_of(r.content)) for r in results] == [
        ("install", False, "installed"),
        ("fresh", False, "fresh ran"),
    ]


async def test_r6_1_write_tool_mid_run_then_the_new_tool_on_the_next_turn(tmp_path: Path) -> None:
    spec = {
        "name": "addNumbers",
        "label": "Add numbers",
        "description": "Adds a and b.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "executeCode": "return str(args['a'] + args['b'])",
    }
    fm = FauxModel(
        [
            faux_message(faux_tool_call("writeTool", spec, id="w1")),
            faux_message(faux_tool_call("addNumbers", {"a": 2, "b": 3}, id="a1")),
            "5",
        ]
    )
    agent = faux_agent(fm)
    agent.tool_store.register(write_tool_tool(agent.tool_store, tmp_path))
    assert (await agent.prompt("add 2 and 3")).text == "5"
    written, added = (m for m in agent.state.messages if isinstance(m, ToolResultMessage))
    assert written.added_tool_names == ["addNumbers"], text_of(written.content)
    assert (added.is_error, text_of(added.content)) == (False, "5")
    assert [t.name for t in agent.state.tools] == ["writeTool", "addNumbers"]


async def test_r6_1_model_none_resolves_the_embedded_model_on_first_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import yiemagent.ai.models as models

    fm = FauxModel(["from the default model"])
    asked: list[str] = []

    def fake_get_model(name: str, **kwargs: Any) -> Any:
        asked.append(name)
        return fm.model  # api "faux": yiemagent.ai.stream reaches this FauxModel

    monkeypatch.setattr(models, "get_model", fake_get_model)
    agent = Agent()
    assert asked == []
    answer = await agent.prompt("hi")
    assert answer.text == "from the default model"
    assert asked == ["local/qwen2.5-coder-0.5b"]
    assert agent.state.model == fm.model


# ── state ─────────────────────────────────────────────────────────────


async def test_r6_2_state_is_reduced_from_events() -> None:
    fm = FauxModel([faux_message(faux_tool_call("t", {}, id="c1")), "answer"])
    agent = faux_agent(fm, tools=[make_tool("t", lambda *a: "ok")])
    seen: list[tuple[str, Any]] = []

    def listener(event: Any, signal: Any) -> None:
        state = agent.state
        if event.type == "agent_start":
            seen.append(("active", state.active_run))
        elif event.type == "message_update":
            seen.append(("streaming", state.streaming_message is event.message))
        elif event.type == "tool_execution_start":
            seen.append(("pending", set(state.pending_tool_calls)))
        elif event.type == "tool_execution_end":
            seen.append(("pending_end", set(state.pending_tool_calls)))
        elif event.type == "message_end":
            seen.append(("last", state.messages[-1] is event.message))

    agent.subscribe(listener)
    await agent.prompt("go")
    assert ("active", True) in seen
    assert ("streaming", True) in seen and ("streaming", False) not in seen
    assert ("pending", {"c1"}) in seen
    assert ("pending_end", set()) in seen
    assert all(ok for kind, ok in seen if kind == "last")
    state = agent.state
    assert state.active_run is False
    assert state.streaming_message is None
    assert state.pending_tool_calls == set()
    assert [m.role for m in state.messages] == ["user", "assistant", "toolResult", "assistant"]


async def test_r6_2_error_message_comes_from_an_error_assistant_message() -> None:
    fm = FauxModel([faux_message(faux_text("partial"), stop_reason="error")])
    agent = faux_agent(fm)
    with pytest.raises(AgentRunError) as raised:
        await agent.prompt("go")
    answer = raised.value.message
    assert answer.stop_reason == "error"
    assert agent.state.error_message == answer.error_message
    assert agent.state.error_message


def test_r6_2_assigning_messages_copies() -> None:
    agent = Agent(llm_call=print)
    mine: list[Any] = [UserMessage("one")]
    agent.state.messages = mine
    mine.append(UserMessage("two"))
    assert user_texts(agent.state.messages) == ["one"]
    assert agent.state.messages is not mine


# ── prompt ────────────────────────────────────────────────────────────


async def test_r6_3_prompt_returns_the_final_message_and_accepts_each_input_form() -> None:
    fm = FauxModel(["a", "b", "c", "d"])
    agent = faux_agent(fm)
    image = ImageContent(data="aGk=", mime_type="image/png")
    assert (await agent.prompt("text", images=[image])).text == "a"
    assert (await agent.prompt(UserMessage("message"))).text == "b"
    assert (await agent.prompt({"role": "user", "content": "openai"})).text == "c"
    assert (await agent.prompt([UserMessage("x"), UserMessage("y")])).text == "d"
    assert user_texts(agent.state.messages) == ["text", "message", "openai", "x", "y"]
    first = agent.state.messages[0]
    assert isinstance(first, UserMessage) and first.content[1] == image
    with pytest.raises(ValueError, match="images go with a text prompt"):
        await agent.prompt(UserMessage("m"), images=[image])


async def test_r6_3_terminate_returns_tool_use_terminated_not_added_to_history() -> None:
    fm = FauxModel([faux_message(faux_tool_call("a", {}), faux_tool_call("b", {}))])

    def done(text: str) -> Any:
        return lambda *args: AgentToolResult.text(text, terminate=True)

    agent = faux_agent(fm, tools=[make_tool("a", done("deployed")), make_tool("b", done("sent"))])
    answer = await agent.prompt("ship it")
    assert answer.stop_reason == "tool_use_terminated"
    assert [b.text for b in answer.content] == [  # type: ignore[union-attr]
        "Tool execution completed.",
        "deployed",
        "sent",
    ]
    assert answer.error_message is None
    assert answer.model == "faux"
    assert fm.call_count == 1
    assert [m.role for m in agent.state.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
    ]
    assert answer not in agent.state.messages


async def test_r6_3_terminate_with_a_failed_tool_says_so() -> None:
    fm = FauxModel([faux_message(faux_tool_call("ok", {}), faux_tool_call("boom", {}))])

    def boom(*args: Any) -> str:
        raise RuntimeError("disk full")

    agent = faux_agent(
        fm,
        tools=[make_tool("ok", lambda *a: "fine"), make_tool("boom", boom)],
        after_tool_call=lambda ctx, signal: AfterToolCallResult(terminate=True),
    )
    answer = await agent.prompt("go")
    assert answer.stop_reason == "tool_use_terminated"
    assert answer.error_message == "One or more tool calls failed"
    assert "disk full" in answer.text


async def test_r6_3_prompt_while_running_raises_busy_with_what_to_do() -> None:
    release = asyncio.Event()

    async def slow(*args: Any) -> str:
        await release.wait()
        return "slow done"

    fm = FauxModel([faux_message(faux_tool_call("slow", {})), "finished"])
    agent = faux_agent(fm, tools=[make_tool("slow", slow)])
    waiter = EventWaiter(agent)
    run = asyncio.create_task(agent.prompt("first"))
    await waiter.wait_for("tool_execution_start")
    with pytest.raises(AgentBusyError) as info:
        await agent.prompt("second")
    message = str(info.value)
    assert "steer" in message and "follow_up" in message and "wait" in message
    with pytest.raises(AgentBusyError):
        await agent.resume()
    release.set()
    assert (await run).text == "finished"
    assert user_texts(agent.state.messages) == ["first"]


async def test_r6_3_resume_continues_from_the_transcript() -> None:
    fm = FauxModel(["continued"])
    agent = faux_agent(fm, messages=[UserMessage("pending question")])
    waiter = EventWaiter(agent)
    answer = await agent.resume()
    assert answer.text == "continued"
    assert [e.type for e in waiter.events[:3]] == ["agent_start", "turn_start", "message_start"]
    first_message = waiter.events[2].message  # type: ignore[union-attr]
    assert isinstance(first_message, AssistantMessage)
    assert user_texts(fm.contexts[0].messages) == ["pending question"]
    with pytest.raises(ConfigError, match="nothing to resume"):
        await agent.resume()


def test_two_different_tools_with_one_name_in_tools_name_the_real_problem() -> None:
    """Both in the `tools` list (no tool_store given): the message must not talk about a
    tool_store the user never passed (a message that says what to change)."""
    from yiemagent import AgentTool, ConfigError

    def make(text: str) -> AgentTool:
        return AgentTool(
            name="calc",
            label="Calc",
            description=text,
            input_schema={"type": "object", "properties": {}},
            execute=lambda *args: text,
        )

    with pytest.raises(ConfigError) as info:
        Agent(tools=[make("a"), make("b")])
    message = str(info.value)
    assert "tool_store" not in message
    assert "'calc'" in message and "unique" in message


def test_r6_1_a_tool_store_given_as_tools_is_copied_r4_12() -> None:
    """`tools` is copied, also when it is a ToolStore; R-4.12: registering in one
    agent's store never shows in another's, nor in the store the agents were built from."""
    source = ToolStore("shared")
    source.register(make_tool("a", lambda *args: "ok"))
    source.register(list_tools_tool(source))
    first = Agent(tools=source, llm_call=print)
    second = Agent(tools=source, llm_call=print)
    assert first.tool_store is not source and first.tool_store is not second.tool_store
    first.tool_store.register(make_tool("only_first", lambda *args: "ok"))
    source.register(make_tool("only_source", lambda *args: "ok"))
    assert [t.name for t in first.state.tools] == ["a", "listTools", "only_first"]
    assert [t.name for t in second.state.tools] == ["a", "listTools"]


async def test_r4_14_copied_list_tools_lists_the_agents_own_store() -> None:
    source = ToolStore("shared")
    source.register(make_tool("a", lambda *args: "ok"))
    source.register(list_tools_tool(source))
    agent = Agent(tools=source, llm_call=print)
    agent.tool_store.register(make_tool("mine", lambda *args: "ok"))
    listing = agent.tool_store.tools["listTools"].execute("id", {}, AbortSignal(), print)
    result = await listing if inspect.isawaitable(listing) else listing
    text = result if isinstance(result, str) else result.content[0].text
    assert "mine" in text
