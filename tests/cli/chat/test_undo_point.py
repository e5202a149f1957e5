"""Where `/undo` cuts a chat's transcript (`undo_point`): by message order and by what the
chat sent as steering, whatever the messages' timestamps say (a wall clock can step back)."""

from __future__ import annotations

from yiemagent.cli.chat._commands import undo_point
from yiemagent.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

HOUR_MS = 3_600_000


def call(n: int, at: int) -> list[object]:
    """One turn of a run: a call of `tick` and its result, both stamped `at` (ms)."""
    answer = AssistantMessage(content=[ToolCall(f"c{n}", "tick", {})], stop_reason="toolUse",
                              timestamp=at)  # fmt: skip
    return [answer, ToolResultMessage(f"c{n}", "tick", [], timestamp=at)]


def test_a_prompt_after_a_stopped_run_is_cut_alone_after_the_clock_stepped_back() -> None:
    """The run stopped after its tools (out of turns); the clock then stepped back an hour
    before the next prompt. It used to count as steering, and `/undo` removed the run too."""
    now = 1_800_000_000_000
    first = UserMessage("loop", timestamp=now)
    second = UserMessage("second", timestamp=now - HOUR_MS)
    messages = [first, *call(1, now + 1), *call(2, now + 2), second,
                AssistantMessage(timestamp=now - HOUR_MS + 5)]  # fmt: skip
    assert undo_point(messages) == 5


def test_steering_the_chat_sent_belongs_to_the_run_it_steered() -> None:
    """Steering stamped later than every result (as a prompt would be) still is steering."""
    now = 1_800_000_000_000
    steering = UserMessage("add a joke", timestamp=now + HOUR_MS)
    messages = [UserMessage("progress", timestamp=now), *call(1, now + 1), steering,
                AssistantMessage(timestamp=now + HOUR_MS + 5)]  # fmt: skip
    assert undo_point(messages, [steering]) == 0
    assert undo_point(messages) == 3  # not sent by this chat: taken for a prompt, cut alone


def test_nothing_to_undo_and_a_prompt_after_an_answer() -> None:
    assert undo_point([]) is None
    answer = AssistantMessage(timestamp=1)
    messages = [UserMessage("a", timestamp=5), answer, UserMessage("b", timestamp=0), answer]
    assert undo_point(messages) == 2
