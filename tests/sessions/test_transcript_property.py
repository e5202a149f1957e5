"""`transcript_problems` (DESIGN R-4.1): every transcript the loop writes — any mix of
turns, tool calls, errors, and a tail cut by a crash during the tools — has no problem; a
foreign row inside a tool batch, a lost result, or a repeated result is always found."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from yiemagent import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from yiemagent.loop import transcript_problems

# a turn: the number of tool calls of its assistant message (0 = a plain answer)
turns = st.lists(st.integers(min_value=0, max_value=4), min_size=1, max_size=12)


def build(shape: list[int], writer: str = "w") -> list[Any]:
    out: list[Any] = []
    for t, calls in enumerate(shape):
        out.append(UserMessage(f"{writer} prompt {t}"))
        ids = [f"{writer}-{t}-{c}" for c in range(calls)]
        out.append(AssistantMessage([TextContent("x"), *(ToolCall(i, "echo", {}) for i in ids)]))
        out += [ToolResultMessage(i, "echo", [TextContent("ok")]) for i in ids]
        if calls:
            out.append(AssistantMessage([TextContent("done")]))
    return out


@given(turns, st.integers(min_value=0, max_value=4))
def test_what_the_loop_writes_has_no_problem(shape: list[int], cut: int) -> None:
    messages = build(shape)
    assert transcript_problems(messages) == []
    if shape[-1]:  # a crash during the last batch: its tail is unanswered, still no problem
        tail = messages[:-1]  # drop the final answer
        keep = len(tail) - min(cut, shape[-1])
        assert transcript_problems(tail[:keep]) == []


def _batches(messages: list[Any]) -> list[int]:
    """Positions of assistant messages with tool calls that are not the last message."""
    return [
        i for i, m in enumerate(messages[:-1]) if isinstance(m, AssistantMessage) and m.tool_calls
    ]


@given(turns.filter(lambda s: any(s)), st.data())
def test_breaking_a_batch_is_always_found(shape: list[int], data: st.DataObject) -> None:
    messages = build(shape)
    at = data.draw(st.sampled_from(_batches(messages)))
    calls = len(messages[at].tool_calls)
    how = data.draw(st.sampled_from(["foreign user", "foreign assistant", "lost", "repeated"]))
    broken = list(messages)
    if how == "foreign user":
        broken.insert(at + data.draw(st.integers(1, calls)), UserMessage("other writer"))
    elif how == "foreign assistant":
        broken.insert(at + data.draw(st.integers(1, calls)), AssistantMessage([TextContent("y")]))
    elif how == "lost":
        del broken[at + data.draw(st.integers(1, calls))]
    else:
        k = at + data.draw(st.integers(1, calls))
        broken.insert(k, broken[k])
    assert transcript_problems(broken), how
