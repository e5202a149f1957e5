"""What the terminal shows of a team (DESIGN §17): the chat's view gives a sub-agent's tool
calls as indented lines with its name, says who answers after a handoff and what tripped;
`yiem chat --agent` builds its agent from the file on the chat's session store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.text import Text

from yiemagent import GuardrailTripped, Handoff
from yiemagent.cli.chat._view import LiveView
from yiemagent.cli.teams import has_guardrails

from ._kit import calls, scripted, slow_tool
from .test_agent_file import write_team


def watch(agent: Any) -> list[str]:
    lines: list[Text] = []
    view = LiveView(lines.append, lambda: None)
    view.hold_text = has_guardrails(agent)  # as the chat app sets it
    agent.subscribe(lambda event, signal: view(event))
    return lines  # type: ignore[return-value]


async def test_the_chat_view_shows_sub_agents_and_handoffs() -> None:
    researcher, _ = scripted(
        "researcher", [calls(("lookup", {"n": 1})), "found it"], tools=[slow_tool("lookup", [], 0)]
    )
    writer, _ = scripted("writer", ["Here it is."])
    lead, _ = scripted(
        "lead",
        [calls(("researcher", {"input": "look"})), calls(("transfer_to_writer", {}))],
        tools=[researcher.as_tool()],
        handoffs=[Handoff(writer)],
    )
    lines = watch(lead)

    await lead.prompt("go")

    text = [str(line) for line in lines]
    assert any(t.startswith("  researcher → lookup") for t in text), text
    assert any(t.startswith("  researcher ← lookup: lookup done") for t in text), text
    assert "⇢ writer answers" in text
    assert "Here it is." in text


async def test_the_chat_view_says_what_tripped() -> None:
    agent, _ = scripted("a", ["hidden"], output_guardrails=[lambda context: True])
    lines = watch(agent)
    with pytest.raises(GuardrailTripped):
        await agent.prompt("hi")
    text = [str(line) for line in lines]
    assert "✗ stopped: output guardrail '<lambda>' tripped" in text
    assert not any("hidden" in t for t in text)


def test_yiem_chat_agent_builds_the_files_agent_on_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.cli.chat._tmux import FAUX_SCRIPT
    from yiemagent.cli.chat.setup import ChatOptions, build_setup

    monkeypatch.setenv("YIEM_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("YIEM_CHAT_FAUX_SCRIPT", str(FAUX_SCRIPT))
    path = write_team(tmp_path)
    setup = build_setup(ChatOptions(model="faux", agent=f"{path}:math"))
    try:
        agent = setup.agent
        assert agent.name == "math"
        assert agent.session_store is setup.sessions
        assert agent.session_id == setup.session_name
        assert setup.store is agent.tool_store and "add" in setup.store.tools
    finally:
        setup.sessions.close()


def test_the_trace_page_gives_each_sub_agent_a_lane(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import yiemagent.cli.main as cli_main_module
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
    from yiemagent.cli.main import main
    from yiemagent.telemetry import timeline_from_event_lines, timeline_html

    fm = FauxModel(
        [
            faux_message(faux_tool_call("transfer_to_math", {})),
            faux_message(faux_tool_call("writer", {"input": "say 5"}, id="w1")),
            '{"text": "five"}',
            "It is five.",
        ],
        model_id="team-trace",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda spec, base_url, *rest: fm.model)
    assert main(["run", "--json", "--agent", str(write_team(tmp_path)), "2 + 3?"]) == 0
    timeline = timeline_from_event_lines(capsys.readouterr().out.splitlines())

    bars = [bar for turn in timeline.turns for bar in turn.bars]
    at = next(i for i, bar in enumerate(bars) if bar.id == "w1")
    assert bars[at + 1].lane == "writer" and bars[at + 1].kind == "model"  # under its call
    assert [b.lane for b in bars].count("writer") == 1
    assert [b.details.get("agent") for b in bars if b.kind == "model" and not b.lane] == [
        "router",
        "math",
        "math",
    ]
    assert timeline.summary["model calls"] == 4
    page = timeline_html(timeline)
    assert '"lane": "writer"' in page and "row lane" in page


async def test_the_trace_page_gives_deeper_and_handed_to_sub_agents_lanes_in_order() -> None:
    """A sub-agent's own sub-agent had no lane: its bars looked for its call among the
    outermost bars and were dropped. A sub-run that handed off put the target's lane above
    the lane of the agent that handed over, both with the same bar ids."""
    import json

    from yiemagent import event_to_dict
    from yiemagent.telemetry import timeline_from_event_lines

    deep, _ = scripted("deep", ["from deep"])
    back, _ = scripted(
        "back", [calls(("deep", {"input": "x"})), "from back"], tools=[deep.as_tool()]
    )
    front, _ = scripted("front", [calls(("transfer_to_back", {}))], handoffs=[back])
    lead, _ = scripted("lead", [calls(("front", {"input": "q"})), "done"], tools=[front.as_tool()])
    lines: list[str] = []
    lead.subscribe(lambda event, signal: lines.append(json.dumps(event_to_dict(event))))
    await lead.prompt("go")

    timeline = timeline_from_event_lines(lines)

    bars = [bar for turn in timeline.turns for bar in turn.bars]
    assert [(b.kind, b.lane, b.label) for b in bars] == [
        ("model", "", "faux"),
        ("tool", "", "front"),
        ("model", "front", "faux"),
        ("tool", "front", "transfer_to_back"),
        ("model", "back", "faux"),
        ("tool", "back", "deep"),
        ("model", "back › deep", "faux"),
        ("model", "back", "faux"),
        ("model", "", "faux"),
    ]
    assert len({b.id for b in bars}) == len(bars)
    assert timeline.summary["model calls"] == 6


def test_the_trace_totals_count_what_sub_agents_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page's header counted the sub-agent's model calls but not its tokens: "model
    calls: 4 · tokens: 30 in" for a run whose usage line said 40 in. Its totals are now
    the run's (`transcript_usage`), as `yiem run`, the chat and the batch results say."""
    import yiemagent.cli.main as cli_main_module
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
    from yiemagent.cli.main import main
    from yiemagent.telemetry import timeline_from_event_lines
    from yiemagent.types import AssistantMessage, Cost, Usage

    def spent(message: AssistantMessage) -> AssistantMessage:
        message.usage = Usage(input=10, output=5, total_tokens=15, cost=Cost(total=0.001))
        return message

    fm = FauxModel(
        [
            spent(faux_message(faux_tool_call("transfer_to_math", {}))),
            spent(faux_message(faux_tool_call("writer", {"input": "say 5"}, id="w1"))),
            spent(faux_message(faux_text('{"text": "five"}'))),  # the writer's
            spent(faux_message(faux_text("It is five."))),
        ],
        model_id="team-trace-usage",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda spec, base_url, *rest: fm.model)
    assert main(["run", "--json", "--agent", str(write_team(tmp_path)), "2 + 3?"]) == 0
    timeline = timeline_from_event_lines(capsys.readouterr().out.splitlines())
    assert timeline.summary["model calls"] == 4
    assert timeline.summary["tokens"] == "40 in, 20 out"
    assert timeline.summary["cost"] == "$0.004000"
    writer = next(b for turn in timeline.turns for b in turn.bars if b.id == "w1")
    assert writer.details["tokens"] == "10 in (0 cached), 5 out"  # the sub-run's, on its call


async def test_the_chat_view_shows_an_output_given_through_the_output_tool() -> None:
    """`yiem chat --agent` on a file with an `output_schema`: the answer came as the output
    tool's call only ("✓ final_result(n=391) → Final result accepted."), never as the
    value, which `yiem run`, `yiem serve` and `yiem batch` give as JSON."""
    from yiemagent import Agent
    from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

    fm = FauxModel([faux_message(faux_tool_call("final_result", {"n": 391}))])
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    agent = Agent("count", model=fm.model, stream_fn=fm.stream_fn, output_type=schema)
    lines = watch(agent)
    assert (await agent.prompt("17 * 23?")).output == {"n": 391}
    text = [str(line) for line in lines]
    assert '{"n": 391}' in text, text
