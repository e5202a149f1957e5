"""Tool-call budgets, prompts and what a session sends on, as CAMEL and mastra check
theirs.

CAMEL (test/agents/test_chat_agent_max_tool_calls.py, test_chat_agent_empty_input.py,
test_tool_call_id_truncation.py): a batch past the tool-call budget, the budget per
step, the values a budget takes, empty prompts, and a call id past OpenAI's 40
characters. mastra (packages/core/src/agent/__tests__/persist-partial-on-abort.test.ts,
execution-timeout.test.ts): an answer aborted mid-stream and what the session keeps and
sends on, and a model that sends nothing. The model is the
faux provider, or an OpenAI-compatible server on 127.0.0.1 where what goes over the wire
is the point; the session is a SQLite file. Choices are in docs/agent.md ("Runs, as
peers check them")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import (
    Agent,
    AgentEvent,
    AgentRunError,
    AgentTool,
    ConfigError,
    FallbackModel,
    MessageInputError,
    SqliteSessionStore,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_stall, faux_tool_call
from yiemagent.types import Model, text_of


def counted_tools(names: str, executed: list[str]) -> list[AgentTool]:
    """One tool per letter of `names`; each records its name in `executed` when it runs."""

    def make(name: str) -> AgentTool:
        def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
            executed.append(name)
            return f"{name} result"

        return AgentTool(f"tool_{name}", name, f"Tool {name}.", {"type": "object"}, execute)

    return [make(n) for n in names]


# ── CAMEL: the tool-call budget ─────────────────────────────────────────────


async def test_a_batch_past_the_budget_runs_up_to_it_and_answers_every_call() -> None:
    # test_max_tool_calls_partial_batch_rejects_remaining_calls: budget 2, four calls.
    # CAMEL then asks the model again without tools; ours ends the run (docs/agent.md).
    executed: list[str] = []
    calls = [faux_tool_call(f"tool_{n}", {}, id=f"call_{n}") for n in "abcd"]
    fm = FauxModel([faux_message(*calls), "Done."])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=counted_tools("abcd", executed),
        tool_execution="sequential",
        usage_limits=UsageLimits(max_tool_calls=2),
    )

    with pytest.raises(UsageLimitExceeded, match=r"max_tool_calls=2 \(used 2 tool calls\)"):
        await agent.prompt("Run all four tools.")

    assert executed == ["a", "b"] and fm.call_count == 1
    answered = [
        (m.tool_call_id, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]
    skipped = "not executed: usage limit reached: max_tool_calls=2 (used 2 tool calls)"
    assert answered == [
        ("call_a", False, "a result"),
        ("call_b", False, "b result"),
        ("call_c", True, skipped),
        ("call_d", True, skipped),
    ]


async def test_the_budget_is_per_prompt() -> None:
    # test_max_tool_calls_resets_between_steps
    executed: list[str] = []
    fm = FauxModel(
        [
            faux_message(faux_tool_call("tool_a", {})),
            "Done.",
            faux_message(faux_tool_call("tool_a", {})),
            "Done again.",
        ]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=counted_tools("a", executed),
        usage_limits=UsageLimits(max_tool_calls=1),
    )

    first = await agent.prompt("Run the tool.")
    second = await agent.prompt("Run the tool again.")

    assert executed == ["a", "a"]
    assert (first.text, second.text) == ("Done.", "Done again.")


@pytest.mark.parametrize("value", [None, 0, 1, 100])
def test_a_budget_takes_none_or_a_whole_number(value: int | None) -> None:
    # test_max_tool_calls_accepts_valid_values; zero is a limit here (pydantic-ai's reading),
    # where CAMEL refuses it
    assert UsageLimits(max_tool_calls=value).max_tool_calls == value


@pytest.mark.parametrize("value", [-1, 1.5, "5", True, False])
def test_a_budget_refuses_what_is_no_count(value: Any) -> None:
    # test_max_tool_calls_rejects_invalid_values (bools too, though Python counts them ints)
    with pytest.raises(ConfigError, match=r"UsageLimits\.max_tool_calls must be"):
        UsageLimits(max_tool_calls=value)


# ── CAMEL: empty prompts ────────────────────────────────────────────────────


@pytest.mark.parametrize("text", ["", "   "], ids=["empty", "whitespace"])
async def test_an_empty_prompt_is_sent_as_written(text: str) -> None:
    # test_step_with_empty_string / _whitespace: CAMEL answers with info["error"] and no model
    # call; ours asks the model (a provider that refuses empty text gets a placeholder,
    # docs/providers.md), so the transcript stays what the caller sent
    fm = FauxModel(["How can I help?"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)

    reply = await agent.prompt(text)

    assert reply.text == "How can I help?" and fm.call_count == 1
    assert text_of(fm.contexts[0].messages[0].content) == text


async def test_no_prompt_at_all_is_refused_with_one_message() -> None:
    # test_step_with_none_input
    fm = FauxModel(["unused"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn)

    with pytest.raises(MessageInputError, match="not NoneType"):
        await agent.prompt(None)  # type: ignore[call-overload]

    assert fm.call_count == 0 and agent.state.messages == []
    assert (await agent.prompt("hi")).text == "unused"  # still usable


# ── CAMEL: a long call id over the wire ─────────────────────────────────────


def call_chunks(call_id: str, name: str) -> list[str]:
    delta = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": "{}"},
    }
    return openai_chunks({"role": "assistant", "tool_calls": [delta]}, finish_reason="tool_calls")


@pytest.mark.parametrize(
    "call_id",
    ["call_" + "x" * 60, "call_" + "b" * 35, "call_abc123"],
    ids=["65-characters", "40-characters", "short"],
)
async def test_a_call_id_reaches_openai_within_40_characters_and_paired(call_id: str) -> None:
    # test_batch_response_truncates_long_id_on_openai / ..._preserves_boundary_id / short_id
    executed: list[str] = []
    with ReplayServer() as server:
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        server.enqueue(
            sse_reply(call_chunks(call_id, "tool_a")),
            sse_reply(openai_chunks({"role": "assistant", "content": "Done."})),
        )
        agent = Agent(model=model, tools=counted_tools("a", executed))

        reply = await agent.prompt("go")
        body = server.requests[1].body

    assert reply.text == "Done." and executed == ["a"]
    [assistant] = [m for m in body["messages"] if m["role"] == "assistant"]
    [tool] = [m for m in body["messages"] if m["role"] == "tool"]
    sent_id = assistant["tool_calls"][0]["id"]
    assert tool["tool_call_id"] == sent_id and len(sent_id) <= 40
    if len(call_id) <= 40:
        assert sent_id == call_id  # an id OpenAI accepts is sent as the model wrote it


async def test_two_long_call_ids_alike_in_their_first_40_characters_stay_apart() -> None:
    # CAMEL cuts an id to its first 40 characters, so two such ids would answer each
    # other's call; ours maps each id to its own (docs/providers.md)
    executed: list[str] = []
    prefix = "call_" + "x" * 40
    deltas = [
        {
            "index": i,
            "id": prefix + suffix,
            "type": "function",
            "function": {"name": f"tool_{name}", "arguments": "{}"},
        }
        for i, (suffix, name) in enumerate([("_one", "a"), ("_two", "b")])
    ]
    with ReplayServer() as server:
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        server.enqueue(
            sse_reply(
                openai_chunks(
                    {"role": "assistant", "tool_calls": deltas}, finish_reason="tool_calls"
                )
            ),
            sse_reply(openai_chunks({"role": "assistant", "content": "Done."})),
        )
        agent = Agent(model=model, tools=counted_tools("ab", executed))
        await agent.prompt("go")
        body = server.requests[1].body

    [assistant] = [m for m in body["messages"] if m["role"] == "assistant"]
    sent = [(c["id"], c["function"]["name"]) for c in assistant["tool_calls"]]
    answers = {m["tool_call_id"]: m["content"] for m in body["messages"] if m["role"] == "tool"}
    assert len({i for i, _ in sent}) == 2 and all(len(i) <= 40 for i, _ in sent)
    assert [answers[i] for i, _ in sent] == ["a result", "b result"]
    assert sorted(executed) == ["a", "b"]


# ── mastra: an answer aborted mid-stream ────────────────────────────────────


async def test_an_aborted_answer_is_kept_in_the_session_and_never_sent_on(
    tmp_path: Path,
) -> None:
    # persistPartialOnAbort: mastra keeps nothing by default and the partial text when asked;
    # ours keeps the aborted message (what the user saw) and never sends it to a model
    store = SqliteSessionStore(tmp_path / "memory.db")
    fm = FauxModel(["hello world partial answer"], chunk_size=6, delay_s=0.02)
    first = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="t")
    updates = 0

    def abort_after_two(event: AgentEvent, signal: Any) -> None:
        nonlocal updates
        if event.type == "message_update":
            updates += 1
            if updates == 2:
                first.abort()

    first.subscribe(abort_after_two)
    reply = await first.prompt("Hello")
    store.close()

    assert reply.stop_reason == "aborted"
    assert reply.text.startswith("hello") and reply.text != "hello world partial answer"

    with ReplayServer() as server:
        server.enqueue(sse_reply(openai_chunks({"role": "assistant", "content": "Hi again."})))
        model = Model(
            id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1"
        )
        store = SqliteSessionStore(tmp_path / "memory.db")
        second = Agent(model=model, session_store=store, session_id="t")
        kept = [(m.role, getattr(m, "stop_reason", None)) for m in second.state.messages]
        await second.prompt("again")
        store.close()
        body = server.requests[0].body

    assert kept == [("user", None), ("assistant", "aborted")]
    wire = [(m["role"], m["content"]) for m in body["messages"] if m["role"] != "system"]
    assert wire == [("user", "Hello"), ("user", "again")]


async def test_an_abort_before_any_text_leaves_an_empty_aborted_message(tmp_path: Path) -> None:
    # does not save empty text even when persistPartialOnAbort is true: ours records that the
    # answer was aborted, with no text, so the session says what happened
    store = SqliteSessionStore(tmp_path / "memory.db")
    fm = FauxModel([faux_stall(after_chunks=0)])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=store, session_id="t")
    started = asyncio.Event()
    agent.subscribe(lambda e, s: started.set() if e.type == "message_start" else None)

    run = asyncio.create_task(agent.prompt("Hello"))
    await asyncio.wait_for(started.wait(), timeout=30)
    agent.abort()
    reply = await asyncio.wait_for(run, timeout=30)
    store.close()

    assert reply.stop_reason == "aborted" and reply.text == ""
    reopened = SqliteSessionStore(tmp_path / "memory.db")
    again = Agent(model=fm.model, stream_fn=fm.stream_fn, session_store=reopened, session_id="t")
    assert [(m.role, text_of(getattr(m, "content", []))) for m in again.state.messages] == [
        ("user", "Hello"),
        ("assistant", ""),
    ]
    reopened.close()


# ── mastra: a model that does not answer ────────────────────────────────────


async def test_a_silent_model_fails_the_run_at_the_idle_limit() -> None:
    # execution-timeout.test.ts, strategy "fail": mastra bounds the whole run
    # (maxExecutionMs); ours bounds the silence of each model stream (docs/agent.md)
    slow = FauxModel([faux_stall(after_chunks=0)], model_id="slow-model")
    agent = Agent(model=slow.model, stream_idle_timeout_s=0.3)

    with pytest.raises(AgentRunError, match=r"^The model stream sent nothing for 0\.3 s$"):
        await agent.prompt("hello")

    slow.add("slow response")
    assert (await agent.prompt("hello")).text == "slow response"  # still usable


async def test_a_silent_model_falls_back_to_the_next() -> None:
    # strategy "fallback-model": the next model of a FallbackModel answers
    slow = FauxModel([faux_stall(after_chunks=0)], model_id="slow-primary")
    fast = FauxModel(["fallback response"], model_id="fast-fallback")
    agent = Agent(model=FallbackModel([slow.model, fast.model]), stream_idle_timeout_s=0.3)

    reply = await agent.prompt("hello")

    assert (reply.text, reply.model) == ("fallback response", "fast-fallback")
    assert (slow.call_count, fast.call_count) == (1, 1)
