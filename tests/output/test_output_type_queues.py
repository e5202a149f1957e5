"""A run with an output type and the Agent's queues (DESIGN §14, R-5.4, R-6.4): a steering
or follow-up message that comes while the model gives its output is answered in that run,
as after a text answer, and the run's output is the value given last; it is never left in
the queue for the next prompt to answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from yiemagent import Agent, UserMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text, faux_tool_call
from yiemagent.types import Context, OutputSpec, text_of


class Count(BaseModel):
    n: int


def answer(mode: str, n: int) -> Any:
    """The model's answer `n` in `mode`: through the output tool, or as JSON text."""

    def reply(context: Context) -> Any:
        if mode == "tool":
            return faux_message(faux_tool_call("final_result", {"n": n}))
        return faux_message(faux_text(f'{{"n": {n}}}'))

    return reply


@pytest.mark.parametrize("mode", ["tool", "native"])
@pytest.mark.parametrize("queue", ["steer", "follow_up"])
async def test_a_message_queued_during_the_answer_is_answered_in_the_same_run(
    mode: str, queue: str
) -> None:
    fm = FauxModel([answer(mode, 1), answer(mode, 2), answer(mode, 3)], delay_s=0.05)
    agent = Agent("sys", fm.model, stream_fn=fm.stream_fn, output_type=OutputSpec(Count, mode=mode))

    running = asyncio.create_task(agent.prompt("count"))
    await asyncio.sleep(0.02)  # the model is writing its first answer
    getattr(agent, queue)(UserMessage("count one more"))
    reply = await running

    assert reply.output == Count(n=2) and fm.call_count == 2
    seen = [text_of(m.content) for m in fm.contexts[1].messages if isinstance(m, UserMessage)]
    assert seen == ["count", "count one more"]

    again = await agent.prompt("and now?")  # nothing stale is left in the queue
    assert again.output == Count(n=3) and fm.call_count == 3
    seen = [text_of(m.content) for m in fm.contexts[2].messages if isinstance(m, UserMessage)]
    assert seen[-1] == "and now?" and seen.count("count one more") == 1
