"""The Agent's per-prompt cost does not grow with the history (DESIGN §9; issue 12 item 6):
each run converts only the messages added since the last one, and the loop reuses its copy
of the transcript — while the model still sees exactly the agent's transcript after any
assignment, append or reset."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import yiemagent.loop._agent_loop as convert
from yiemagent import Agent, AgentMessage, AssistantMessage, TextContent, UserMessage
from yiemagent.ai.providers.faux import FauxModel


def history(size: int) -> list[AgentMessage]:
    out: list[AgentMessage] = []
    for n in range(size // 2):
        out += [UserMessage(f"q{n}"), AssistantMessage([TextContent(f"a{n}")])]
    return out


async def test_each_prompt_converts_only_the_new_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sizes: list[int] = []
    whole = convert.default_convert_to_llm

    def counting(messages: Any) -> Any:
        sizes.append(len(messages))
        return whole(messages)

    monkeypatch.setattr(convert, "default_convert_to_llm", counting)
    fm = FauxModel([f"r{i}" for i in range(10)])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, messages=history(2000))
    for i in range(10):
        await agent.prompt(f"p{i}")
    assert sizes == [2001]  # the first run converts the history once; the others only append
    assert len(agent.state.messages) == 2020
    assert fm.contexts[-1].messages == agent.state.messages[:-1]


ops = st.lists(
    st.one_of(
        st.just(("prompt",)),
        st.tuples(st.just("undo"), st.integers(0, 4)),
        st.just(("append",)),
        st.just(("reset",)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops)
async def test_the_model_always_sees_the_agent_transcript(steps: list[tuple[Any, ...]]) -> None:
    fm = FauxModel([f"reply {i}" for i in range(len(steps))])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, messages=history(6))
    for step in steps:
        if step[0] == "prompt":
            before = list(agent.state.messages)
            await agent.prompt("next")
            sent = fm.contexts[-1].messages
            assert sent == [*before, agent.state.messages[len(before)]]
            assert agent.state.messages[: len(before)] == before
        elif step[0] == "undo":
            agent.state.messages = agent.state.messages[
                : max(0, len(agent.state.messages) - step[1])
            ]
        elif step[0] == "append":
            agent.state.messages.append(UserMessage("added by hand"))
        else:
            agent.reset()
