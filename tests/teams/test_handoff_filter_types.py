"""A handoff's `input_filter` that is no function, or returns no list of messages, is named
(DESIGN §8), as openai-agents' `test_non_callable_input_filter_causes_error` and
`test_invalid_input_filter_fails` (tests/test_agent_runner.py) refuse them. A filter that
returned a text was listed as its letters: the target's model was called with characters
for messages, none of them a message it could read. An async filter (openai-agents'
`HandoffInputFilter` may return an awaitable) is awaited."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from yiemagent import AgentRunError, ConfigError, Handoff, UserMessage

from ..approvals._kit import transcript_problems
from ._kit import calls, scripted


def test_an_input_filter_that_is_no_function_is_refused_when_the_agent_is_made() -> None:
    target, _ = scripted("target", [])
    with pytest.raises(ConfigError, match="input_filter of the handoff to 'target' is 'foo'"):
        scripted("entry", [], handoffs=[Handoff(target, input_filter="foo")])  # type: ignore[arg-type]


@pytest.mark.parametrize(("returned", "kind"), [("foo", "str"), (None, "NoneType"), (7, "int")])
async def test_an_input_filter_returning_no_list_is_named(returned: Any, kind: str) -> None:
    target, target_fm = scripted("target", ["never"])
    entry, _ = scripted(
        "entry",
        [calls(("transfer_to_target", {}))],
        handoffs=[Handoff(target, input_filter=lambda messages: returned)],
    )
    named = f"the input_filter of the handoff to 'target' returned {kind}, not the list"
    with pytest.raises(AgentRunError, match=named):
        await entry.prompt("one")
    assert target_fm.call_count == 0
    assert transcript_problems(entry.state.messages) == []


@pytest.mark.parametrize("shape", [tuple, lambda kept: (m for m in kept)], ids=["tuple", "gen"])
async def test_an_input_filter_may_return_a_tuple_or_a_generator(shape: Any) -> None:
    def users_only(messages: list[Any]) -> Any:
        return shape([m for m in messages if m.role == "user"])

    target, target_fm = scripted("target", ["answered"])
    handoff = Handoff(target, input_filter=users_only)
    entry, _ = scripted("entry", [calls(("transfer_to_target", {}))], handoffs=[handoff])
    assert (await entry.prompt("one")).text == "answered"
    assert [m.role for m in target_fm.contexts[0].messages] == ["user"]


async def test_an_async_filter_and_an_async_callable_object_are_awaited() -> None:
    async def users_only(messages: list[Any]) -> list[Any]:
        await asyncio.sleep(0)  # e.g. a model call that summarises
        return [m for m in messages if isinstance(m, UserMessage)]

    class UsersOnly:
        async def __call__(self, messages: list[Any]) -> list[Any]:
            return await users_only(messages)

    for input_filter in (users_only, UsersOnly()):
        target, target_fm = scripted("target", ["answered", "again"])
        handoff = Handoff(target, input_filter=input_filter)
        entry, _ = scripted("entry", [calls(("transfer_to_target", {}))], handoffs=[handoff])
        assert (await entry.prompt("one")).text == "answered"
        assert (await entry.prompt("two")).text == "again"  # a later prompt's view too
        assert [m.role for m in target_fm.contexts[0].messages] == ["user"]
        roles = [m.role for m in target_fm.contexts[1].messages]
        assert roles == ["user", "assistant", "user"]
