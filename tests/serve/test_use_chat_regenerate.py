"""`useChat`'s regenerate on `POST /api/chat` (DESIGN §18): the AI SDK's client drops the
answer it regenerates and sends the conversation up to the user message before it with
`trigger: "regenerate-message"`; the session then answers that message again instead of
holding it twice."""

from __future__ import annotations

from typing import Any

import httpx2 as httpx
import pytest

from tests.serve._kit import faux_server, serving
from tests.serve.test_protocols import ui_chat, user
from yiemagent import Agent
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.serve import create_app
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import AssistantMessage, Context, UserMessage, text_of

pytestmark = pytest.mark.timeout(120)


def user_texts(store: InMemorySessionStore, session: str) -> list[str]:
    return [text_of(m.content) for m in store.load(session) if isinstance(m, UserMessage)]


def test_regenerate_answers_the_last_question_again_without_repeating_it() -> None:
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        first, second = user("weather Oslo"), user("weather Lima")
        ui_chat(client, {"id": "c", "messages": [first]})
        ui_chat(client, {"id": "c", "messages": [first, second]})
        answer_id = "assistant-2"  # what the client calls the answer it drops
        chunks = ui_chat(
            client,
            {
                "id": "c",
                "trigger": "regenerate-message",
                "messageId": answer_id,
                "messages": [first, second],
            },
        )
        assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == (
            "Done: sunny in Lima"
        )
        assert user_texts(store, "c") == ["weather Oslo", "weather Lima"]
        roles = [m.role for m in store.load("c")]
        assert roles == ["user", "assistant", "toolResult", "assistant"] * 2

        # regenerating the first answer drops everything after its question
        ui_chat(client, {"id": "c", "trigger": "regenerate-message", "messages": [first]})
        assert user_texts(store, "c") == ["weather Oslo"]
        assert [m.role for m in store.load("c")] == ["user", "assistant", "toolResult", "assistant"]

        # a question the session does not hold at that place is asked as a new one
        ui_chat(client, {"id": "c", "trigger": "regenerate-message", "messages": [user("hi")]})
        assert user_texts(store, "c") == ["weather Oslo", "hi"]


def _team_brain(context: Context) -> AssistantMessage:
    """The router hands "math ..." questions to `math` and answers the rest itself; `math`
    (its system prompt says so) answers everything it is asked."""
    last = context.messages[-1]
    if context.system_prompt == "math":
        if isinstance(last, UserMessage):
            return faux_message(faux_text(f"math: {text_of(last.content)}"))
        question = next(m for m in reversed(context.messages) if isinstance(m, UserMessage))
        return faux_message(faux_text(f"math: {text_of(question.content)}"))
    if isinstance(last, UserMessage) and text_of(last.content).startswith("math"):
        return faux_message(faux_tool_call("transfer_to_math", {}))
    return faux_message(faux_text(f"router: {text_of(last.content)}"))


def test_regenerate_before_a_handoff_answers_with_the_agent_active_there() -> None:
    # After a handoff the target stays active (it answers the next prompt); regenerating an
    # answer given before the handoff rewinds to where the router was active, but the
    # target answered the regenerated question.
    store = InMemorySessionStore()
    fm = FauxModel([_team_brain] * 100, chunk_size=8)

    def make_agent(session_id: str) -> Agent[Any]:
        maths = Agent("math", name="math", model=fm.model, stream_fn=fm.stream_fn)
        return Agent(
            "router",
            name="router",
            model=fm.model,
            stream_fn=fm.stream_fn,
            handoffs=[maths],
            session_store=store,
            session_id=session_id,
        )

    app = create_app(make_agent, session_store=store)
    with serving(app) as url, httpx.Client(base_url=url) as client:
        first, second = user("hello"), user("math 2+2")
        ui_chat(client, {"id": "t", "messages": [first]})
        ui_chat(client, {"id": "t", "messages": [first, second]})
        writers = [m.agent for m in store.load("t") if isinstance(m, AssistantMessage)]
        assert writers == ["router", "router", "math"]

        chunks = ui_chat(client, {"id": "t", "trigger": "regenerate-message", "messages": [first]})
        said = "".join(c["delta"] for c in chunks if c["type"] == "text-delta")
        assert said == "router: hello"
        assert [m.agent for m in store.load("t") if isinstance(m, AssistantMessage)] == ["router"]
        ui_chat(client, {"id": "t", "messages": [first, user("and you?")]})
        assert store.load("t")[-1].agent == "router"  # type: ignore[union-attr]


def test_an_edited_question_replaces_it_and_what_followed() -> None:
    """`useChat`'s `sendMessage({text, messageId})` edits an earlier user message: the
    client drops everything after it and sends the edited text under the same id with
    `trigger: "submit-message"`. The session is cut back the same way, so the model does
    not read the old question and answers the client no longer shows."""
    store = InMemorySessionStore()
    with faux_server(store) as (url, _), httpx.Client(base_url=url) as client:
        first, second = user("weather Oslo"), user("weather Lima")
        ui_chat(client, {"id": "c", "messages": [first]})
        ui_chat(client, {"id": "c", "messages": [first, second]})

        edited = {**first, "parts": [{"type": "text", "text": "weather Rome"}]}
        chunks = ui_chat(
            client,
            {
                "id": "c",
                "trigger": "submit-message",
                "messageId": first["id"],
                "messages": [edited],
            },
        )
        assert "".join(c["delta"] for c in chunks if c["type"] == "text-delta") == (
            "Done: sunny in Rome"
        )
        assert user_texts(store, "c") == ["weather Rome"]
        assert [m.role for m in store.load("c")] == ["user", "assistant", "toolResult", "assistant"]

        # a plain new message (no messageId) is still added after what the session holds
        ui_chat(client, {"id": "c", "trigger": "submit-message", "messages": [edited, second]})
        assert user_texts(store, "c") == ["weather Rome", "weather Lima"]
