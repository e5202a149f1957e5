"""`extra_call`: a lone first call is continued as a list, and one more call asked for."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import GET_TIME, conversation, offer, reply, run, turn
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, ExtraCall


async def test_only_the_first_round_asks_for_more() -> None:
    first, later = offer(), offer()
    await ExtraCall().shape(turn(conversation("Times?"), [GET_TIME]), first)
    after = conversation("Times?", ("get_time", {"place": "Oslo"}, "1:00"))
    await ExtraCall().shape(turn(after, [GET_TIME]), later)
    assert (first.extra_call, later.extra_call) == (True, False)


async def test_without_it_a_lone_call_ends_the_reply(fake: Callable[..., FakeRuntime]) -> None:
    messages = conversation("Time in Oslo and in Lima?")
    runtime = fake([reply(("get_time", {"place": "Oslo"}))])
    message = await run(messages, [GET_TIME], DEFAULT_POLICY.without("extra_call"))
    assert [c.arguments["place"] for c in message.tool_calls] == ["Oslo"]
    assert not any("grammar" in r for r in runtime.requests)
