"""`same_call`: a call the reply already holds is left out."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import GET_TIME, conversation, notes, reply, run, scene
from yiemagent.ai.providers.local.prompt import call_key
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, Dropped, SameCall


def test_a_call_already_in_the_reply_is_left_out_without_asking_again() -> None:
    at = scene(conversation("Time in Oslo?"), [GET_TIME])
    assert SameCall().judge(GET_TIME, {"place": "Oslo"}, at) is None
    at.emitted.add(call_key("get_time", {"place": "Oslo"}))
    verdict = SameCall().judge(GET_TIME, {"place": "Oslo"}, at)
    assert isinstance(verdict, Dropped) and not verdict.ask_again


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Time in Oslo?")
    twice = reply(("get_time", {"place": "Oslo"}), ("get_time", {"place": "Oslo"}))
    fake([twice])
    once = await run(messages, [GET_TIME])
    assert len(once.tool_calls) == 1
    assert [n["action"] for n in notes(once, "same_call")] == ["dropped"]
    fake([twice])
    both = await run(messages, [GET_TIME], DEFAULT_POLICY.without("same_call", "adds_part"))
    assert len(both.tool_calls) == 2
