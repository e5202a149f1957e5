"""Hooks between turns as mastra checks its own (packages/core/src/agent/__tests__/
iteration-complete-hook.test.ts and prepareStep.test.ts; packages/core/src/tools/
tool-stream.test.ts), on the faux provider with a tool writing a real file.

mastra's `onIterationComplete` is `should_stop_after_turn` (True: stop), its feedback a
`steer` message, `prepareStep`'s `activeTools` a `prepare_context` and its `model` a
`prepare_next_turn` returning `TurnUpdate(model=...)`; a tool's `writer` is `on_update`.
Where ours differs it is written in docs/agent.md ("Runs, as peers check them")."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from yiemagent import (
    Agent,
    AgentContext,
    AgentEndEvent,
    AgentEvent,
    AgentTool,
    AgentToolResult,
    TextContent,
    ToolResultMessage,
    TurnContext,
    TurnUpdate,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

COUNT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


def counter_tool(folder: Path) -> AgentTool:
    """Appends `count` to folder/counts.txt."""

    def execute(call_id: str, args: dict[str, Any], signal: Any, on_update: Any) -> str:
        with (folder / "counts.txt").open("a", encoding="utf-8") as out:
            out.write(f"{args['count']}\n")
        return f"Count: {args['count']}"

    return AgentTool("counter", "counter", "Counts calls.", COUNT_SCHEMA, execute)


def plain_tools(*names: str) -> list[AgentTool]:
    def execute(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "ran"

    return [AgentTool(n, n, f"the {n} tool", {"type": "object"}, execute) for n in names]


def ends(events: list[AgentEvent]) -> list[str]:
    return [e.reason for e in events if isinstance(e, AgentEndEvent)]


async def test_the_turn_hook_runs_after_each_turn_with_its_message(tmp_path: Path) -> None:
    # should call onIterationComplete hook after each iteration: [1, 2]
    seen: list[tuple[str, int]] = []

    def record(turn: TurnContext) -> bool:
        seen.append((turn.message.stop_reason, len(turn.tool_results)))
        return False

    fm = FauxModel(
        [faux_message(faux_tool_call("counter", {"count": 1})), "Final response after tool"]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[counter_tool(tmp_path)],
        should_stop_after_turn=record,
    )

    reply = await agent.prompt("Use tool then respond")

    assert seen == [("toolUse", 1), ("stop", 0)]
    assert reply.text == "Final response after tool"


async def test_the_turn_hook_stops_a_model_that_keeps_calling(tmp_path: Path) -> None:
    # should stop iteration when onIterationComplete returns continue: false
    turns = 0

    def stop_at_two(turn: TurnContext) -> bool:
        nonlocal turns
        turns += 1
        return turns >= 2

    fm = FauxModel([faux_message(faux_tool_call("counter", {"count": i})) for i in range(1, 11)])
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=[counter_tool(tmp_path)],
        should_stop_after_turn=stop_at_two,
        max_turns=10,
    )
    events: list[AgentEvent] = []
    agent.subscribe(lambda e, s: events.append(e))

    await agent.prompt("Keep counting")

    assert turns == 2 and fm.call_count == 2
    assert (tmp_path / "counts.txt").read_text(encoding="utf-8") == "1\n2\n"
    assert ends(events) == ["should_stop"]
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(m.content) for m in results] == ["Count: 1", "Count: 2"]  # all answered


async def test_feedback_after_a_final_answer_opens_another_turn() -> None:
    # should add feedback to conversation when provided: mastra drops the feedback once the
    # model has answered; here a steering message is delivered at the turn boundary, so the
    # model reads it and answers again (docs/agent.md)
    fm = FauxModel(["First response", "Improved response after feedback"])
    agent: Agent[Any]
    turns = 0

    def feedback_once(turn: TurnContext) -> bool:
        nonlocal turns
        turns += 1
        if turns == 1:
            agent.steer("Please improve your response with more details.")
            return False
        return True

    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, should_stop_after_turn=feedback_once)

    reply = await agent.prompt("Generate response")

    assert reply.text == "Improved response after feedback" and fm.call_count == 2
    last = fm.contexts[1].messages[-1]
    assert isinstance(last, UserMessage)
    assert text_of(last.content) == "Please improve your response with more details."


async def test_active_tools_per_step_leave_a_tool_out_of_the_later_calls() -> None:
    # should allow prepareStep to filter tools using activeTools; the step number is the
    # count of assistant messages of the run so far
    def active_tools(state: Any) -> AgentContext:
        step = sum(1 for m in state.messages if m.role == "assistant")
        offered = [t for t in state.tools if step == 0 or t.name != "calculatorTool"]
        return AgentContext(state.system_prompt, state.messages, offered)

    fm = FauxModel(
        [
            faux_message(faux_tool_call("weatherTool", {})),
            faux_message(faux_tool_call("calculatorTool", {})),
            "done",
        ]
    )
    agent = Agent(
        model=fm.model,
        stream_fn=fm.stream_fn,
        tools=plain_tools("weatherTool", "searchTool", "calculatorTool"),
        prepare_context=active_tools,
    )

    await agent.prompt("Hello")

    assert [[t.name for t in c.tools or []] for c in fm.contexts] == [
        ["weatherTool", "searchTool", "calculatorTool"],
        ["weatherTool", "searchTool"],
        ["weatherTool", "searchTool"],
    ]
    answered = [
        (m.tool_name, text_of(m.content))
        for m in agent.state.messages
        if isinstance(m, ToolResultMessage)
    ]
    assert answered == [
        ("weatherTool", "ran"),
        (
            "calculatorTool",
            'Tool "calculatorTool" not found. Available tools: weatherTool, searchTool',
        ),
    ]


async def test_the_next_turn_may_go_to_another_model() -> None:
    # prepareStep returning { model }: the step after the tool call is another model's
    first = FauxModel([faux_message(faux_tool_call("searchTool", {}))], model_id="small")
    second = FauxModel(["answered by the large model"], model_id="large")

    def switch(turn: TurnContext) -> TurnUpdate:
        return TurnUpdate(model=second.model)

    agent = Agent(model=first.model, tools=plain_tools("searchTool"), prepare_next_turn=switch)

    reply = await agent.prompt("Hello")

    assert (first.call_count, second.call_count) == (1, 1)
    assert reply.text == "answered by the large model" and reply.model == "large"
    assert agent.state.model == first.model  # the agent's own model is unchanged


async def test_a_tools_progress_reaches_listeners_between_its_start_and_end() -> None:
    # tool-stream.test.ts: what a tool writes while it runs is streamed before its result;
    # what it writes after returning is dropped
    late: list[Any] = []

    def progress(call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        for step in ("fetching", "parsing"):
            on_update(AgentToolResult([TextContent(step)]))
        late.append(on_update)
        return "finished"

    tool = AgentTool("job", "job", "A long job.", {"type": "object"}, progress)
    fm = FauxModel([faux_message(faux_tool_call("job", {})), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[tool])
    seen: list[str] = []

    def listen(event: AgentEvent, signal: Any) -> None:
        if event.type == "tool_execution_update":
            seen.append("update:" + text_of(event.partial_result.content))
        elif event.type.startswith("tool_execution"):
            seen.append(event.type)

    agent.subscribe(listen)

    await agent.prompt("go")
    worker = threading.Thread(target=late[0], args=(AgentToolResult([TextContent("late")]),))
    worker.start()
    worker.join()

    assert seen == [
        "tool_execution_start",
        "update:fetching",
        "update:parsing",
        "tool_execution_end",
    ]
