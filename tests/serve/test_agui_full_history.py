"""AG-UI clients (CopilotKit, `HttpAgent`) send the thread's whole conversation with each
run: earlier user and assistant messages, tool calls and their results, then the new user
message. On a thread whose transcript the server stores, the second run adds only its own
turn (docs/serve.md, "The protocols": the stored session is the truth), never a second copy
of the history, and no tool of an earlier turn runs again."""

from __future__ import annotations

import httpx2 as httpx
from ag_ui import core as agui

from tests.serve._kit import faux_server
from tests.serve.test_protocols import agui_input, agui_run, check_agui_order
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import AssistantMessage, UserMessage, text_of


def test_a_second_run_sent_with_the_whole_history_adds_only_its_own_turn() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        first = agui_run(client, agui_input("t", "run-1", "weather Oslo"))
        check_agui_order(first)
        stored = store.load("t")
        assert [m.role for m in stored] == ["user", "assistant", "toolResult", "assistant"]
        call = next(e for e in first if isinstance(e, agui.ToolCallStartEvent))
        result = next(e for e in first if isinstance(e, agui.ToolCallResultEvent))
        answer = "".join(e.delta for e in first if isinstance(e, agui.TextMessageContentEvent))

        history: list[agui.Message] = [
            agui.UserMessage(id="u0", content="weather Oslo"),
            agui.AssistantMessage(
                id="a0",
                tool_calls=[
                    agui.ToolCall(
                        id=call.tool_call_id,
                        function=agui.FunctionCall(name="weather", arguments='{"city":"Oslo"}'),
                    )
                ],
            ),
            agui.ToolMessage(id="r0", tool_call_id=call.tool_call_id, content=result.content),
            agui.AssistantMessage(id="a1", content=answer),
            agui.UserMessage(id="u1", content="thanks"),
        ]
        second = agui_run(client, agui_input("t", "run-2", *history))
        check_agui_order(second)

        assert not [e for e in second if isinstance(e, agui.ToolCallStartEvent)]
        again = store.load("t")
        assert again[:4] == stored
        assert [m.role for m in again[4:]] == ["user", "assistant"]
        said = [m for m in again[4:] if isinstance(m, UserMessage | AssistantMessage)]
        assert [text_of(m.content) for m in said] == ["thanks", "echo: thanks"]
