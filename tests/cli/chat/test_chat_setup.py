"""`yiem chat` outside the terminal: what it imports, and bad starts as one line (§8)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._yiem import yiem_in
from tests.cli.chat._tmux import FAUX_SCRIPT
from yiemagent.cli.chat.setup import ChatOptions, build_setup, last_exchange, last_run_note
from yiemagent.cli.render import nested_line
from yiemagent.errors import ConfigError
from yiemagent.types import (
    AgentEndEvent,
    AgentMessage,
    AssistantMessage,
    NestedAgentEvent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_neither_yiemagent_nor_the_cli_imports_prompt_toolkit() -> None:
    code = (
        "import sys, yiemagent, yiemagent.compaction, yiemagent.cli.main; "
        "print(sorted(m for m in sys.modules if m.startswith(('prompt_toolkit', 'rich.live'))))"
    )
    assert _python(code) == "[]"


def test_without_a_terminal_chat_says_so_in_one_line(tmp_path: Path) -> None:
    done = yiem_in(tmp_path, "chat", env={"YIEM_CHAT_FAUX_SCRIPT": str(FAUX_SCRIPT)}, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        'yiem: error: yiem chat needs a terminal; for one prompt use: yiem run "..."'
    ]


@pytest.mark.parametrize(
    ("given", "option"),
    [
        ({"mcp": ["python server.py"]}, "--mcp"),
        ({"mcp_urls": ["http://127.0.0.1:9/mcp"]}, "--mcp-url"),
    ],
)
def test_without_the_mcp_client_the_line_names_the_option_given(
    monkeypatch: pytest.MonkeyPatch, given: dict[str, list[str]], option: str
) -> None:
    monkeypatch.setitem(sys.modules, "yiemagent.mcp", None)  # import → ImportError
    with pytest.raises(ConfigError) as raised:
        build_setup(ChatOptions(model="faux/m", **given))  # type: ignore[arg-type]
    assert str(raised.value).startswith(f"{option} needs yiemagent's MCP client")


def _assistant(stop_reason: str, error: str | None = None, calls: int = 0) -> AssistantMessage:
    content: list[Any] = [TextContent(text="partial")]
    content += [ToolCall(id=f"c{i}", name="t", arguments={}) for i in range(calls)]
    return AssistantMessage(
        content=content,
        api="faux",
        provider="faux",
        model="m",
        stop_reason=stop_reason,  # type: ignore[arg-type]
        error_message=error,
    )


@pytest.mark.parametrize(
    ("tail", "note"),
    [
        ([_assistant("stop")], None),
        ([_assistant("toolUse", calls=1)], None),  # held for approval: the chat asks again
        ([_assistant("aborted", "Request was aborted")], "⏹ the last run was aborted"),
        (  # Ctrl-C while the model wrote a call: the call is answered "not executed"
            [
                _assistant("aborted", "Request was aborted", calls=1),
                ToolResultMessage(
                    tool_call_id="c0",
                    tool_name="t",
                    content=[TextContent(text="not executed: the run was aborted")],
                    is_error=True,
                ),
            ],
            "⏹ the last run was aborted before it answered",
        ),
        ([_assistant("error", "HTTP 500: overloaded")], "✗ the last run failed: HTTP 500"),
        (  # a model's escape sequences shown as symbols, as in the answer
            [_assistant("error", "bad\x1b[2J\x1b]0;pwned\x07\r\nreply")],
            "✗ the last run failed: bad␛[2J␛]0;pwned␇ reply",
        ),
        ([], "⏹ the last run ended before it answered"),  # killed before the model wrote
    ],
)
def test_the_last_exchange_of_a_resumed_session_says_how_its_run_ended(
    tail: list[AgentMessage], note: str | None
) -> None:
    prompt = UserMessage(content=[TextContent(text="what now?")])
    found = last_run_note([prompt, *tail])
    assert found == note if note is None else (found or "").startswith(note), found
    assert last_exchange([UserMessage(content="plain text"), *tail])[0] == "plain text"


def test_a_sub_agents_stopped_line_shows_escape_sequences_as_symbols() -> None:
    """The "✗ stopped" line of a sub-agent a guardrail stopped (`yiem run` and `yiem chat`
    print it) carried the error text raw, so a terminal obeyed escape sequences the model
    wrote (the guardrail message may quote it), where the answer shows them as symbols."""
    stopped = _assistant("error", "output guardrail 'g' tripped: \x1b[2J\x1b[Hgone\r\nok")
    event = NestedAgentEvent(
        ("lead", "helper"), "c1", AgentEndEvent(messages=[stopped], reason="guardrail")
    )
    line = nested_line(event)
    assert line is not None and "\x1b" not in line and "\r" not in line, line
    assert "✗ stopped: output guardrail 'g' tripped: ␛[2J␛[Hgone ok[/]" in line, line
