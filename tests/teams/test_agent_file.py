"""Agent files (DESIGN §17): `load_agent` builds a team from `[agents.NAME]` tables; a bad
file is one `ConfigError` naming the table and the key, and one line with exit 1 in the
CLI (`yiem run --agent FILE[:NAME]`)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

import yiemagent.cli.main as cli_main_module
from yiemagent import ConfigError, GuardrailTripped, load_agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.cli.main import main
from yiemagent.sessions import InMemorySessionStore
from yiemagent.teams import AgentFile

TOOL = textwrap.dedent(
    """
    from yiemagent import tool

    @tool
    def add(a: int, b: int) -> str:
        \"\"\"Add two numbers.

        Args:
            a: the first.
            b: the second.
        \"\"\"
        return str(a + b)

    def get_tool():
        return add
    """
)

GUARDS = textwrap.dedent(
    """
    from yiemagent.agent import remove_handoff_turns as drop

    def no_secrets(context):
        return "secret" in context.input
    """
)

TEAM = textwrap.dedent(
    """
    [agents.router]
    description = "Routes."
    system_prompt = "Route every question."
    handoffs = ["math", "writer"]
    input_guardrails = ["team_guards:no_secrets"]
    max_handoffs = 3

    [agents.math]
    description = "Adds numbers."
    system_prompt = "Add."
    tools = ["tools"]
    as_tools = ["writer"]
    max_turns = 4
    usage_limits = { max_total_tokens = 5000, max_cost_usd = 0.5 }

    [agents.writer]
    description = "Writes."
    handoffs = [
        { agent = "router", description = "Back to routing.", input_filter = "team_guards:drop" },
    ]
    output_schema = { type = "object", properties = { text = { type = "string" } } }
    """
)


def write_team(tmp_path: Path, text: str = TEAM) -> Path:
    (tmp_path / "tools").mkdir(exist_ok=True)
    (tmp_path / "tools" / "add.py").write_text(TOOL)
    (tmp_path / "team_guards.py").write_text(GUARDS)
    path = tmp_path / "team.toml"
    path.write_text(text)
    return path


async def test_load_agent_builds_the_team_and_it_runs(tmp_path: Path) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("transfer_to_math", {"reason": "sums"})),
            faux_message(faux_tool_call("add", {"a": 2, "b": 3})),
            "2 + 3 = 5",
        ]
    )
    router = load_agent(write_team(tmp_path), model=fm.model)

    assert router.name == "router" and router.description == "Routes."
    assert [h.agent.name for h in router.handoffs] == ["math", "writer"]
    assert [g.__name__ for g in router.input_guardrails] == ["no_secrets"]
    assert router.max_handoffs == 3
    math = router.handoffs[0].agent
    assert set(math.tool_store.tools) == {"add", "listTools", "writer"}
    assert math.max_turns == 4
    assert math._config["usage_limits"].max_total_tokens == 5000
    writer = router.handoffs[1].agent
    assert writer.handoffs[0].agent is router  # a cycle, by name
    assert writer.handoffs[0].description == "Back to routing."
    assert writer.handoffs[0].input_filter.__name__ == "remove_handoff_turns"
    assert writer._output is not None

    reply = await router.prompt("What is 2 + 3?")

    assert reply.text == "2 + 3 = 5" and reply.agent == "math"
    assert fm.contexts[1].system_prompt == "Add."
    router.state.active_agent = "router"  # the prompt's agent runs its input guardrails
    with pytest.raises(GuardrailTripped, match="no_secrets"):
        await router.prompt("tell me a secret")


async def test_a_reopened_session_goes_on_with_the_agent_handed_to(tmp_path: Path) -> None:
    """A session built again from the file (each run of `yiem serve --agent`, a resumed
    `yiem chat --agent --session`) went back to the entry agent after a handoff: its
    handoffs were linked after the agents were made, too late for the transcript to name
    who answers. examples/team/team.toml on the page: "What time is it in Tokyo?" went
    to `time`, then "And in Paris?" to the router, which answered "I cannot do it"."""
    store = InMemorySessionStore()
    path = write_team(tmp_path)
    first = FauxModel(
        [
            faux_message(faux_tool_call("transfer_to_math", {"reason": "sums"})),
            faux_message(faux_tool_call("add", {"a": 2, "b": 3})),
            "2 + 3 = 5",
        ]
    )
    router = load_agent(path, model=first.model, session_store=store, session_id="s")
    assert (await router.prompt("What is 2 + 3?")).agent == "math"
    await router.close()

    second = FauxModel(["4 + 4 = 8"])
    again = load_agent(path, model=second.model, session_store=store, session_id="s")
    try:
        assert again.state.active_agent == "math"
        reply = await again.prompt("And 4 + 4?")
        assert reply.agent == "math" and second.contexts[0].system_prompt == "Add."
    finally:
        await again.close()


async def test_two_files_guardrails_of_one_module_name_are_their_own(tmp_path: Path) -> None:
    """mitmproxy #2455, kubeedge/ianvs #557 (and the review of NVIDIA/NeMo-Agent-Toolkit
    #1322): code loaded by module name from beside a file was the first such file's,
    from `sys.modules`. Here a second team's `guards:check` was the first team's
    guardrail: its own never ran."""
    agents = {}
    models = []
    for word in ("apple", "banana"):
        folder = tmp_path / word
        (folder / "checks").mkdir(parents=True)
        (folder / "checks" / "__init__.py").write_text("from .words import WORD\n")
        (folder / "checks" / "words.py").write_text(f"WORD = {word!r}\n")
        (folder / "guards.py").write_text(
            f"def check(context):\n    return {word!r} in context.input\n"
        )
        (folder / "team.toml").write_text(
            "[agents.a]\n"
            f'system_prompt = "Likes no {word}."\n'
            'input_guardrails = ["guards:check", "checks.words:missing"]\n'
        )
        with pytest.raises(ConfigError, match=r"checks\.words has no function 'missing'"):
            load_agent(folder / "team.toml", model=FauxModel(["ok"]).model)
        text = (folder / "team.toml").read_text().replace(', "checks.words:missing"', "")
        (folder / "team.toml").write_text(text)
        fm = FauxModel(["ok"] * 3, model_id=f"faux-{word}")
        agents[word] = load_agent(folder / "team.toml", model=fm.model)
        models.append(fm)  # kept: a FauxModel answers while it lives

    for word, agent in agents.items():
        other = "banana" if word == "apple" else "apple"
        with pytest.raises(GuardrailTripped, match="'check' tripped"):
            await agent.prompt(f"an {word}, please")
        assert (await agent.prompt(f"an {other}, please")).text == "ok"


def test_name_picks_the_entry_agent(tmp_path: Path) -> None:
    path = write_team(tmp_path)
    assert load_agent(path, "writer").name == "writer"
    with pytest.raises(ConfigError, match="no agent 'nobody'; the file has router, math, writer"):
        load_agent(path, "nobody")


def test_a_file_saved_with_a_byte_order_mark(tmp_path: Path) -> None:
    """Windows editors start a UTF-8 file with a BOM: it was "not valid TOML"."""
    path = tmp_path / "team.toml"
    text = '[agents.main]\nsystem_prompt = "hi"\nmodel = "openai/gpt-4o-mini"\n'
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_agent(path).name == "main"


BAD = {
    "an unknown key": (
        'temprature = 0.2\nsystem_prompt = "x"',
        "[agents.router] temprature: unknown key; the keys are description, system_prompt",
    ),
    "a handoff to nobody": ('handoffs = ["nobody"]', "[agents.router] handoffs: no agent 'nobody'"),
    "a count as text": ('max_turns = "3"', "[agents.router] max_turns: must be a whole number"),
    "no turns": ("max_turns = 0", "[agents.router] max_turns: must be a whole number >= 1, not 0"),
    "fewer than no turns": ("max_turns = -3", "max_turns: must be a whole number >= 1, not -3"),
    "fewer than no handoffs": ("max_handoffs = -1", "max_handoffs: must be a whole number >= 0"),
    "a guardrail that does not import": (
        'output_guardrails = ["no_such_module:f"]',
        "[agents.router] output_guardrails: cannot import no_such_module: No module named",
    ),
    "a guardrail that is not module:function": (
        'input_guardrails = ["just_a_name"]',
        "[agents.router] input_guardrails: 'just_a_name' is not MODULE:FUNCTION",
    ),
    "an unknown model": ('model = "nowhere/none"', "[agents.router] model: "),
    "an unknown limit": (
        "usage_limits = { max_tokens = 3 }",
        "[agents.router] usage_limits: unknown limit 'max_tokens'; the limits are"
        " max_input_tokens, max_output_tokens, max_total_tokens, max_cost_usd, max_tool_calls",
    ),
    "a missing tool folder": ('tools = ["absent"]', "[agents.router] tools: "),
    "a handoff table with an unknown key": (
        'handoffs = [{ agent = "router", filter = "x:y" }]',
        "[agents.router] handoffs: unknown key 'filter'",
    ),
    "an MCP command with an unclosed quote": (
        'mcp = ["\\"python server.py"]',
        "[agents.router] mcp: cannot split the command '\"python server.py': No closing quotation",
    ),
    "a bad name": None,
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_file_is_one_error_naming_table_and_key(tmp_path: Path, case: str) -> None:
    if BAD[case] is None:
        path = write_team(tmp_path, '[agents."two words"]\nsystem_prompt = "x"\n')
        expected = "[agents.two words]: invalid agent name 'two words'"
    else:
        body, expected = BAD[case]  # type: ignore[misc]
        path = write_team(tmp_path, f"[agents.router]\n{body}\n")
    with pytest.raises(ConfigError) as caught:
        load_agent(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and expected in text, text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (None, "No such file"),
        ("{not json", "not JSON ("),
        ("[1, 2]", "a JSON Schema must be an object"),
    ],
)
def test_a_bad_output_schema_file_says_what_the_cli_option_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, says: str
) -> None:
    """An agent file's `output_schema` file and `--output-schema` are read by one function:
    the same file gives the same words after the place it was named."""
    schema = tmp_path / "answer.json"
    if content is not None:
        schema.write_text(content)
    path = write_team(tmp_path, '[agents.router]\noutput_schema = "answer.json"\n')
    with pytest.raises(ConfigError) as caught:
        load_agent(path)
    assert main(["run", "hi", "--output-schema", str(schema)]) == 1
    cli_line = capsys.readouterr().err.strip()
    assert cli_line.startswith(f"yiem: error: --output-schema {schema}: {says}"), cli_line
    said = cli_line.removeprefix("yiem: error: --output-schema ")
    assert str(caught.value) == f"{path}: [agents.router] output_schema: {said}"


def test_an_unknown_model_is_the_whole_message_get_model_gives(tmp_path: Path) -> None:
    """The message ends with the quoted model forms to use, its closing quote kept."""
    path = write_team(tmp_path, '[agents.router]\nmodel = "nowhere/none"\n')
    with pytest.raises(ConfigError) as caught:
        load_agent(path)
    text = str(caught.value)
    assert "[agents.router] model: unknown model 'nowhere/none'. Known models: " in text
    assert text.endswith('or "openai-responses/<model id>"'), text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[agents.a\n", "not valid TOML"),
        ("[other]\nx = 1\n", "unknown table or key 'other'"),
        ("", "no agents: add an [agents.NAME] table"),
        ("[agents]\na = 1\n", "[agents.a]: must be a table of keys"),
    ],
)
def test_a_bad_file_layout_is_one_error(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "team.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=expected.replace("[", "\\[").replace(".", "\\.")):
        load_agent(path)


def test_the_cli_says_one_line_and_exits_1_for_a_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_team(tmp_path, '[agents.router]\nhandoffs = ["ghost"]\n')
    assert main(["run", "--agent", f"{path}:router", "hi"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.strip().splitlines() == [
        f"yiem: error: {path}: [agents.router] handoffs: no agent 'ghost' in the file"
    ]
    assert main(["run", "--agent", str(path), "--tools", str(tmp_path), "hi"]) == 1
    assert "--tools does not go with --agent" in capsys.readouterr().err


def test_yiem_run_shows_the_handoff_and_nested_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(
        [
            faux_message(faux_tool_call("transfer_to_math", {})),
            faux_message(faux_tool_call("writer", {"input": "say 5"})),
            '{"text": "five"}',
            "It is five.",
        ],
        model_id="team-cli",
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda spec, base_url, *rest: fm.model)
    path = write_team(tmp_path)
    assert main(["run", "--agent", str(path), "What is 2 + 3?"]) == 0
    out, err = capsys.readouterr()
    assert out == "It is five.\n"
    assert "→ transfer_to_math" in err
    assert "⇢ math answers" in err
    assert "→ writer" in err and '← writer: {"text": "five"}' in err


def test_yiem_run_prints_the_output_an_agent_file_gave_through_its_output_tool(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry agent with an `output_schema` that answers through its output tool writes
    no text: the validated value is the answer, on stdout as JSON (as `--output-schema`,
    `yiem batch` and `yiem serve` give it); the output tool's call, which hands it over,
    shows no line on stderr."""
    fm = FauxModel(
        [faux_message(faux_tool_call("final_result", {"n": 391}))], model_id="team-output"
    )
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda spec, base_url, *rest: fm.model)
    schema = '{ type = "object", properties = { n = { type = "integer" } }, required = ["n"] }'
    path = write_team(tmp_path, f"[agents.counter]\noutput_schema = {schema}\n")
    assert main(["run", "--agent", str(path), "What is 17 * 23?"]) == 0
    out, err = capsys.readouterr()
    assert out == '{"n": 391}\n'
    assert "final_result" not in err and err.startswith("tokens: "), err


def test_yiem_run_names_a_tripped_guardrail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    fm = FauxModel(["never shown"], model_id="team-guard")
    monkeypatch.setattr(cli_main_module, "resolve_model", lambda spec, base_url, *rest: fm.model)
    assert main(["run", "--agent", str(write_team(tmp_path)), "a secret please"]) == 1
    out, err = capsys.readouterr()
    assert "never shown" not in out
    assert err.strip().splitlines()[-1] == (
        "yiem: error: the run was stopped: input guardrail 'no_secrets' tripped"
    )


def test_yiem_batch_builds_each_tasks_agent_from_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pickle

    from yiemagent.batch import BatchTask
    from yiemagent.cli.teams import AgentFileFactory

    path = write_team(tmp_path)
    factory = pickle.loads(pickle.dumps(AgentFileFactory(f"{path}:math", "openai/gpt-4o-mini")))
    first, second = factory(BatchTask("a", "x", session="s1")), factory(BatchTask("b", "y"))
    assert (first.name, first.session_id, first.max_turns) == ("math", "s1", 4)
    assert first is not second and first.tool_store is not second.tool_store
    assert first.state.model is not None and first.state.model.id == "gpt-4o-mini"

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "x"}\n')
    (tmp_path / "bad").mkdir()
    bad = write_team(tmp_path / "bad", "[agents.a]\nmodel = 3\n")
    code = main(["batch", str(tasks), "--out", str(tmp_path / "r.jsonl"), "--agent", str(bad)])
    assert code == 1
    assert (
        capsys.readouterr()
        .err.strip()
        .splitlines()[-1]
        .endswith(
            '[agents.a] model: must be "provider/id" or a table with keys name, base_url, '
            "vision, tool_calls"
        )
    )


async def test_an_agent_file_builds_agents_on_mcp_servers_started_once(tmp_path: Path) -> None:
    """`AgentFile` (what `yiem serve` builds each run's agent with): every build gets the
    tools of one running server, closing a built agent leaves it running, and closing the
    file stops it. The server refuses a second start (MCP_TEST_START_ONCE)."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from tests.mcp._kit import run_calls, text
    from tests.mcp.conftest import SERVER

    command = f"env MCP_TEST_START_ONCE={tmp_path / 'once'} {sys.executable} {SERVER}"
    path = write_team(tmp_path, f"[agents.helper]\nmcp = [{json.dumps(command)}]\n")
    async with AgentFile(path) as team:
        for word in ("one", "two", "three"):
            agent = team.build()
            [result] = await run_calls(agent.tool_store, ("echo", {"text": word}))
            assert not result.is_error and text(result) == word, text(result)
            await agent.close()
    [after] = await run_calls(agent.tool_store, ("echo", {"text": "gone"}))
    assert after.is_error and "is not connected" in text(after), text(after)


async def test_an_mcp_command_runs_in_the_files_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mcp = ["python server.py"]` beside the file, as `tools` folders are: started from
    another folder, the server's own file was not found ("can't open file"), and the load
    failed with "MCP server ...: MCPError: Connection closed"."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import shutil

    from tests.mcp._kit import run_calls, text
    from tests.mcp.conftest import SERVER

    team = tmp_path / "team"
    team.mkdir()
    shutil.copy(SERVER, team / "server.py")
    path = write_team(
        team, f"[agents.helper]\nmcp = [{json.dumps(sys.executable + ' server.py')}]\n"
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    async with AgentFile(path) as file:
        agent = file.build()
        [result] = await run_calls(agent.tool_store, ("echo", {"text": "here"}))
        assert not result.is_error and text(result) == "here", text(result)
        await agent.close()


def test_a_file_that_fails_to_load_stops_the_mcp_servers_it_started(tmp_path: Path) -> None:
    """A bad key in a later table, or a later server that does not start: the agents
    built so far were dropped with their MCP servers still running."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from tests.mcp.conftest import SERVER

    markers = tmp_path / "markers"
    markers.mkdir()
    command = f"env MCP_TEST_MARKERS={markers} {sys.executable} {SERVER}"
    path = write_team(
        tmp_path, f"[agents.a]\nmcp = [{json.dumps(command)}]\n[agents.b]\nmax_turns = 0\n"
    )
    with pytest.raises(ConfigError, match=r"\[agents.b\] max_turns: must be a whole number"):
        load_agent(path)
    pid = int((markers / "pid").read_text())
    deadline = time.monotonic() + 15
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the MCP server outlived the failed load"
        time.sleep(0.1)
