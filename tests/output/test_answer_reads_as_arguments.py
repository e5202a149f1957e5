"""A typed answer given in text reads as tool-call arguments read: the same text, the same
value. Models slip the same way in both (a comma before a closing bracket, a Python literal,
a line break written as is inside a string); a typed answer with such a slip was answered
"the answer is not JSON" while the same text as a tool's arguments was read as meant."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, strategies as st
from pydantic import BaseModel

from yiemagent import Agent, OutputSpec, ToolResultMessage, UserMessage, tool
from yiemagent.ai.builder import complete_arguments
from yiemagent.ai.providers.faux import FauxModel, faux_malformed_tool_call
from yiemagent.types import OutputValidationError, ToolCall, text_of

SLIPS = [
    '{"city": "Oslo", "days": 3,}',
    "{'city': 'Oslo', 'days': 3}",
    '{"city": "Oslo", "days": 3}}',
    '{"city": "Os\nlo", "days": 3}',
    '{"city": "C:\\Oslo", "days": 3}',
]
"""Slips a small model makes in the JSON it writes, each read as meant."""


class Trip(BaseModel):
    city: str
    days: int


def as_arguments(text: str) -> dict[str, Any] | None:
    """The object a finished tool call with argument text `text` holds; None when the
    call keeps its raw text (its arguments are not read as a whole object)."""
    call = ToolCall(id="call-1", name="f")
    complete_arguments(call, text)
    return call.arguments if call.partial_json is None else None


def as_answer(text: str) -> dict[str, Any] | None:
    """The value of an answer text for a `dict` output type; None when it is refused."""
    try:
        return OutputSpec(dict[str, Any]).validate_text(text)
    except OutputValidationError:
        return None


async def test_a_slip_in_a_typed_answer_is_read_as_the_same_slip_in_arguments() -> None:
    @tool
    def plan(city: str, days: int) -> str:
        """Plan a trip."""
        return json.dumps({"city": city, "days": days})

    for text in SLIPS:
        # the text as a tool's arguments, streamed through a provider's message builder
        fm = FauxModel([faux_malformed_tool_call("plan", text), "done"])
        await Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[plan]).prompt("q")
        (result,) = [m for m in fm.contexts[1].messages if isinstance(m, ToolResultMessage)]
        assert not result.is_error, (text, text_of(result.content))
        called = Trip(**json.loads(text_of(result.content)))

        # the text as a typed answer: read at once, not asked for again
        fm = FauxModel([text])
        reply = await Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=Trip).prompt("q")
        assert (reply.output, fm.call_count) == (called, 1), text


JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
OBJECTS = st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=5)


def with_trailing_commas(value: Any) -> str:
    """`value` as JSON with a comma before each non-empty object's or array's closer."""
    if isinstance(value, dict) and value:
        items = ", ".join(f"{json.dumps(k)}: {with_trailing_commas(v)}" for k, v in value.items())
        return "{" + items + ",}"
    if isinstance(value, list) and value:
        return "[" + ", ".join(with_trailing_commas(v) for v in value) + ",]"
    return json.dumps(value)


def dialects(value: dict[str, Any]) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            json.dumps(value),
            json.dumps(value, ensure_ascii=False),
            with_trailing_commas(value),
            repr(value),
            json.dumps(value) + "}",
            json.dumps(value) + " ]\n",
        ]
    )


@given(OBJECTS.flatmap(dialects) | st.text(max_size=40).map(lambda tail: "{" + tail))
def test_the_same_text_reads_the_same_as_an_answer_and_as_arguments(text: str) -> None:
    assert as_answer(text) == as_arguments(text)


@given(st.data(), OBJECTS)
def test_every_dialect_of_an_object_reads_as_that_object(
    data: st.DataObject, value: dict[str, Any]
) -> None:
    text = data.draw(dialects(value))
    assert as_arguments(text) == value == as_answer(text)


async def test_prose_around_an_answer_is_still_asked_for_again() -> None:
    fm = FauxModel(['Here it is: {"city": "Oslo", "days": 3}', '{"city": "Oslo", "days": 3}'])
    reply = await Agent(model=fm.model, stream_fn=fm.stream_fn, output_type=Trip).prompt("q")
    assert reply.output == Trip(city="Oslo", days=3)
    told = [m for m in fm.contexts[1].messages if isinstance(m, UserMessage)][-1]
    assert "the answer is not JSON" in text_of(told.content)
    assert as_arguments('Here it is: {"city": "Oslo", "days": 3}') is None
