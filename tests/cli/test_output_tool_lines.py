"""A typed run's output tool is how the answer is handed over, not a step a user asked
for (DESIGN §14): `yiem run --output-schema` showed `→ final_result {...}` and
`← final_result: Final result accepted.` on stderr, and `yiem chat` a `✓ final_result(...)`
line above the answer. Now an accepted answer shows no such line; a refused one shows one
line naming its problems; `--json` keeps every event. `yiem run` in a subprocess against a
replay server speaking the OpenAI wire format on 127.0.0.1; the chat's view fed by a real
agent's events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._yiem import yiem_in
from tests.ai.servers import ReplayServer, Reply, openai_chunks, sse_reply
from tests.cli._typed_output import AGENT_FILE, LEGS, chat_lines, run_typed, tool_call_reply
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call

pytestmark = pytest.mark.timeout(180)

REFUSED = "✗ the answer does not match the schema: $.legs: 'eight' is not of type 'integer'"


def _call(call_id: str, name: str, args: object) -> Reply:
    return tool_call_reply(call_id, name, json.dumps(args))


def _run_typed(tmp_path: Path, *options: str) -> tuple[int, str, str]:
    replies = [
        _call("c0", "final_result", {"legs": "eight"}),
        _call("c1", "final_result", {"legs": 8}),
    ]
    return run_typed(tmp_path, replies, *options)


def test_run_shows_a_refused_answer_and_not_the_output_tool(tmp_path: Path) -> None:
    code, out, err = _run_typed(tmp_path)
    assert code == 0, err
    assert out == '{"legs": 8}\n'
    lines = err.splitlines()
    assert lines[:-1] == [REFUSED], err
    assert lines[-1].startswith("tokens: 20 in, 10 out · "), err


def test_run_json_keeps_the_output_tool_events(tmp_path: Path) -> None:
    code, out, err = _run_typed(tmp_path, "--json")
    assert code == 0, err
    ends = [e for e in map(json.loads, out.splitlines()) if e["type"] == "tool_execution_end"]
    assert [(e["tool_name"], e["is_error"]) for e in ends] == [
        ("final_result", True),
        ("final_result", False),
    ]


def test_chat_shows_a_refused_answer_and_the_answer_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("final_result", {"legs": "eight"})),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=LEGS)
    lines = chat_lines(tmp_path, monkeypatch, AGENT_FILE, agent, "How many legs?")
    assert lines[:2] == [REFUSED, '{"legs": 8}'], lines
    assert lines[2].startswith("tokens: "), lines
    assert len(lines) == 3, lines


TEAM_FILE = (
    '[agents.router]\nsystem_prompt = "Ask the counter."\nas_tools = ["counter"]\n'
    '[agents.counter]\nsystem_prompt = "Count legs."\noutput_schema = "legs.json"\n'
)


def test_run_shows_a_typed_sub_agents_output_tool_as_the_entrys(tmp_path: Path) -> None:
    (tmp_path / "legs.json").write_text(json.dumps(LEGS))
    (tmp_path / "team.toml").write_text(TEAM_FILE)
    with ReplayServer() as server:
        server.enqueue(
            _call("r0", "counter", {"input": "How many legs has a spider?"}),
            _call("c0", "final_result", {"legs": "eight"}),
            _call("c1", "final_result", {"legs": 8}),
            sse_reply(openai_chunks({"content": "Eight."})),
        )
        model = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        done = yiem_in(tmp_path, "run", "Spider legs?", "--agent", "team.toml", *model)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Eight.\n"
    lines = [line.split(" (")[0] for line in done.stderr.splitlines()[:-1]]
    assert lines == [
        '→ counter {"input": "How many legs has a spider?"}',
        "  counter " + REFUSED,
        '← counter: {"legs": 8}',
    ], done.stderr


def test_chat_shows_a_typed_sub_agents_output_tool_as_the_entrys(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("counter", {"input": "How many legs?"})),
            faux_message(faux_tool_call("final_result", {"legs": "eight"})),
            faux_message(faux_tool_call("final_result", {"legs": 8})),
            faux_message("Eight."),
        ]
    )
    counter = Agent(name="counter", model=fm.model, stream_fn=fm.stream_fn, output_type=LEGS)
    router = Agent(name="router", model=fm.model, stream_fn=fm.stream_fn, tools=[counter.as_tool()])
    lines = chat_lines(tmp_path, monkeypatch, TEAM_FILE, router, "Spider legs?")
    assert lines[0] == "  counter " + REFUSED, lines
    assert not [line for line in lines if "final_result" in line], lines


HANDOFF_TEAM_FILE = (
    '[agents.router]\nsystem_prompt = "Ask the counter."\nas_tools = ["counter"]\n'
    '[agents.counter]\nsystem_prompt = "Pass it on."\noutput_schema = "legs.json"\n'
    'handoffs = ["zoologist"]\n'
    '[agents.zoologist]\nsystem_prompt = "Count legs."\n'
)


def test_run_hides_the_output_tool_a_handoff_target_answers_through(tmp_path: Path) -> None:
    """A typed sub-agent that hands off keeps its output type: the agent it handed off to
    answers through the sub-agent's output tool, which shows no line either."""
    (tmp_path / "legs.json").write_text(json.dumps(LEGS))
    (tmp_path / "team.toml").write_text(HANDOFF_TEAM_FILE)
    with ReplayServer() as server:
        server.enqueue(
            _call("r0", "counter", {"input": "How many legs has a spider?"}),
            _call("c0", "transfer_to_zoologist", {}),
            _call("z0", "final_result", {"legs": "eight"}),
            _call("z1", "final_result", {"legs": 8}),
            sse_reply(openai_chunks({"content": "Eight."})),
        )
        model = ["--model", "openai-compatible/m", "--base-url", server.url + "/v1"]
        done = yiem_in(tmp_path, "run", "Spider legs?", "--agent", "team.toml", *model)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Eight.\n"
    lines = [line.split(" (")[0] for line in done.stderr.splitlines()[:-1]]
    assert [line for line in lines if "transfer_to" not in line] == [
        '→ counter {"input": "How many legs has a spider?"}',
        "  zoologist " + REFUSED,
        '← counter: {"legs": 8}',
    ], done.stderr
