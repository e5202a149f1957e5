"""A call another model made with a made-up name ("get.time") is not shown to the embedded
model as a call of a tool offered (`get_time`), as the hosted providers do not send it so."""

from __future__ import annotations

from collections.abc import Callable

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import GET_TIME, answer, conversation, run


async def test_a_made_up_name_is_not_shown_as_a_tool_offered(
    fake: Callable[..., FakeRuntime],
) -> None:
    runtime = fake([answer("It failed.")], names=["answer"])
    messages = conversation("What time is it in Oslo?", ("get.time", {"place": "Oslo"}, "no"))
    message = await run(messages, [GET_TIME])
    assert message.text == "It failed."
    prompt = str(runtime.requests[-1]["messages"])
    # Before: shown as `{"name": "get_time", …}` answered "no", a real tool failing.
    assert '"name": "get_time"' not in prompt
