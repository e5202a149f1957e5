"""`useChat`'s regenerate on `POST /api/chat` (DESIGN §18): the AI SDK's client drops the
answer it regenerates and sends the conversation up to the user message before it with
`trigger: "regenerate-message"`; the session then answers that message again instead of
holding it twice."""

from __future__ import annotations

import httpx2 as httpx
import pytest

from tests.serve._kit import faux_server
from tests.serve.test_protocols import ui_chat, user
from yiemagent.sessions import InMemorySessionStore
from yiemagent.types import UserMessage, text_of

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
