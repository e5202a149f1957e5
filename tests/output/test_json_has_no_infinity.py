"""JSON has no infinity: jiter reads a number too large for a float (`1e400`) as `inf` even
when told to refuse `Infinity`, and such a value, sent on, fails a strict API (Python's
`json` writes it as `Infinity`). Tool-call arguments and a typed answer given in text
refuse it alike, with the message `Infinity` gets at the same place; the tool does not run
and the model is asked again."""

from __future__ import annotations

import json
import math
from typing import Any

import jiter
import pytest
from hypothesis import given, settings, strategies as st

from yiemagent import Agent, ToolResultMessage, tool
from yiemagent.ai.builder import complete_arguments
from yiemagent.ai.providers.faux import FauxModel, faux_malformed_tool_call
from yiemagent.types import ToolCall, text_of
from yiemagent.types.json_text import read_model_json


@st.composite
def huge_numbers(draw: st.DrawFn) -> str:
    """A JSON number beyond a float's range: a mantissa and an exponent of 309 or more."""
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.integers(1, 999_999))
    fraction = draw(st.sampled_from(["", ".5", ".25", ".0"]))
    marker = draw(st.sampled_from(["e", "E", "e+", "E+", "e0"]))
    exponent = draw(st.integers(309, 100_000))
    return f"{sign}{whole}{fraction}{marker}{exponent}"


@st.composite
def documents(draw: st.DrawFn) -> tuple[str, int]:
    """JSON text holding one huge number (after strings that look like one), and where."""
    before = draw(
        st.sampled_from(['{"x": ', '{"s": "1e400", "x": ', "[1,\n  2, ", '{"a": {"b": ['])
    )
    after = {"{": "}", "[": "]"}
    closing = "".join(after[c] for c in reversed(before) if c in after)
    number = draw(huge_numbers())
    return before + number + closing, len(before)


def infinity_message(text: str, at: int, number_length: int) -> str:
    """What jiter says of `text` with `Infinity` in place of the number at `at`."""
    with pytest.raises(ValueError) as refused:
        jiter.from_json(
            (text[:at] + "Infinity" + text[at + number_length :]).encode(), allow_inf_nan=False
        )
    return str(refused.value)


def read_as_arguments(text: str) -> dict[str, Any] | None:
    call = ToolCall(id="call-1", name="f")
    complete_arguments(call, text)
    assert not _holds_infinity(call.arguments)  # the partial reading too: it is sent on
    return call.arguments if call.partial_json is None else None


def _holds_infinity(value: object) -> bool:
    if isinstance(value, float):
        return math.isinf(value)
    if isinstance(value, dict):
        return any(_holds_infinity(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_infinity(v) for v in value)
    return False


@settings(max_examples=200, deadline=None)
@given(documents())
def test_a_huge_number_is_refused_as_infinity_is(document: tuple[str, int]) -> None:
    text, at = document
    length = len(text[at:].split("}")[0].split("]")[0])
    with pytest.raises(ValueError) as refused:
        read_model_json(text)
    assert str(refused.value) == infinity_message(text, at, length)
    if text.startswith("{"):
        assert read_as_arguments(text) is None
        with pytest.raises(ValueError):  # a trailing comma's repair does not let it in
            read_model_json(text[:-1] + ",}")


@settings(max_examples=100, deadline=None)
@given(
    exponent=st.integers(3, 100_000),
    digits=st.integers(1, 999),
    inside=st.booleans(),
)
def test_small_numbers_and_huge_ones_in_strings_are_read(
    exponent: int, digits: int, inside: bool
) -> None:
    number = f"{digits}e{exponent}"
    text = f'{{"s": "{number}", "n": 1e-{exponent}, "big": {"1" * 400}}}'
    value = read_model_json(text)
    assert value == {"s": number, "n": float(f"1e-{exponent}"), "big": int("1" * 400)}
    assert read_as_arguments(text) == value
    assert read_model_json('"a \\" 1e400"') == 'a " 1e400'
    if inside:
        assert read_model_json(f"[{digits}e2]") == [float(f"{digits}e2")]


@pytest.mark.parametrize("number", ["1e400", "-1.5E+999", "Infinity", "-Infinity", "NaN"])
async def test_a_call_with_no_json_number_is_answered_and_the_tool_does_not_run(
    number: str,
) -> None:
    ran: list[float] = []

    @tool
    def scale(factor: float) -> str:
        """Scale by a factor."""
        ran.append(factor)
        return "scaled"

    fm = FauxModel([faux_malformed_tool_call("scale", f'{{"factor": {number}}}'), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[scale])
    await agent.prompt("Scale it.")
    assert ran == []
    (result,) = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
    said = text_of(result.content)
    assert result.is_error and f"not valid JSON ({number} is no JSON number)" in said, said
    # what goes back to the model is JSON a strict API takes
    for message in agent.state.messages:
        for block in getattr(message, "content", []):
            if isinstance(block, ToolCall):
                json.dumps(block.arguments, allow_nan=False)


async def test_a_typed_answer_with_a_huge_number_is_asked_again() -> None:
    fm = FauxModel(['{"result": 1e400}', '{"result": 2.5}'])
    agent: Agent[Any] = Agent(model=fm.model, stream_fn=fm.stream_fn)
    reply = await agent.prompt("How far?", output_type=float)
    assert reply.output == 2.5 and fm.call_count == 2
    assert "not JSON" in text_of(fm.contexts[1].messages[-1].content)
