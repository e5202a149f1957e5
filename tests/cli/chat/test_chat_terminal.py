"""`yiem chat` end to end in a real terminal (DESIGN §15): tmux runs the command on the
scripted faux model (`faux_chat.py`, selected by the test-only `$YIEM_CHAT_FAUX_SCRIPT`)
with the `slow` test tool; keys are typed with send-keys and the screen read with
capture-pane."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.chat._tmux import APPROVAL_TOOLS, TOOLS, Pane, after
from yiemagent.sessions import SqliteSessionStore
from yiemagent.types import (
    AssistantMessage,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    folder.mkdir()
    return folder


@pytest.fixture
def chat(data_dir: Path) -> Iterator[Pane]:
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--session", "t"])
    try:
        pane.ready()
        yield pane
    finally:
        pane.close()


def _every_call_answered_once(data_dir: Path, session: str) -> list[str]:
    with SqliteSessionStore(data_dir / "sessions.db") as store:
        messages = store.load(session)
    calls = [c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    results = [m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)]
    assert sorted(calls) == sorted(results), (calls, results)
    assert len(set(results)) == len(results)
    return calls


def test_a_session_another_program_holds_is_one_line_in_the_commands_terms(
    data_dir: Path,
) -> None:
    """`yiem chat --session s` while another program writes `s` (a second chat, a `yiem
    serve` run) said "close that Agent (await agent.close()) ... or use another
    session_id", the store's advice to a Python program, to someone at a terminal."""
    hold = (
        "import sys, time\n"
        "from yiemagent.sessions import SqliteSessionStore\n"
        "SqliteSessionStore(sys.argv[1]).acquire('s')\n"
        "print('held', flush=True)\n"
        "time.sleep(120)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(data_dir / "sessions.db")],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--session", "s"])
    try:
        assert pane.exit_code() == 1
        screen = pane.screen()
        assert (
            f"yiem: error: session 's' is open in process {holder.pid} on host "
            f"{socket.gethostname()} (a yiem chat, a yiem serve run or another program using "
            "the same session store); close it there, or use another session"
        ) in screen, screen
        assert "await agent.close()" not in screen
    finally:
        pane.close()
        holder.kill()
        holder.wait()


def test_an_answer_streams_then_its_usage_line(chat: Pane) -> None:
    chat.type("stream")
    # Seen mid-stream: the start of the answer without its end.
    partial = chat.wait(lambda s: "Streaming: word1" in s and "end." not in s)
    assert "working" in partial
    chat.wait(
        lambda s: after(s, "› stream", "Streaming: word1 word2", "word40 end.", "tokens: 12 in")
    )


def test_a_tool_call_shows_its_progress_result_and_duration(chat: Pane) -> None:
    chat.type("progress 5")
    running = chat.wait("p step 2/5")
    assert "slow(label=p, steps=5, delay=0.3)" in running
    screen = chat.wait("Tool results: p done after 5 steps")
    line = next(x for x in screen.splitlines() if "✓ slow(label=p" in x)
    assert "→ p done after 5 steps" in line and line.endswith(" ms)")


def test_two_parallel_tools_run_side_by_side(chat: Pane) -> None:
    chat.type("parallel")

    def both_running(screen: str) -> bool:
        lines = screen.splitlines()
        left = [x for x in lines if "slow(label=left" in x and " s" in x and "✓" not in x]
        right = [x for x in lines if "slow(label=right" in x and "✓" not in x]
        return bool(left and right)

    chat.wait(both_running)
    chat.wait(
        lambda s: after(
            s,
            "✓ slow(label=left",
            "✓ slow(label=right",
            "Tool results: left done after 4 steps; right done after 4 steps",
        )
    )


def test_a_steering_message_typed_during_a_tool_is_delivered_after_the_batch(
    chat: Pane, data_dir: Path
) -> None:
    chat.type("progress 8")
    chat.wait("p step 1/8")
    chat.type("steer: add a joke")
    queued = chat.wait("queued steering: steer: add a joke")
    assert "✓ slow" not in queued  # typed while the tool was running
    screen = chat.wait(
        lambda s: after(
            s,
            "✓ slow(label=p",
            "» steering delivered: steer: add a joke",
            "Steering received: steer: add a joke",
            "tokens:",
        )
    )
    assert "queued steering" not in screen.split("Steering received")[-1]


def test_follow_queues_a_follow_up_for_when_the_agent_would_stop(chat: Pane) -> None:
    # 20 steps of 0.3 s: the follow-up must be queued while the tool still runs, which a
    # loaded machine's tmux and prompt may take seconds to do (6 steps were not always enough).
    chat.type("progress 20")
    chat.wait("p step 1/20")
    chat.type("/follow and then?")
    chat.wait("queued follow-up: and then?")
    chat.wait(
        lambda s: after(
            s,
            "Tool results: p done after 20 steps",
            "» follow-up delivered: and then?",
            "You said: and then?",
            "tokens:",
        )
    )


def test_ctrl_c_mid_tool_aborts_answers_every_call_and_the_next_message_works(
    chat: Pane, data_dir: Path
) -> None:
    chat.type("slow")
    chat.wait("s step 2/40")
    chat.keys("C-c")
    screen = chat.wait("⏹ aborted")
    assert "✓ slow(label=s" in screen or "✗ slow(label=s" in screen
    chat.type("hello again")
    chat.wait(lambda s: after(s, "You said: hello again", "tokens:"))  # run ended
    chat.keys("C-d")
    assert chat.exit_code() == 0
    assert len(_every_call_answered_once(data_dir, "t")) == 1


def test_a_model_error_is_one_line_and_the_chat_goes_on(chat: Pane) -> None:
    chat.type("fail")
    screen = chat.wait("✗ model error: scripted model failure")
    assert "Traceback" not in screen
    chat.type("still here?")
    chat.wait("You said: still here?")


def test_an_answer_cut_off_at_the_output_limit_says_so(chat: Pane) -> None:
    # It ended mid-sentence, then the usage line, as if it were whole.
    chat.type("cut")
    chat.wait(
        lambda s: after(
            s,
            "The piston is connected to a crank",
            "⋯ cut off: the answer reached the model's output limit",
            "tokens:",
        )
    )


def test_escape_sequences_in_an_answer_are_shown_not_obeyed(chat: Pane) -> None:
    """As `yiem run` (inspect_ai#4854): an answer holding escape sequences cleared the
    chat's screen, retitled the window and wrote over the lines above; each control
    character is now shown as a symbol (ESC as ␛, BEL as ␇) and a carriage return dropped."""
    chat.type("hello")
    chat.wait(lambda s: after(s, "this answer streams in small chunks", "tokens:"))
    chat.type("escapes")  # after the run: a prompt, not steering
    screen = chat.wait(lambda s: after(s, "› escapes", "OVERWRITTEN", "tokens:"))
    assert "Safe␛[2J␛[H␛]0;pwned␇ answer␛[3A␛[KOVERWRITTEN" in screen, screen
    assert after(screen, "› hello", "this answer streams in small chunks", "› escapes")
    title = chat._tmux("display-message", "-p", "-t", "chat", "#{pane_title}")
    assert "pwned" not in title


def test_session_resumes_in_a_second_chat_with_its_last_exchange(data_dir: Path) -> None:
    first = Pane(data_dir, ["--session", "demo"])
    try:
        first.ready()
        first.type("remember the number 41")
        first.wait("You said: remember the number 41 [1 messages]")
        first.keys("C-d")
        assert first.exit_code() == 0
    finally:
        first.close()
    second = Pane(data_dir, ["--session", "demo"])
    try:
        second.wait(
            lambda s: after(
                s,
                "resumed 2 messages",
                "› remember the number 41",
                "You said: remember the number 41",
                "/help lists the commands",
            )
        )
        second.type("what was it?")
        second.wait("You said: what was it? [3 messages]")  # the history reached the model
        second.type("/sessions")
        second.wait("demo (this chat)")
    finally:
        second.close()


def test_a_resumed_answers_escape_sequences_are_shown_not_obeyed(data_dir: Path) -> None:
    """The last exchange a resumed chat shows went to the terminal raw: the answer that
    streamed with its escape sequences as symbols cleared the screen and retitled the
    window when the session was opened again."""
    first = Pane(data_dir, ["--session", "esc"])
    try:
        first.ready()
        first.type("escapes")
        first.wait(lambda s: after(s, "› escapes", "OVERWRITTEN", "tokens:"))
        first.keys("C-d")
        assert first.exit_code() == 0
    finally:
        first.close()
    second = Pane(data_dir, ["--session", "esc"])
    try:
        screen = second.wait(
            lambda s: after(s, "resumed 2 messages", "› escapes", "OVERWRITTEN", "/help")
        )
        assert "Safe␛[2J␛[H␛]0;pwned␇ answer␛[3A␛[KOVERWRITTEN" in screen, screen
        title = second._tmux("display-message", "-p", "-t", "chat", "#{pane_title}")
        assert "pwned" not in title
    finally:
        second.close()


def test_model_names_the_url_it_talks_to_without_its_secrets(data_dir: Path) -> None:
    """`/model NAME` for a model served over HTTP said only its name: a chat switched to
    an OpenAI-compatible server did not say which (the default, or `--base-url`'s). It
    now names the URL, with no password and no key in it."""
    url = "http://ann:hunter2@127.0.0.1:9/v1?api-key=sk-SECRET&api-version=1"
    pane = Pane(data_dir, ["--base-url", url])
    try:
        pane.ready()
        pane.type("/model ollama/qwen3")
        pane.wait("model: ollama/qwen3 at http://***@127.0.0.1:9/v1?api-key=***&api-version=1")
        pane.type("/model")
        screen = pane.wait("model: ollama/qwen3 at http://***@127.0.0.1:9/v1?api-key=***&")
        assert "hunter2" not in screen and "SECRET" not in screen and "ann:" not in screen
    finally:
        pane.close()
    pane = Pane(data_dir)  # no --base-url: the provider's own
    try:
        pane.ready()
        pane.type("/model ollama/qwen3")
        pane.wait("model: ollama/qwen3 at http://127.0.0.1:11434/v1 (from the next prompt)")
    finally:
        pane.close()


@pytest.mark.parametrize("name", ["", "a\nb", "\x1b[31m"])
def test_a_session_name_that_is_not_one_is_one_line_and_starts_nothing(
    data_dir: Path, name: str
) -> None:
    # `--session ''` started a generated session and control characters were taken, where
    # `yiem serve` refuses both (DESIGN §8: one line, non-zero exit).
    pane = Pane(data_dir, ["--session", name])
    try:
        assert pane.exit_code() == 1
        screen = pane.screen()
        assert "yiem: error: --session: a session id must be non-empty text" in screen
        assert "/help lists the commands" not in screen
    finally:
        pane.close()
    assert not (data_dir / "sessions.db").exists()


def test_a_session_resumed_after_an_aborted_run_says_the_run_was_aborted(
    data_dir: Path,
) -> None:
    """The last exchange of a session whose run was stopped (Ctrl-C mid-tool: the transcript
    ends with the tool's result; mid-answer: with an "aborted" message) showed only the
    question, as if the model had said nothing."""
    first = Pane(data_dir, ["--tools", str(TOOLS), "--session", "stopped"])
    try:
        first.ready()
        first.type("slow")
        first.wait("s step 2/40")
        first.keys("C-c")
        first.wait("⏹ aborted")
        first.keys("C-d")
        assert first.exit_code() == 0
    finally:
        first.close()
    second = Pane(data_dir, ["--tools", str(TOOLS), "--session", "stopped"])
    try:
        screen = second.wait(
            lambda s: after(
                s,
                "› slow",
                "⏹ the last run ended before it answered (stopped, or out of turns)",
                "/help lists the commands",
            )
        )
        assert "Traceback" not in screen
        second.type("hello again")
        second.wait("You said: hello again")
    finally:
        second.close()


def test_undo_removes_the_last_exchange_from_the_chat_and_the_store(
    chat: Pane, data_dir: Path
) -> None:
    chat.type("first")
    # the run ended: typed while it runs, "second" would steer it
    chat.wait(lambda s: after(s, "You said: first [1 messages]", "tokens:"))
    chat.type("second")
    chat.wait(lambda s: after(s, "You said: second [3 messages]", "tokens:"))  # run ended
    chat.type("/undo")
    chat.wait("undone: › second (2 messages removed)")
    chat.type("third")
    # the run ended (its footer is shown), so its answer is stored, not only on screen
    chat.wait(lambda s: after(s, "You said: third [3 messages]", "tokens:"))
    with SqliteSessionStore(data_dir / "sessions.db") as store:
        texts = [getattr(m, "content", None) for m in store.load("t")]
    assert len(texts) == 4


def test_undo_after_a_run_out_of_turns_removes_only_the_prompt_after_it(
    chat: Pane, data_dir: Path
) -> None:
    chat.type("loop")  # a tool call after each result, until the 24 model calls are spent
    chat.wait(lambda s: after(s, "› loop", "tokens:"))
    chat.type("second")  # a prompt after tool results, not a steering message
    chat.wait(lambda s: after(s, "› second", "You said: second [50 messages]", "tokens:"))
    chat.type("/undo")
    chat.wait("undone: › second (2 messages removed)")
    with SqliteSessionStore(data_dir / "sessions.db") as store:
        messages = store.load("t")
    assert len(messages) == 1 + 24 * 2  # the out-of-turns run stays whole
    assert isinstance(messages[-1], ToolResultMessage)


def test_undo_after_steering_removes_the_whole_run_it_steered(chat: Pane) -> None:
    chat.type("progress 8")
    chat.wait("p step 1/8")
    chat.type("steer: add a joke")  # typed during the tool, delivered after its result
    chat.wait(lambda s: after(s, "Steering received: steer: add a joke", "tokens:"))
    chat.type("/undo")
    chat.wait("undone: › progress 8 (5 messages removed)")


def test_a_history_file_that_cannot_be_opened_is_one_note_and_the_chat_works(
    data_dir: Path,
) -> None:
    """`chat_history` in the data folder that cannot be opened (here a folder of that
    name) filled the screen with prompt_toolkit's "Unhandled exception in event loop"
    traceback and "Press ENTER to continue..." at start. Now one note says the input
    history is not kept, and the chat runs with an in-memory history."""
    (data_dir / "chat_history").mkdir()
    pane = Pane(data_dir, [])
    try:
        screen = pane.ready()
        assert "input history is not kept:" in screen and "chat_history" in screen
        pane.type("first line")
        pane.wait(lambda s: after(s, "You said: first line [1 message", "tokens:"))
        pane.keys("Up")
        pane.wait(lambda s: s.rstrip().endswith("› first line"))
        pane.keys("C-c")  # clears the line
        pane.keys("C-c")
        pane.wait("Press Ctrl-C again or Ctrl-D to exit.")
        pane.keys("C-c")
        assert pane.exit_code() == 0
        screen = pane.screen()
        assert "Traceback" not in screen and "Unhandled exception" not in screen
    finally:
        pane.close()


def test_ctrl_d_exits_and_history_comes_back_with_the_up_arrow(data_dir: Path) -> None:
    pane = Pane(data_dir, [])
    try:
        pane.ready()
        pane.type("a line to remember")
        pane.wait(lambda s: after(s, "You said: a line to remember", "tokens:"))
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    pane = Pane(data_dir, [])
    try:
        pane.ready()
        pane.keys("Up")
        pane.wait(lambda s: s.rstrip().endswith("› a line to remember"))
        pane.keys("C-c")  # clears the line
        pane.keys("C-c")
        pane.wait("Press Ctrl-C again or Ctrl-D to exit.")
        pane.keys("C-c")
        assert pane.exit_code() == 0
    finally:
        pane.close()


def test_commands_and_an_unknown_one(chat: Pane) -> None:
    chat.type("/tools")
    chat.wait("slow  Count slowly.")
    chat.type("/frobnicate")
    chat.wait("unknown command /frobnicate; /help lists the commands")
    chat.type("/help")
    chat.wait("/undo  remove the last exchange")
    chat.type("/usage")
    chat.wait("session t: 0 model calls")


def test_a_command_that_reads_no_argument_refuses_one_and_does_nothing(
    chat: Pane, data_dir: Path
) -> None:
    # `/undo 2` removed one exchange, the "2" ignored; now nothing is removed
    chat.type("first")
    chat.wait(lambda s: after(s, "You said: first [1 messages]", "tokens:"))
    chat.type("second")
    chat.wait(lambda s: after(s, "You said: second [3 messages]", "tokens:"))
    chat.type("/undo 2")
    chat.wait("/undo takes no argument (remove the last exchange); nothing done")
    chat.type("/usage all")
    chat.wait("/usage takes no argument (tokens and cost of this session); nothing done")
    chat.type("/undo")
    chat.wait("undone: › second (2 messages removed)")
    with SqliteSessionStore(data_dir / "sessions.db") as store:
        assert len(store.load("t")) == 2


def test_a_long_chat_on_a_tiny_window_is_compacted_and_keeps_answering(data_dir: Path) -> None:
    pane = Pane(data_dir, ["--session", "long"], env={"FAUX_CONTEXT_WINDOW": "800"})
    try:
        pane.ready()
        for n in range(12):
            pane.type(f"message number {n} with some padding words to fill the window")
            pane.wait(lambda s, n=n: after(s, f"You said: message number {n} ", "tokens:"))
        screen = pane.wait("compacted ")
        line = next(x for x in screen.splitlines() if x.startswith("compacted "))
        assert "turns into a summary" in line
        # The model saw fewer messages than the session holds.
        last = [x for x in screen.splitlines() if "You said: message number 11" in x][-1]
        assert int(last.split("[")[1].split()[0]) < 24
    finally:
        pane.close()
    with SqliteSessionStore(data_dir / "sessions.db") as store:
        assert len(store.load("long")) == 24  # the stored session keeps everything


def test_write_tools_shows_the_tool_asks_and_the_new_tool_works_next_turn(
    data_dir: Path, tmp_path: Path
) -> None:
    written = tmp_path / "written"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--write-tools", str(written)])
    try:
        pane.ready()
        pane.type("write shout")
        shown = ("writeTool wants to add a tool: shout", '"text"', "def execute(", ".upper()")
        pane.wait(lambda s: after(s, *shown, "Write tool shout? [y/N]"))
        pane.type("n")  # declined: nothing is written, the model is told
        pane.wait(lambda s: after(s, "not written", "✗ writeTool", "declined", "Tool results:"))
        assert not (written / "shout.py").exists()
        pane.type("write shout")
        pane.wait(lambda s: after(s, "Write tool shout? [y/N] no", "Write tool shout? [y/N]"))
        pane.type("y")
        pane.wait(
            lambda s: after(
                s, "Write tool shout? [y/N] yes", "✓ writeTool", "Tool results:", "tokens:"
            )
        )
        assert (written / "shout.py").is_file()
        pane.type("/tools")
        # the new tool beside the --tools folder's (they were dropped when --write-tools
        # was given: the written folder replaced them)
        pane.wait(lambda s: after(s, "slow  Count slowly.", "writeTool  ", "shout  Upper-cases"))
        pane.type("use shout hello there")
        pane.wait("Tool results: HELLO THERE!")
    finally:
        pane.close()


def test_write_tools_a_whole_def_execute_is_shown_as_it_runs_and_works(
    data_dir: Path, tmp_path: Path
) -> None:
    """The 1.5B model's writeTool call (docs/chat.md): executeCode and validateCode are whole
    function definitions, not bodies. The question shows the functions as the file holds them
    (with the line calling the model's function), and the tool counts words on the next turn
    (before: its execute returned None, so every call answered "null")."""
    written = tmp_path / "written"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--write-tools", str(written)])
    try:
        pane.ready()
        pane.type("write word_count")
        shown = (
            "writeTool wants to add a tool: word_count",
            "def execute(tool_call_id, args, signal, on_update):",
            "    def execute(tool_call_id, args, signal, on_update):",
            "return execute(tool_call_id=tool_call_id, args=args, signal=signal, "
            "on_update=on_update)",
            "def validate_arguments(args):",
            "return validate_arguments(args=args)",
            "Write tool word_count? [y/N]",
        )
        pane.wait(lambda s: after(s, *shown))
        pane.type("y")
        pane.wait(lambda s: after(s, "Write tool word_count? [y/N] yes", "✓ writeTool", "tokens:"))
        pane.type("use word_count the quick brown fox jumps")
        screen = pane.wait(lambda s: after(s, "› use word_count", "Tool results: "))
        assert after(screen, "› use word_count", "✓ word_count", "Tool results: 5")
    finally:
        pane.close()


def test_write_tools_code_writetool_would_refuse_is_shown_but_not_asked_about(
    data_dir: Path, tmp_path: Path
) -> None:
    """The 0.5B model's writeTool call: its executeCode is one line that does not parse.
    The chat shows it and says why it is not asked about, and the model gets writeTool's
    own reason; before, the person was asked to approve a write that could not happen, and
    their "y" only led to the same refusal."""
    written = tmp_path / "written"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--write-tools", str(written)])
    try:
        pane.ready()
        pane.type("write reverse_text")
        refusal = "executeCode has a syntax error on its line 1: invalid syntax"
        screen = pane.wait(
            lambda s: after(
                s,
                "writeTool wants to add a tool: reverse_text",
                "def reverse_text(text): return text[::-1] return reverse_text(text)",
                f"not asked: writeTool would refuse this tool: {refusal}",
                "✗ writeTool",
                f"Tool results: {refusal}",
                "tokens:",
            )
        )
        assert "Write tool reverse_text? [y/N]" not in screen
        assert not written.exists() or not any(written.iterdir())
        pane.type("hello")  # the chat goes on; the next line is a prompt, not an answer
        pane.wait("Hello! I am a scripted faux model")
    finally:
        pane.close()


def test_a_broken_tool_file_is_one_line_and_the_other_tools_load(
    data_dir: Path, tmp_path: Path
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "slow.py").write_text((TOOLS / "slow.py").read_text())
    (tools / "broken.py").write_text("def get_tool(:\n")
    pane = Pane(data_dir, ["--tools", str(tools)])
    try:
        screen = pane.wait(lambda s: after(s, "broken.py", "/help lists the commands"))
        line = next(x for x in screen.splitlines() if "broken.py" in x)
        assert line.startswith("tool file ") and "failed to load" in line
        assert "Traceback" not in screen
        pane.type("progress 2")
        pane.wait("Tool results: p done after 2 steps")
    finally:
        pane.close()


def test_a_full_follow_up_queue_is_one_line_and_the_chat_goes_on(chat: Pane) -> None:
    chat.type("slow")
    chat.wait("s step 1/40")
    for n in range(33):  # the follow-up queue holds 32
        chat.type(f"/follow f{n}")
    chat.wait(
        lambda s: (
            "not queued: the follow-up queue is full" in s and s.count("queued follow-up: f") == 32
        )
    )
    chat.keys("C-c")
    chat.wait("⏹ aborted")
    chat.wait("(32 queued message(s) dropped by the abort)")
    chat.type("and now?")
    chat.wait("You said: and now?")


def test_mcp_tools_are_offered_and_a_lost_server_is_one_line(data_dir: Path) -> None:
    server = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"
    command = f"{sys.executable} {server}"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", command])
    try:
        pane.ready()
        # named as `yiem mcp list` and `yiem run` name it: its command line, folders kept
        pane.wait(lambda s: f'MCP server "{command}": ' in s and "(echo, " in s)
        pane.type("mcp echo hi there")
        pane.wait(lambda s: after(s, "✓ echo(text=hi there) → hi there", "tokens:"))
        pane.type("mcp crash")  # the server process dies mid-call
        screen = pane.wait(lambda s: after(s, "✗ crash() error: MCP server", "tokens:"))
        assert "Traceback" not in screen
        pane.type("hello")  # the chat goes on
        pane.wait(lambda s: after(s, "› hello", "Hello! I am"))
    finally:
        pane.close()


def test_an_mcp_server_s_key_is_shown_as_stars(data_dir: Path) -> None:
    server = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"
    command = f"{sys.executable} {server}"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", f"{command} --api-key sk-123"])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "MCP server" in s and "(echo, " in s)
        flat = " ".join(screen.split())
        assert f'MCP server "{command} --api-key ***": ' in flat and "sk-123" not in flat
    finally:
        pane.close()


def test_an_mcp_server_s_stderr_goes_to_a_log_not_onto_the_screen(data_dir: Path) -> None:
    server = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"
    command = f"{sys.executable} {server} --stderr-banner"
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", command])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "MCP server" in s and "(echo, " in s)
        assert f"log: {data_dir / 'mcp.log'}" in " ".join(screen.split())
        pane.type("mcp echo hi there")
        screen = pane.wait(lambda s: after(s, "✓ echo(text=hi there) → hi there", "tokens:"))
        assert "BANNER" not in screen
        assert "BANNER: the test server logs on stderr" in (data_dir / "mcp.log").read_text()
    finally:
        pane.close()


def test_an_mcp_command_that_does_not_split_is_one_line_at_start(data_dir: Path) -> None:
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", '"python server.py'])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "failed: cannot split the command" in s)
        assert "No closing quotation" in " ".join(screen.split())
        pane.type("hello")  # the first prompt is answered, not the failure shown late
        pane.wait(lambda s: after(s, "› hello", "Hello! I am"))
    finally:
        pane.close()


def test_an_mcp_server_that_dies_at_start_is_one_line_ending_with_its_stderr(
    data_dir: Path,
) -> None:
    # It said only "MCPError: Connection closed"; the reason was in mcp.log alone.
    dies = "python -c \"import sys; sys.exit('boom: missing config')\""
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--mcp", dies])
    try:
        pane.ready()
        screen = pane.wait(lambda s: "Connection closed" in s)
        flat = " ".join(screen.split())
        said = flat.find("Connection closed (the server process exited")
        assert 0 <= said < flat.find("; its stderr said: boom: missing config"), screen
    finally:
        pane.close()


def test_a_held_call_is_asked_yes_no_and_always(data_dir: Path, tmp_path: Path) -> None:
    """DESIGN §14 in the chat: `Run remove(name=…)? [y/N/a(lways)]` — "y" runs the call,
    "n" rejects it (the model sees the rejection), "a" runs it and every later call of that
    tool for the rest of the chat without asking. Question and answer stay in the
    scrollback; the held call is shown as waiting, not as failed."""
    removed = tmp_path / "removed.txt"
    removed.touch()
    pane = Pane(
        data_dir,
        ["--tools", str(APPROVAL_TOOLS), "--session", "ap"],
        env={"YIEM_TEST_REMOVED": str(removed)},
    )
    question = "? [y/N/a(lways)]"
    try:
        pane.ready()
        pane.type("remove alpha")
        pane.wait(f"Run remove(name=alpha){question}")
        assert removed.read_text() == ""  # held: nothing ran before the answer
        pane.type("y")
        pane.wait(
            lambda s: after(
                s,
                "⏸ remove(name=alpha) waiting for approval",
                f"Run remove(name=alpha){question} yes",
                "✓ remove(name=alpha) → removed alpha",
                "Tool results: removed alpha",
                "tokens:",
            )
        )
        assert removed.read_text() == "alpha\n"

        pane.type("remove beta")
        pane.wait(f"Run remove(name=beta){question}")
        pane.type("n")
        pane.wait(
            lambda s: after(
                s,
                f"Run remove(name=beta){question} no: rejected",
                "Tool results: Tool call rejected by the user: The user said no",
                "tokens:",
            )
        )
        assert removed.read_text() == "alpha\n"

        pane.type("remove gamma")
        pane.wait(f"Run remove(name=gamma){question}")
        pane.type("a")
        pane.wait(
            lambda s: after(
                s, f"Run remove(name=gamma){question} always", "removed gamma", "tokens:"
            )
        )
        pane.type("remove delta")  # approved for the rest of the chat: not asked again
        screen = pane.wait(
            lambda s: after(
                s,
                "remove(name=delta) approved (always)",
                "Tool results: removed delta",
                "tokens:",
            )
        )
        assert f"Run remove(name=delta){question}" not in screen
        assert screen.count(question) == 3
        assert "error: aborted" not in screen
        assert removed.read_text() == "alpha\ngamma\ndelta\n"
    finally:
        pane.close()
    calls = _every_call_answered_once(data_dir, "ap")  # the rejected call too
    assert len(calls) == 4


def test_ctrl_c_at_an_approval_question_rejects_the_call_and_the_chat_goes_on(
    data_dir: Path, tmp_path: Path
) -> None:
    """Ctrl-C at `Run …? [y/N/a(lways)]`: the held call does not run, gets its error result,
    the model is not called again, and the next message works (before the fix the
    question's task was cancelled, the call stayed held and every later message failed with
    "cannot start a new prompt: 1 tool call(s) await approval")."""
    removed = tmp_path / "removed.txt"
    removed.touch()
    pane = Pane(
        data_dir,
        ["--tools", str(APPROVAL_TOOLS), "--session", "stop"],
        env={"YIEM_TEST_REMOVED": str(removed)},
    )
    try:
        pane.ready()
        pane.type("remove eps")
        pane.wait("Run remove(name=eps)? [y/N/a(lways)]")
        pane.keys("C-c")
        pane.wait(lambda s: after(s, "no: stopped (Ctrl-C)", "✗ remove(name=eps)", "⏹ aborted"))
        pane.type("hello")
        screen = pane.wait(lambda s: after(s, "› hello", "Hello! I am a scripted", "tokens:"))
        assert "await approval" not in screen and "Tool results:" not in screen
    finally:
        pane.close()
    assert removed.read_text() == ""
    assert len(_every_call_answered_once(data_dir, "stop")) == 1


def test_a_chat_killed_at_an_approval_question_asks_it_again_when_resumed(
    data_dir: Path, tmp_path: Path
) -> None:
    """Issue 30: `kill -9` the chat while it asks `Run remove(...)? [y/N/a]`, then start it
    again on the same session. It says calls wait, asks the question again, and an answer
    resumes the run (before the fix it never asked again, and every prompt failed with the
    Python API's advice "approve(id) or reject(id, reason) ... await resume()")."""
    import os
    import signal

    removed = tmp_path / "removed.txt"
    removed.touch()
    args = ["--tools", str(APPROVAL_TOOLS), "--session", "killed"]
    env = {"YIEM_TEST_REMOVED": str(removed)}
    question = "Run remove(name=zeta)? [y/N/a(lways)]"
    first = Pane(data_dir, args, env=env)
    try:
        first.ready()
        first.type("remove zeta")
        first.wait(question)
        os.kill(first.chat_pid(), signal.SIGKILL)
        assert first.exit_code() == 137
    finally:
        first.close()
    assert removed.read_text() == ""
    second = Pane(data_dir, args, env=env)
    try:
        second.wait(
            lambda s: after(
                s, "this session has 1 tool call(s) waiting for your approval", question
            )
        )
        second.type("y")
        second.wait(lambda s: after(s, f"{question} yes", "Tool results: removed zeta", "tokens:"))
        assert removed.read_text() == "zeta\n"
        second.type("/approvals")
        second.wait(lambda s: after(s, "› /approvals", "no tool call waits for approval"))
        second.type("hello")
        screen = second.wait(lambda s: after(s, "› hello", "Hello! I am a scripted", "tokens:"))
        assert "approve(id)" not in screen and "resume()" not in screen
    finally:
        second.close()
    assert len(_every_call_answered_once(data_dir, "killed")) == 1


def test_a_long_tool_result_wraps_at_spaces_and_commands_are_echoed(
    data_dir: Path, tmp_path: Path
) -> None:
    """Issue 30 papercuts: the result line of a call wider than the terminal is wrapped
    between words (the terminal's own wrapping cut words in two; `capture-pane -J` joins
    such lines back into one wider than the pane), and a typed /command is echoed, so its
    output has a heading."""
    removed = tmp_path / "removed.txt"
    removed.touch()
    name = "the quick brown fox jumps over the lazy dog by the river bank"
    pane = Pane(
        data_dir,
        ["--tools", str(APPROVAL_TOOLS), "--session", "wrap"],
        env={"YIEM_TEST_REMOVED": str(removed)},
        width=60,
    )
    try:
        pane.ready()
        pane.type(f"remove {name}")
        pane.wait("[y/N/a(lways)]")
        pane.type("y")
        screen = pane.wait(lambda s: after(s, "✓ remove(", "Tool results: removed", "tokens:"))
        result = screen[screen.index("✓ remove(") :].split("Tool results:")[0]
        lines = result.splitlines()
        assert len(lines) > 1 and all(len(line) <= 60 for line in lines), lines
        assert f"→ removed {name} (" in " ".join(" ".join(lines).split())
        pane.type("/tools")
        pane.wait(lambda s: after(s, "› /tools", "remove"))
    finally:
        pane.close()


def test_a_narrow_pane_wraps_live_lines_and_notices_between_words(data_dir: Path) -> None:
    """The live lines (a running call, a queued steering message, the working line) were
    wrapped by prompt_toolkit and the /help lines by the terminal, both mid-word at the
    pane's edge ("hippopota" / "muses"). Each now breaks between words."""
    words = ("extraordinarily", "unbelievable", "hippopotamuses")
    pane = Pane(data_dir, ["--tools", str(TOOLS), "--session", "narrow"], width=40)

    def rows() -> list[str]:  # the screen as the pane shows it: lines not joined
        return [row.rstrip() for row in pane._tmux("capture-pane", "-p", "-t", "chat").splitlines()]

    def whole(*texts: str) -> None:
        for text in texts:
            assert any(text in row for row in rows()), (text, rows())

    try:
        pane.ready()
        pane.type("progress 20")  # 6 s: the live lines are still there when read
        pane.wait("p step 1/20")
        pane.type(f"steer: tell me about {' '.join(words)}")
        pane.wait(lambda s: "queued steering" in s and "hippo" in s)
        whole(*words, "message,", "stops")  # the queued line and the working line
        pane.wait("tokens:")
        pane.type("/help")
        pane.wait(lambda s: after(s, "› /help", "Ctrl-D (or Ctrl-C twice)"))
        whole("conversation", "approval;", "session")
    finally:
        pane.close()


def test_usage_counts_what_sub_agents_spent(data_dir: Path) -> None:
    """`/usage` sums the model calls and the tool results that carry a sub-agent's run."""
    call = ToolCall("c1", "researcher", {"input": "x"})
    with SqliteSessionStore(data_dir / "sessions.db") as store:
        for message in (
            UserMessage("ask the researcher"),
            AssistantMessage([call], usage=Usage(input=12, output=5), stop_reason="toolUse"),
            ToolResultMessage("c1", "researcher", [TextContent("found")], usage=Usage(300, 40)),
            AssistantMessage([TextContent("it found it")], usage=Usage(input=12, output=5)),
        ):
            store.append("team", message)
    pane = Pane(data_dir, ["--session", "team"])
    try:
        pane.wait("resumed 4 messages")
        pane.type("/usage")
        pane.wait("session team: 2 model calls · tokens: 324 in, 50 out")
    finally:
        pane.close()


def test_an_agent_file_s_mcp_servers_start_once_for_the_chat(
    data_dir: Path, tmp_path: Path
) -> None:
    """`/new` built the new session's agent from the file again, restarting its MCP
    servers (seconds for npx; a server that starts once failed the switch). They start
    once for the chat, serve every session, and stop when it ends."""
    server = Path(__file__).resolve().parents[2] / "mcp" / "mcp_test_server.py"
    markers = tmp_path / "markers"
    markers.mkdir()
    command = (  # MCP_TEST_START_ONCE: a second start of the server exits at once
        f"env MCP_TEST_MARKERS={markers} MCP_TEST_START_ONCE={tmp_path / 'once'} "
        f"{sys.executable} {server}"
    )
    team = tmp_path / "team.toml"
    team.write_text(f'[agents.helper]\nsystem_prompt = "Help."\nmcp = [{json.dumps(command)}]\n')
    pane = Pane(data_dir, ["--agent", str(team)])
    try:
        pane.ready()
        pane.type("/new second")
        pane.wait("new session second")
        pane.type("mcp echo hi there")
        pane.wait(lambda s: after(s, "✓ echo(text=hi there) → hi there", "tokens:"))
        mcp_pid = int((markers / "pid").read_text())
        pane.keys("C-d")
        assert pane.exit_code() == 0
    finally:
        pane.close()
    deadline = time.monotonic() + 15
    while True:  # the MCP server stopped with the chat
        try:
            os.kill(mcp_pid, 0)
        except ProcessLookupError:
            break
        assert time.monotonic() < deadline, "the MCP server outlived the chat"
        time.sleep(0.1)


def test_tools_lists_what_the_answering_agent_of_a_team_can_call(
    data_dir: Path, tmp_path: Path
) -> None:
    """`/tools` printed the entry agent's store alone: "no tools" for a router that only
    hands over (`examples/team/team.toml`), and again after a handoff to a specialist
    that has tools."""
    team = tmp_path / "team.toml"
    team.write_text(
        '[agents.router]\nsystem_prompt = "Route."\nhandoffs = ["helper"]\n\n'
        '[agents.helper]\ndescription = "Runs slow jobs."\nsystem_prompt = "Help."\n'
        f"tools = [{json.dumps(str(TOOLS))}]\n"
    )
    pane = Pane(data_dir, ["--agent", str(team)])
    try:
        pane.ready()
        pane.type("/tools")
        screen = pane.wait(
            lambda s: after(s, "› /tools", "router answers the next prompt", "transfer_to_helper")
        )
        assert "Runs slow jobs." in screen and "no tools" not in screen
        pane.type("mcp transfer_to_helper")  # the scripted model calls the transfer tool
        pane.wait(lambda s: after(s, "✓ transfer_to_helper", "tokens:"))
        pane.type("/tools")
        screen = pane.wait(lambda s: after(s, "helper answers the next prompt", "slow", "›"))
        tail = screen[screen.rindex("› /tools") :]
        assert "transfer_to_helper" not in tail and "no tools" not in tail
    finally:
        pane.close()


def test_a_pasted_file_is_not_kept_in_the_history_file(data_dir: Path) -> None:
    """The history file grew by every input whole, and every chat start reads it all into
    memory: one pasted megabyte made a megabyte read at each start from then on. An input
    over `KEPT_INPUT_CHARS` stays in this chat's history; a short one is kept."""
    long_line = "/" + "p" * 12_000  # a command: nothing for the faux model to echo slowly
    pane = Pane(data_dir, [])
    try:
        pane.ready()
        pane.paste(long_line)
        pane.keys("Enter")
        pane.wait("p; /help lists the commands")  # "unknown command /ppp…", wrapped
        pane.type("a short line")
        pane.wait(lambda s: after(s, "You said: a short line", "tokens:"))
        pane.keys("Up", "Up")  # this chat still has the long one
        pane.wait(lambda s: s.split("tokens:")[-1].rstrip().endswith("ppp"))
    finally:
        pane.close()
    kept = (data_dir / "chat_history").read_text(encoding="utf-8")
    assert "+a short line" in kept
    assert "ppp" not in kept
