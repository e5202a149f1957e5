"""`UsageLimits` (DESIGN §13): each limit reached mid-batch and before a model call ends the
run with reason "usage_limit" and a message naming the limit and the amount used, with every
tool call answered."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, strategies as st

from tests.ai.servers import ReplayServer, openai_chunks, sse_reply
from yiemagent import (
    AbortSignal,
    Agent,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentLoopConfig,
    AgentRunError,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    ConfigError,
    ToolResultMessage,
    UsageLimitExceeded,
    UsageLimits,
    UserMessage,
    run_agent_loop,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import Cost, Model, Usage

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"n": {"type": "integer"}}}

# Each limit, and a usage that reaches it (tokens: input 600 / output 300; cost 0.06 USD).
LIMITS = {
    "max_input_tokens": (UsageLimits(max_input_tokens=500), "max_input_tokens=500 (used 600"),
    "max_output_tokens": (UsageLimits(max_output_tokens=250), "max_output_tokens=250 (used 300"),
    "max_total_tokens": (UsageLimits(max_total_tokens=800), "max_total_tokens=800 (used 900"),
    "max_cost_usd": (UsageLimits(max_cost_usd=0.05), "max_cost_usd=0.05 (used $0.060000"),
}
SPENT = Usage(input=600, output=300, total_tokens=900, cost=Cost(total=0.06))


def spending_tool(ran: list[int], usage: Usage | None = None, parallel: bool = False) -> AgentTool:
    """A tool that records each call and may report usage (as a sub-agent would)."""

    def execute(call_id: str, args: Any, signal: AbortSignal, on_update: Any) -> AgentToolResult:
        ran.append(args["n"])
        return AgentToolResult(content=f"done {args['n']}", usage=usage)

    return AgentTool("spend", "spend", "spends", SCHEMA, execute, parallel=parallel)


async def run(
    fm: FauxModel, tools: list[AgentTool], limits: UsageLimits, **config: Any
) -> tuple[list[AgentEvent], AgentContext]:
    context = AgentContext("sys", [], tools)
    events: list[AgentEvent] = []
    cfg = AgentLoopConfig(model=fm.model, usage_limits=limits, **config)
    await run_agent_loop([UserMessage("go")], context, cfg, events.append, None, fm.stream_fn)
    return events, context


def assert_stopped_by_limit(
    events: list[AgentEvent], context: AgentContext, text: str
) -> AssistantMessage:
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "usage_limit"
    last = context.messages[-1]
    assert isinstance(last, AssistantMessage) and last.stop_reason == "error"
    assert last.error_message is not None and last.error_message.startswith("usage limit reached")
    assert text in last.error_message
    assert events[-2].type == "turn_end"
    # every tool call has exactly one result, in order
    asked = [
        c.id for m in context.messages if isinstance(m, AssistantMessage) for c in m.tool_calls
    ]
    answered = [m.tool_call_id for m in context.messages if isinstance(m, ToolResultMessage)]
    assert answered == asked
    return last


@pytest.mark.parametrize("name", list(LIMITS))
async def test_token_and_cost_limits_reached_mid_batch(name: str) -> None:
    limits, text = LIMITS[name]
    ran: list[int] = []
    calls = [faux_tool_call("spend", {"n": n}) for n in range(3)]
    fm = FauxModel([faux_message(*calls), "never asked"])
    events, context = await run(fm, [spending_tool(ran, SPENT)], limits)
    assert ran == [0]  # the first call's reported usage reached the limit
    assert fm.call_count == 1
    assert_stopped_by_limit(events, context, text)
    results = [m for m in context.messages if isinstance(m, ToolResultMessage)]
    assert not results[0].is_error
    for skipped in results[1:]:
        assert skipped.is_error
        assert text in skipped.content[0].text  # type: ignore[union-attr]


@pytest.mark.parametrize("parallel", [False, True], ids=["sequential", "parallel"])
async def test_max_tool_calls_reached_mid_batch(parallel: bool) -> None:
    ran: list[int] = []
    calls = [faux_tool_call("spend", {"n": n}) for n in range(3)]
    fm = FauxModel([faux_message(*calls), "never asked"])
    events, context = await run(
        fm, [spending_tool(ran, parallel=parallel)], UsageLimits(max_tool_calls=2)
    )
    assert sorted(ran) == [0, 1] and fm.call_count == 1
    assert_stopped_by_limit(events, context, "max_tool_calls=2 (used 2 tool calls)")
    third = [m for m in context.messages if isinstance(m, ToolResultMessage)][2]
    assert third.is_error and "not executed: usage limit reached" in third.content[0].text  # type: ignore[union-attr]


async def test_exactly_max_tool_calls_lets_the_model_answer() -> None:
    ran: list[int] = []
    calls = [faux_tool_call("spend", {"n": n}) for n in range(2)]
    fm = FauxModel([faux_message(*calls), "the answer"])
    events, _ = await run(fm, [spending_tool(ran)], UsageLimits(max_tool_calls=2))
    end = events[-1]
    assert isinstance(end, AgentEndEvent) and end.reason == "stop"
    assert ran == [0, 1] and fm.call_count == 2


@pytest.mark.parametrize("name", list(LIMITS))
async def test_token_and_cost_limits_reached_before_a_model_call(name: str) -> None:
    limits, text = LIMITS[name]
    fm = FauxModel([faux_message(faux_text("first answer"), usage=SPENT), "never asked"])
    follow_ups = [[UserMessage("and one more thing")]]

    def follow_up() -> list[Any]:
        return follow_ups.pop() if follow_ups else []

    events, context = await run(fm, [], limits, get_follow_up_messages=follow_up)
    assert fm.call_count == 1  # the follow-up's model call was never made
    last = assert_stopped_by_limit(events, context, text)
    assert last is context.messages[-1]
    assert isinstance(context.messages[-2], UserMessage)  # the follow-up is in the transcript


async def test_token_limit_after_a_batch_stops_before_the_next_model_call() -> None:
    ran: list[int] = []
    fm = FauxModel([faux_message(faux_tool_call("spend", {"n": 1})), "never asked"])
    events, context = await run(fm, [spending_tool(ran, SPENT)], UsageLimits(max_total_tokens=800))
    assert ran == [1] and fm.call_count == 1
    assert_stopped_by_limit(events, context, "max_total_tokens=800 (used 900 tokens)")


async def test_agent_usage_limits() -> None:
    ran: list[int] = []
    calls = [faux_tool_call("spend", {"n": n}) for n in range(2)]
    fm = FauxModel([faux_message(*calls), "never asked"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[spending_tool(ran)],
        usage_limits=UsageLimits(max_tool_calls=1),
    )
    with pytest.raises(UsageLimitExceeded) as caught:
        await agent.prompt("go")
    assert isinstance(caught.value, AgentRunError)
    assert str(caught.value) == "usage limit reached: max_tool_calls=1 (used 1 tool calls)"
    reply = caught.value.message
    assert reply.stop_reason == "error"
    assert ran == [0]
    assert not agent.is_busy and agent.state.messages[-1] is reply


def test_usage_limits_are_checked() -> None:
    with pytest.raises(ConfigError, match="max_tool_calls"):
        UsageLimits(max_tool_calls=-1)
    with pytest.raises(ConfigError, match="whole number"):
        UsageLimits(max_input_tokens=1.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_cost_usd"):
        UsageLimits(max_cost_usd="1")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="usage_limits"):
        AgentLoopConfig(model=FauxModel([]).model, usage_limits={"max_tool_calls": 1})  # type: ignore[arg-type]
    assert UsageLimits(max_cost_usd=0).max_cost_usd == 0


_COUNTS = ("max_input_tokens", "max_output_tokens", "max_total_tokens", "max_tool_calls")
_NO_NUMBERS = st.one_of(
    st.booleans(),
    st.text(max_size=4),
    st.just(float("nan")),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


@given(st.sampled_from([*_COUNTS, "max_cost_usd"]), st.data())
def test_a_limit_given_no_number_says_a_number_is_needed(name: str, data: st.DataObject) -> None:
    """NaN, the one float no comparison holds for, was told it "must be >= 0": each limit
    given what is no number of its kind says the kind it needs, once."""
    bad = _NO_NUMBERS if name == "max_cost_usd" else _NO_NUMBERS | st.floats()
    value = data.draw(bad)
    kind = "a number of USD" if name == "max_cost_usd" else "a whole number"
    with pytest.raises(ConfigError) as raised:
        UsageLimits(**{name: value})
    assert str(raised.value) == f"UsageLimits.{name} must be {kind} or None, not {value!r}"


@given(st.sampled_from([*_COUNTS, "max_cost_usd"]), st.data())
def test_a_negative_limit_says_it_must_be_at_least_zero(name: str, data: st.DataObject) -> None:
    negative = st.integers(max_value=-1)
    if name == "max_cost_usd":
        negative |= st.floats(max_value=-1e-9, allow_nan=False)
    value = data.draw(negative)
    with pytest.raises(ConfigError) as raised:
        UsageLimits(**{name: value})
    assert str(raised.value) == f"UsageLimits.{name} must be >= 0, not {value!r}"


async def test_a_zero_cost_cap_allows_only_free_calls() -> None:
    ran: list[int] = []
    free = FauxModel([faux_message(faux_tool_call("spend", {"n": 1})), "free answer"])
    events, _ = await run(free, [spending_tool(ran)], UsageLimits(max_cost_usd=0))
    assert events[-1].type == "agent_end" and events[-1].reason == "stop"  # type: ignore[union-attr]
    priced = FauxModel([faux_message(faux_text("paid"), usage=SPENT), "never"])
    follow = [[UserMessage("more")]]
    events, context = await run(
        priced,
        [],
        UsageLimits(max_cost_usd=0),
        get_follow_up_messages=lambda: follow.pop() if follow else [],
    )
    assert_stopped_by_limit(events, context, "max_cost_usd=0 (used $0.060000")


async def test_a_cost_cap_over_a_model_without_a_price_is_said_once(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # nika#1368, Vigil-SOC/vigil#964: a model the price table does not know meters $0, so a
    # cost cap looks armed and never binds. Its calls still count as free (the price is
    # unknown, not zero), but the first such call under a cost cap is said, once per model.
    with ReplayServer() as server:
        server.enqueue(*(sse_reply(openai_chunks({"content": "ok"})) for _ in range(2)))
        hosted = Model(
            id="gpt-unlisted",
            provider="openai",
            api="openai-completions",
            base_url=server.url + "/v1",
        )
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdefghij")
        agent = Agent(model=hosted, usage_limits=UsageLimits(max_cost_usd=0.01))
        with caplog.at_level("WARNING", logger="yiemagent"):
            await agent.prompt("first")
            await agent.prompt("second")
    said = [r.getMessage() for r in caplog.records if "max_cost_usd" in r.getMessage()]
    assert said == [
        "UsageLimits.max_cost_usd: no price is known for openai/gpt-unlisted, so its calls "
        "count as free and the cost cap does not stop them (give the Model a cost, or "
        "install genai-prices for the catalogue's models)"
    ]
    caplog.clear()
    free = FauxModel([faux_message(faux_text("one"), usage=Usage(input=600, output=300))])
    here = Agent(
        model=free.model, stream_fn=free.stream_fn, usage_limits=UsageLimits(max_cost_usd=0)
    )
    with caplog.at_level("WARNING", logger="yiemagent"):
        await here.prompt("here")  # a model that runs here is free indeed: nothing to say
    assert not [r for r in caplog.records if "max_cost_usd" in r.getMessage()]
