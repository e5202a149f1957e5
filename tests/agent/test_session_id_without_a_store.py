"""An `Agent`'s `session_id` is checked alike with and without a `session_store`
(docs/sessions.md): an id a store would refuse (empty, a control character, a lone
surrogate) is a `ConfigError` at construction and when assigned, not an id that a provider
silently drops (an empty `prompt_cache_key` is never sent) or an HTTP header refuses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import Agent, ConfigError
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.sessions import InMemorySessionStore

BAD = ["", "a\nb", "a\x00b", "\x1b[31m", "\ud800"]


def agent(**options: Any) -> Agent[Any]:
    fm = FauxModel(["ok"])
    return Agent(model=fm.model, stream_fn=fm.stream_fn, **options)


@pytest.mark.parametrize("session_id", BAD, ids=range(len(BAD)))
def test_an_id_no_store_could_hold_is_refused_without_a_store_too(session_id: str) -> None:
    with pytest.raises(ConfigError) as stored:
        agent(session_id=session_id, session_store=InMemorySessionStore())
    with pytest.raises(ConfigError) as alone:
        agent(session_id=session_id)
    assert str(alone.value) == str(stored.value)
    assert "a session id must be non-empty text" in str(alone.value)


@pytest.mark.parametrize("session_id", BAD, ids=range(len(BAD)))
def test_assigning_such_an_id_is_refused_and_keeps_the_old_one(session_id: str) -> None:
    made = agent(session_id="kept")
    with pytest.raises(ConfigError, match="a session id must be non-empty text"):
        made.session_id = session_id
    assert made.session_id == "kept"
    made.session_id = None  # no session at all stays allowed
    assert made.session_id is None


def test_an_id_that_is_no_text_is_refused_when_assigned() -> None:
    made = agent()
    with pytest.raises(ConfigError, match="session_id must be a str or None, not int"):
        made.session_id = 5  # type: ignore[assignment]
    assert made.session_id is None


@settings(max_examples=100, deadline=None)
@given(session_id=st.text(max_size=8))
def test_property_an_id_is_accepted_without_a_store_exactly_when_a_store_accepts_it(
    session_id: str,
) -> None:
    def accepted(**options: Any) -> bool:
        try:
            agent(session_id=session_id, **options)
        except ConfigError:
            return False
        return True

    assert accepted() == accepted(session_store=InMemorySessionStore())
