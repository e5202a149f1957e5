"""`@tool` signatures and return values other frameworks' users reported trouble with
(DESIGN R-4.3): a default made by a factory, `**kwargs` typed by a TypedDict, and returns
that are empty or have no JSON form of their own, each through an Agent run."""

from __future__ import annotations

import datetime
from typing import Annotated, Any, TypedDict

import pydantic
import pytest
from pydantic import Field
from typing_extensions import Unpack

from yiemagent import Agent, ConfigError, ToolResultMessage, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of


async def results_of(agent_tool: Any, *calls: dict[str, Any]) -> list[ToolResultMessage]:
    """The results of one batch of calls of `agent_tool` with `calls` as arguments."""
    batch = faux_message(*(faux_tool_call(agent_tool.name, args) for args in calls))
    fm = FauxModel([batch, "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[agent_tool])
    await agent.prompt("go")
    return [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]


class Query(pydantic.BaseModel):
    text: str
    filters: list[str] = Field(default_factory=list)
    limit: int = 5


async def test_defaults_given_by_field_are_optional_and_get_their_value() -> None:
    """A default made by a factory (in a model parameter, or a parameter's own `Field`) or
    given as `Field(default=...)` in the hint: the parameter is optional, and left out it
    gets that default."""
    seen: list[tuple[Query, list[str], int]] = []

    @tool
    def search(
        query: Query,
        tags: Annotated[list[str], Field(default_factory=list)],
        page: Annotated[int, Field(default=1, ge=1)],
    ) -> str:
        """Search."""
        seen.append((query, tags, page))
        return "found"

    schema = search.input_schema
    assert schema["required"] == ["query"]
    assert schema["properties"]["page"]["default"] == 1
    assert schema["$defs"]["Query"]["required"] == ["text"]
    (result,) = await results_of(search, {"query": {"text": "wine"}})
    assert (result.is_error, text_of(result.content)) == (False, "found")
    assert seen == [(Query(text="wine", filters=[], limit=5), [], 1)]


class Options(TypedDict):
    count: int


def test_kwargs_typed_by_a_typed_dict_are_refused_with_the_parameter_named() -> None:
    def configure(**kwargs: Unpack[Options]) -> str:
        """Configure."""
        return "set"

    with pytest.raises(ConfigError, match=r"'configure': parameter 'kwargs' must be an ordinary"):
        tool(configure)


@pytest.mark.parametrize(
    ("value", "told"),
    [
        ([], "[]"),  # a lookup that matched nothing: "[]", not an empty or missing result
        ({}, "{}"),
        (None, "null"),
        ({1, 3}, "[1,3]"),  # a set: its items
        ({"when": datetime.date(2026, 1, 2)}, '{"when":"2026-01-02"}'),
    ],
)
async def test_empty_and_non_json_returns_reach_the_model_as_json_text(
    value: object, told: str
) -> None:
    @tool
    def lookup() -> object:
        """Look up."""
        return value

    (result,) = await results_of(lookup, {})
    assert (result.is_error, text_of(result.content)) == (False, told)
