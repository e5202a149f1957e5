"""Tool hooks as crewAI checks its own (tests/hooks/test_tool_hooks.py,
tests/agents/test_native_tool_calling.py's hook parity and usage-count cases,
tests/tools/test_structured_tool.py's "calls func only once"), through an Agent on the
faux provider with tools on real files. crewAI registers lists of hooks, lets a hook that
raises pass (fail-open), blocks on `False` and rewrites a result from a returned string,
and counts uses per tool; ours has one hook of each kind, answers a call whose hook raised
or returned something else with an error, and counts calls per run. Those choices are
written in docs/tools.md ("Hooks, as peers write them")."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import (
    AfterToolCallContext,
    AfterToolCallResult,
    Agent,
    AgentTool,
    BeforeToolCallContext,
    BeforeToolCallResult,
    TextContent,
    ToolCall,
    ToolExecutionStartEvent,
    ToolResultMessage,
    messages_to_json,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

PATH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"file_path": {"type": "string"}, "text": {"type": "string"}},
    "required": ["file_path"],
}


def file_tools(folder: Path) -> list[AgentTool]:
    """write_file and read_file inside `folder`."""

    def write_file(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        (folder / args["file_path"]).write_text(args.get("text", ""), encoding="utf-8")
        return f"wrote {args['file_path']}"

    def read_file(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        return "Content: " + (folder / args["file_path"]).read_text(encoding="utf-8")

    return [
        AgentTool("write_file", "write", "Write a file.", PATH_SCHEMA, write_file, parallel=True),
        AgentTool("read_file", "read", "Read a file.", PATH_SCHEMA, read_file, parallel=True),
    ]


def file_agent(folder: Path, *calls: ToolCall, **options: Any) -> tuple[Agent[Any], FauxModel]:
    """An agent with `file_tools(folder)` whose faux model makes `calls` in one turn, then
    answers "ok"; `options` are the Agent's (its hooks). Returns the agent and its model."""
    fm = FauxModel([faux_message(*calls), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=file_tools(folder), **options)
    return agent, fm


def write_a() -> ToolCall:
    """The model's call writing "x" to a.txt."""
    return faux_tool_call("write_file", {"file_path": "a.txt", "text": "x"})


def results(agent: Agent[Any]) -> list[tuple[str, bool, str]]:
    return [
        (m.tool_name, m.is_error, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]


async def test_a_before_hook_keeps_env_files_and_an_after_hook_redacts_secrets(
    tmp_path: Path,
) -> None:
    # test_hooks_with_validation_and_sanitization, on real files
    (tmp_path / "config.txt").write_text("SECRET_KEY=abc123", encoding="utf-8")

    def validate_file_path(ctx: BeforeToolCallContext, signal: Any) -> BeforeToolCallResult | None:
        if ctx.tool_call.name == "write_file" and ".env" in ctx.args["file_path"]:
            return BeforeToolCallResult(block=True, reason="writing .env files is not allowed")
        return None

    def sanitize_secrets(ctx: AfterToolCallContext, signal: Any) -> AfterToolCallResult | None:
        text = text_of(ctx.result.content)
        if "SECRET_KEY" not in text:
            return None
        redacted = text.replace("SECRET_KEY=abc123", "SECRET_KEY=[REDACTED]")
        return AfterToolCallResult(content=[TextContent(redacted)])

    agent, fm = file_agent(
        tmp_path,
        faux_tool_call("write_file", {"file_path": ".env", "text": "X=1"}),
        faux_tool_call("read_file", {"file_path": "config.txt"}),
        before_tool_call=validate_file_path,
        after_tool_call=sanitize_secrets,
    )

    await agent.prompt("go")

    assert not (tmp_path / ".env").exists()
    assert results(agent) == [
        ("write_file", True, "writing .env files is not allowed"),
        ("read_file", False, "Content: SECRET_KEY=[REDACTED]"),
    ]
    assert b"abc123" not in messages_to_json(agent.state.messages)  # nor in a session
    assert "abc123" not in str(fm.contexts[1].messages)  # nor sent to the model


async def test_a_before_hook_changes_the_args_the_tool_gets_not_the_call_the_model_wrote(
    tmp_path: Path,
) -> None:
    # test_tool_input_is_mutable_reference / test_before_hook_can_modify_input
    def move_into_out(ctx: BeforeToolCallContext, signal: Any) -> None:
        ctx.args["file_path"] = "out-" + ctx.args["file_path"]

    write = faux_tool_call("write_file", {"file_path": "a.txt", "text": "hi"})
    agent, fm = file_agent(tmp_path, write, before_tool_call=move_into_out)
    started: list[dict[str, Any]] = []
    agent.subscribe(
        lambda e, s: started.append(e.args) if isinstance(e, ToolExecutionStartEvent) else None
    )

    await agent.prompt("go")

    assert (tmp_path / "out-a.txt").read_text(encoding="utf-8") == "hi"
    assert not (tmp_path / "a.txt").exists()
    assert results(agent) == [("write_file", False, "wrote out-a.txt")]
    [call] = fm.contexts[1].messages[1].tool_calls  # type: ignore[union-attr]
    assert call.arguments == {"file_path": "a.txt", "text": "hi"}  # as the model wrote it
    assert started == [{"file_path": "a.txt", "text": "hi"}]


@pytest.mark.parametrize(
    ("after", "expected"),
    [
        pytest.param(lambda ctx, s: None, "Content: Original", id="none-keeps-the-result"),
        pytest.param(
            lambda ctx, s: AfterToolCallResult(
                content=[TextContent(text_of(ctx.result.content) + " [rewritten]")]
            ),
            "Content: Original [rewritten]",
            id="content-replaces-it",
        ),
    ],
)
async def test_an_after_hook_keeps_or_replaces_the_result(
    tmp_path: Path, after: Any, expected: str
) -> None:
    # test_after_hook_returns_none_keeps_original / test_after_hook_can_modify_result
    (tmp_path / "f.txt").write_text("Original", encoding="utf-8")
    read = faux_tool_call("read_file", {"file_path": "f.txt"})
    agent, _ = file_agent(tmp_path, read, after_tool_call=after)
    await agent.prompt("go")
    assert results(agent) == [("read_file", False, expected)]


async def test_several_after_hooks_are_one_hook_that_calls_them_in_order(tmp_path: Path) -> None:
    # test_multiple_after_hooks_chain_modifications: "Original [hook1] [hook2]"
    def chain(*steps: Any) -> Any:
        def after(ctx: AfterToolCallContext, signal: Any) -> AfterToolCallResult:
            text = text_of(ctx.result.content)
            for step in steps:
                text = step(text)
            return AfterToolCallResult(content=[TextContent(text)])

        return after

    (tmp_path / "f.txt").write_text("Original", encoding="utf-8")
    read = faux_tool_call("read_file", {"file_path": "f.txt"})
    hook = chain(lambda t: t + " [hook1]", lambda t: t + " [hook2]")
    agent, _ = file_agent(tmp_path, read, after_tool_call=hook)
    await agent.prompt("go")
    assert results(agent) == [("read_file", False, "Content: Original [hook1] [hook2]")]


async def test_a_before_hook_that_raises_keeps_the_tool_from_running(tmp_path: Path) -> None:
    # test_raising_before_hook_does_not_skip_later_hooks_or_block: crewAI runs the tool
    # (fail-open); ours answers the call with the hook's error (fail-closed)
    def crashing_hook(ctx: BeforeToolCallContext, signal: Any) -> None:
        raise ValueError("bug in user hook")

    agent, _ = file_agent(tmp_path, write_a(), before_tool_call=crashing_hook)
    reply = await agent.prompt("go")

    assert text_of(reply.content) == "ok" and not (tmp_path / "a.txt").exists()
    assert results(agent) == [("write_file", True, "bug in user hook")]


async def test_an_after_hook_that_raises_gives_an_error_though_the_tool_ran(
    tmp_path: Path,
) -> None:
    # test_raising_after_hook_does_not_skip_later_result_rewrites keeps the result; ours
    # tells the model the call failed, since what it would read was never checked
    def crashing_hook(ctx: AfterToolCallContext, signal: Any) -> None:
        raise ValueError("bug in user hook")

    agent, _ = file_agent(tmp_path, write_a(), after_tool_call=crashing_hook)
    await agent.prompt("go")

    assert (tmp_path / "a.txt").read_text(encoding="utf-8") == "x"  # the tool did run
    assert results(agent) == [("write_file", True, "bug in user hook")]


@pytest.mark.parametrize(
    ("which", "returned"), [("before", False), ("after", "rewritten as a string")]
)
async def test_a_hook_returning_another_kind_of_answer_is_named_in_the_error(
    tmp_path: Path, which: str, returned: object
) -> None:
    # crewAI blocks on False and takes a returned string as the new result
    def hook(ctx: Any, signal: Any) -> object:
        return returned

    agent, _ = file_agent(tmp_path, write_a(), **{f"{which}_tool_call": hook})
    await agent.prompt("go")

    [(_, is_error, text)] = results(agent)
    expected = "BeforeToolCallResult" if which == "before" else "AfterToolCallResult"
    assert is_error and f"{which}_tool_call returned {type(returned).__name__}" in text
    assert expected in text
    assert (tmp_path / "a.txt").exists() == (which == "after")


async def test_hooks_see_each_of_parallel_calls_once_and_results_keep_their_order(
    tmp_path: Path,
) -> None:
    # test_openai_parallel_native_tool_calling_tool_hook_parity_agent_kickoff
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.txt").write_text(name.upper(), encoding="utf-8")
    before: list[str] = []
    after: list[str] = []
    agent, fm = file_agent(
        tmp_path,
        *(faux_tool_call("read_file", {"file_path": f"{n}.txt"}) for n in "abc"),
        before_tool_call=lambda ctx, s: before.append(ctx.tool_call.id),
        after_tool_call=lambda ctx, s: after.append(ctx.tool_call.id),
    )
    await agent.prompt("go")

    ids = [c.id for c in fm.contexts[1].messages[1].tool_calls]  # type: ignore[union-attr]
    assert sorted(before) == sorted(after) == sorted(ids) and len(set(ids)) == 3
    assert results(agent) == [
        ("read_file", False, "Content: A"),
        ("read_file", False, "Content: B"),
        ("read_file", False, "Content: C"),
    ]


async def test_a_per_tool_use_limit_is_a_before_hook_the_model_reads(tmp_path: Path) -> None:
    # test_max_usage_count_limit_enforced_in_native_tool_calling: crewAI's max_usage_count
    # per tool; here a run counts all calls (UsageLimits.max_tool_calls) and a per-tool
    # count is a hook
    uses: Counter[str] = Counter()

    def at_most_two(ctx: BeforeToolCallContext, signal: Any) -> BeforeToolCallResult | None:
        if uses[ctx.tool_call.name] >= 2:
            reason = f"{ctx.tool_call.name} has reached its usage limit of 2"
            return BeforeToolCallResult(block=True, reason=reason)
        uses[ctx.tool_call.name] += 1
        return None

    (tmp_path / "f.txt").write_text("x", encoding="utf-8")
    read = faux_tool_call("read_file", {"file_path": "f.txt"})
    fm = FauxModel([faux_message(read), faux_message(read), faux_message(read), "I read it twice."])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=file_tools(tmp_path),
        before_tool_call=at_most_two,
        tool_execution="sequential",
    )
    reply = await agent.prompt("go")

    assert text_of(reply.content) == "I read it twice."
    assert [(error, text) for _, error, text in results(agent)] == [
        (False, "Content: x"),
        (False, "Content: x"),
        (True, "read_file has reached its usage limit of 2"),
    ]


CALL_KINDS = st.sampled_from(["ok", "bad-args", "unknown", "raises"])


@settings(max_examples=30, deadline=None)
@given(kinds=st.lists(CALL_KINDS, min_size=1, max_size=6), parallel=st.booleans())
def test_each_call_runs_its_tool_at_most_once_and_is_answered_once(
    kinds: list[str], parallel: bool
) -> None:
    # test_structured_tool_invoke_calls_func_only_once, over any batch: a call that
    # resolves and validates runs once and passes each hook once; every call has one result
    runs: Counter[str] = Counter()
    hooked: Counter[str] = Counter()

    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        runs[args["tag"]] += 1
        if args["tag"].startswith("raises"):
            raise RuntimeError(args["tag"])
        return args["tag"]

    schema = {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}
    work = AgentTool("work", "work", "d", schema, execute, parallel=parallel)

    def call(i: int, kind: str) -> Any:
        if kind == "bad-args":
            return faux_tool_call("work", {"tag": i})
        return faux_tool_call("nope" if kind == "unknown" else "work", {"tag": f"{kind}-{i}"})

    fm = FauxModel([faux_message(*(call(i, k) for i, k in enumerate(kinds))), "ok"])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[work],
        before_tool_call=lambda ctx, s: hooked.update([f"before {ctx.args['tag']}"]),
        after_tool_call=lambda ctx, s: hooked.update([f"after {ctx.args['tag']}"]),
    )
    asyncio.run(agent.prompt("go"))

    ran = [f"{k}-{i}" for i, k in enumerate(kinds) if k in ("ok", "raises")]
    assert runs == Counter(ran)
    assert hooked == Counter([f"before {t}" for t in ran] + [f"after {t}" for t in ran])
    answered = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    sent = fm.contexts[1].messages[1].tool_calls  # type: ignore[union-attr]
    assert [m.tool_call_id for m in answered] == [c.id for c in sent]
    assert [m.is_error for m in answered] == [k != "ok" for k in kinds]
