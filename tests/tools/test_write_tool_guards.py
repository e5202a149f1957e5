"""writeTool never takes over what it did not write, and a written tool can be stopped
(DESIGN R-4.15, R-4.5, R-4.13; issue 12 items 3-4). Every refused write leaves the folder and
the store exactly as they were."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import (
    Agent,
    AgentTool,
    ToolResultMessage,
    ToolStore,
    validate_arguments_against_schema,
    write_tool_tool,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import MAX_CODE_CHARS, WRITTEN_MARK, WriteToolError
from yiemagent.types import text_of

from ._kit import run_tool

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"x": {"type": "integer"}}}


def request(**overrides: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "name": "double",
        "label": "Double",
        "description": "Doubles x",
        "inputSchema": SCHEMA,
        "executeCode": "return str(args.get('x', 0) * 2)",
    }
    args.update(overrides)
    return args


def snapshot(folder: Path, store: ToolStore) -> tuple[dict[str, bytes], dict[str, AgentTool]]:
    files = {p.name: p.read_bytes() for p in sorted(folder.iterdir())} if folder.exists() else {}
    return files, dict(store.tools)


async def refused(writer: AgentTool, args: dict[str, Any], match: str) -> None:
    checked = validate_arguments_against_schema(writer.input_schema, args, tool_name="writeTool")
    with pytest.raises(WriteToolError, match=match):
        await run_tool(writer, checked)


def user_tool() -> AgentTool:
    return AgentTool("search", "Search", "the user's own", SCHEMA, lambda *a: "user result")


USER_FILE = """from yiemagent import AgentTool

def get_tool():
    return AgentTool("mine", "Mine", "hand written", {"type": "object"}, lambda *a: "mine")
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    path = tmp_path / "tools"
    path.mkdir()
    (path / "mine.py").write_text(USER_FILE)
    (path / "notes.py").write_text("# my notes, not a tool\n")
    return path


@pytest.fixture
def loaded(folder: Path) -> ToolStore:
    store = ToolStore("agent")
    (folder / "notes.py").rename(folder / "notes.txt")
    store.load_dir(folder)
    (folder / "notes.txt").rename(folder / "notes.py")
    store.register(user_tool())
    store.register(write_tool_tool(store, folder))
    return store


@pytest.mark.parametrize(
    ("name", "match"),
    [
        ("mine", "writeTool did not write it"),  # a user's tool file
        ("notes", "writeTool did not write it"),  # a non-tool file
        ("search", 'replace the tool "search"'),  # a user's tool registered from code
    ],
)
async def test_overwrite_never_replaces_what_write_tool_did_not_write(
    loaded: ToolStore, folder: Path, name: str, match: str
) -> None:
    before = snapshot(folder, loaded)
    await refused(loaded.tools["writeTool"], request(name=name, overwrite=True), match)
    assert snapshot(folder, loaded) == before


def test_two_writers_of_one_new_name_never_overwrite_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two agents with their own stores write tools into one folder (two `yiem chat
    --write-tools DIR`, two sessions of a server). Both asked for the new name "shared"
    without `overwrite`: both found no file, then both renamed theirs into place, so the
    second silently replaced the first one's file while the first agent kept calling its
    own code. Now exactly one write creates the file; the other is refused, and the file
    holds the code of the store that registered it."""
    import asyncio
    import threading

    from yiemagent.tools import write_tool as module

    folder = tmp_path / "shared_tools"
    folder.mkdir()
    both_checked = threading.Barrier(2, timeout=60)
    real_import = module._import_in_isolation

    def import_after_both_checked(*args: Any) -> Any:
        both_checked.wait()  # each has found no file and no tool by that name
        return real_import(*args)

    monkeypatch.setattr(module, "_import_in_isolation", import_after_both_checked)
    stores = [ToolStore(f"agent{i}") for i in range(2)]
    outcomes: list[Any] = [None, None]

    def write(i: int) -> None:
        writer = write_tool_tool(stores[i], folder)
        args = request(name="shared", executeCode=f"return 'writer {i}'")
        try:
            outcomes[i] = asyncio.run(run_tool(writer, args))
        except WriteToolError as exc:
            outcomes[i] = exc

    threads = [threading.Thread(target=write, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    refusals = [o for o in outcomes if isinstance(o, WriteToolError)]
    assert len(refusals) == 1, outcomes
    assert "another writer" in str(refusals[0])
    winner = next(i for i, o in enumerate(outcomes) if not isinstance(o, WriteToolError))
    assert "shared" in stores[winner].tools and "shared" not in stores[1 - winner].tools
    assert f"writer {winner}" in (folder / "shared.py").read_text()
    assert [p.name for p in folder.iterdir()] == ["shared.py"]  # no temporary file left


async def test_overwrite_replaces_what_write_tool_wrote(loaded: ToolStore, folder: Path) -> None:
    writer = loaded.tools["writeTool"]
    await run_tool(writer, request())
    assert (folder / "double.py").read_text().startswith(WRITTEN_MARK)
    await run_tool(writer, request(executeCode="return 'v2'", overwrite=True))
    assert "'v2'" in (folder / "double.py").read_text()
    # and a file of that name which lost the mark is the user's again
    (folder / "double.py").write_text("# edited by hand\n")
    before = snapshot(folder, loaded)
    await refused(writer, request(overwrite=True), "did not write it")
    assert snapshot(folder, loaded) == before


@pytest.mark.parametrize("name", ["json", "os", "typing", "pytest", "hypothesis", "yiemagent"])
async def test_names_of_importable_modules_are_refused(
    loaded: ToolStore, folder: Path, name: str
) -> None:
    before = snapshot(folder, loaded)
    await refused(loaded.tools["writeTool"], request(name=name), "importable Python module")
    assert snapshot(folder, loaded) == before


@pytest.mark.parametrize("name", ["_hidden", "_x1", "toolregistry", "myRegistry", "REGISTRY_x"])
async def test_names_load_dir_would_skip_are_refused(
    loaded: ToolStore, folder: Path, name: str
) -> None:
    before = snapshot(folder, loaded)
    await refused(loaded.tools["writeTool"], request(name=name), "load_dir skips files")
    assert snapshot(folder, loaded) == before


@pytest.mark.parametrize(
    "args",
    [
        {"executeCode": "x = 1\n" * 4_000_000},  # 24 MB
        {"executeCode": "return 1\n" + "# pad\n" * (MAX_CODE_CHARS // 6 + 1)},
        {"imports": "import os\n" * (MAX_CODE_CHARS // 10 + 1)},
        {"inputSchema": {"type": "object", "description": "d" * (MAX_CODE_CHARS + 1)}},
    ],
    ids=["20MB-body", "just-over", "imports", "schema"],
)
async def test_oversized_code_is_refused(
    loaded: ToolStore, folder: Path, args: dict[str, Any]
) -> None:
    before = snapshot(folder, loaded)
    await refused(loaded.tools["writeTool"], request(**args), "the limit is")
    assert snapshot(folder, loaded) == before


refused_names = st.one_of(
    st.sampled_from(sorted(__import__("sys").stdlib_module_names)),
    st.from_regex(r"\A_[A-Za-z0-9_]{0,10}\Z"),
    st.from_regex(r"\A[A-Za-z]{0,5}[Rr][Ee][Gg][Ii][Ss][Tt][Rr][Yy][A-Za-z0-9_]{0,5}\Z"),
    st.sampled_from(["mine", "notes", "search", "writeTool", "listTools", "class", "9lives"]),
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=refused_names, overwrite=st.booleans())
async def test_every_refused_write_changes_nothing(
    loaded: ToolStore, folder: Path, name: str, overwrite: bool
) -> None:
    writer = loaded.tools["writeTool"]
    before = snapshot(folder, loaded)
    with pytest.raises(WriteToolError):
        checked = validate_arguments_against_schema(
            writer.input_schema, request(name=name, overwrite=overwrite), tool_name="writeTool"
        )
        await run_tool(writer, checked)
    assert snapshot(folder, loaded) == before


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _cpu_while_idle(seconds: float) -> float:
    """CPU seconds this process (all its threads) used while the caller slept."""
    cpu = time.process_time()
    time.sleep(seconds)
    return time.process_time() - cpu


@pytest.mark.timeout(90)
async def test_a_looping_written_tool_times_out_and_nothing_keeps_spinning(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "tools"
    pidfile = tmp_path / "pid"
    spin = "import os\nopen(args['pidfile'], 'w').write(str(os.getpid()))\nwhile True:\n    pass"
    spec = request(
        name="spin",
        inputSchema={"type": "object", "properties": {"pidfile": {"type": "string"}}},
        executeCode=spin,
    )
    fm = FauxModel(
        [
            faux_message(faux_tool_call("writeTool", spec)),
            faux_message(faux_tool_call("spin", {"pidfile": str(pidfile)})),
            "gave up",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[])
    # 6 s: the tool's worker process must start and write its pid first, which takes
    # seconds on a loaded 2-core machine (with 2 s the timeout sometimes came first).
    agent.tool_store.register(write_tool_tool(agent.tool_store, folder, timeout_s=6.0))
    started = time.monotonic()
    answer = await agent.prompt("write a tool that spins, then call it")
    assert answer.text == "gave up"
    assert time.monotonic() - started < 60
    result = agent.state.messages[-2]
    assert isinstance(result, ToolResultMessage) and result.is_error
    assert text_of(result.content) == "Tool spin timed out after 6 s"
    pid = int(pidfile.read_text())
    assert pid != os.getpid()  # it ran in its own process ...
    assert _gone_within(pid, 10.0)  # ... which the timeout killed
    assert _cpu_while_idle(1.0) < 0.3  # and no thread of ours spins either
