"""DESIGN R-4.3: `@tool` builds an AgentTool from a typed function."""

from __future__ import annotations

import asyncio
import base64
import functools
import inspect
import json
import warnings
from collections.abc import Iterator
from datetime import date
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from yiemagent import (
    AbortSignal,
    Agent,
    AgentTool,
    AgentToolResult,
    ConfigError,
    ImageContent,
    TextContent,
    ToolResultMessage,
    tool,
    validate_arguments_against_schema as validate,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.tools import ToolArgumentsError
from yiemagent.types import text_of as content_text

from ._kit import run_tool, text_of


class Item(BaseModel):
    sku: str
    qty: int = 1


@tool
def get_time(
    city: str,
    hours: Annotated[int, Field(description="Offset in hours", ge=0)] = 0,
    items: list[Item] | None = None,
    *,
    tool_call_id: str,
    signal: AbortSignal,
) -> dict[str, Any]:
    """Get the local time in a city.

    Looks the zone up in a table.

    Args:
        city: The city name,
            for example Oslo.
        hours: ignored, the Field description wins.
        items (list[Item]): Things to ship.

    Returns:
        The time.
    """
    return {
        "city": city,
        "hours": hours,
        "items": [type(i).__name__ for i in items or []],
        "id": tool_call_id,
        "signal": isinstance(signal, AbortSignal),
    }


def test_r4_3_builds_agent_tool_with_name_label_description() -> None:
    assert isinstance(get_time, AgentTool)
    assert get_time.name == "get_time"
    assert get_time.label == "Get time"
    assert get_time.description == "Get the local time in a city.\n\nLooks the zone up in a table."
    assert get_time.parallel is False
    assert get_time.timeout_s is None


def test_r4_3_schema_from_hints_docstring_and_fields() -> None:
    schema = get_time.input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    props = schema["properties"]
    assert set(props) == {"city", "hours", "items"}  # injected parameters left out
    assert props["city"] == {"type": "string", "description": "The city name, for example Oslo."}
    assert props["hours"]["description"] == "Offset in hours"
    assert props["hours"]["minimum"] == 0
    assert props["hours"]["default"] == 0
    assert props["items"]["description"] == "Things to ship."
    assert "title" not in json.dumps(schema)  # no pydantic title noise for small models


async def test_r4_3_execute_converts_arguments_and_injects_parameters() -> None:
    args = validate(get_time.input_schema, {"city": "Oslo", "items": [{"sku": "a"}]}, tool_name="t")
    result = await run_tool(get_time, args, tool_call_id="call-7")
    assert json.loads(text_of(result)) == {
        "city": "Oslo",
        "hours": 0,
        "items": ["Item"],
        "id": "call-7",
        "signal": True,
    }


async def test_r4_3_validation_repairs_feed_the_function() -> None:
    args = validate(get_time.input_schema, '{"city": "Oslo", "hours": "3"}', tool_name="t")
    result = await run_tool(get_time, args)
    assert json.loads(text_of(result))["hours"] == 3


async def test_r4_3_async_function_gives_async_execute_and_options() -> None:
    @tool(name="slowEcho", label="Echo slowly", parallel=True, timeout_s=2.5)
    async def echo(text: str, on_update: Any) -> str:
        """Echo the text."""
        on_update(AgentToolResult.text("working"))
        await asyncio.sleep(0)
        return text.upper()

    assert (echo.name, echo.label, echo.parallel, echo.timeout_s) == (
        "slowEcho",
        "Echo slowly",
        True,
        2.5,
    )
    assert inspect.iscoroutinefunction(echo.execute)
    assert echo.input_schema["properties"] == {"text": {"type": "string"}}
    updates: list[AgentToolResult] = []
    assert await run_tool(echo, {"text": "hi"}, updates=updates) == "HI"
    assert text_of(updates[0]) == "working"


async def test_r4_3_plain_function_gives_plain_execute() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    assert not inspect.iscoroutinefunction(add.execute)
    assert add.input_schema["required"] == ["a"]
    assert text_of(await run_tool(add, {"a": 1})) == "3"


async def test_r4_3_return_values_result_and_str_kept_as_is() -> None:
    made = AgentToolResult.text("done", details={"n": 1}, terminate=True)

    @tool
    def give_result() -> AgentToolResult:
        """Return a result."""
        return made

    @tool
    def give_text() -> str:
        """Return text."""
        return "plain"

    assert await run_tool(give_result, {}) is made
    assert await run_tool(give_text, {}) == "plain"
    assert give_text.input_schema == {"type": "object", "properties": {}}


def test_r4_3_camel_case_and_dashes_in_label() -> None:
    @tool(name="getWeather-now")
    def weather() -> str:
        return "sun"

    assert weather.label == "Get weather now"
    assert weather.description == "Get weather now"  # no docstring: the label stands in


def test_r4_3_bad_definitions_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="invalid tool name"):

        @tool(name="has space")
        def a() -> str:
            return ""

    with pytest.raises(ConfigError, match=r"\*args"):

        @tool
        def b(*values: int) -> str:
            return ""


@pytest.mark.parametrize("timeout_s", [0, -1, "10", True, float("nan")])
def test_a_timeout_that_is_not_a_positive_number_of_seconds_is_refused(timeout_s: Any) -> None:
    # pydantic-ai refuses a non-positive tool timeout at definition; a text or a bool is no
    # number of seconds either (not a TypeError from a comparison deep inside)
    with pytest.raises(ConfigError, match="timeout_s must be > 0 seconds"):

        @tool(timeout_s=timeout_s)
        def slow() -> str:
            return ""


def test_an_execute_that_cannot_take_the_four_arguments_is_refused_at_once() -> None:
    # pi's tools may declare `execute(toolCallId, params)`: JavaScript drops the extra
    # arguments. Ours are called with (tool_call_id, args, signal, on_update); one that
    # cannot take them failed at every call, and the model was told to try again.
    async def two(tool_call_id: str, args: dict[str, Any]) -> str:
        return "never"

    with pytest.raises(ConfigError, match=r"execute must take \(tool_call_id, args, signal"):
        AgentTool("echo", "Echo", "echoes", {"type": "object"}, two)

    def flexible(tool_call_id: str, args: Any, *rest: Any) -> str:
        return "ok"

    assert AgentTool("echo", "Echo", "echoes", {"type": "object"}, flexible).execute is flexible


class Thing:
    """A plain class: pydantic has no JSON Schema for it."""


def test_a_parameter_type_without_schema_is_named_on_one_line() -> None:
    """pydantic's error runs on for lines about arbitrary_types_allowed; the user needs the
    parameter to change."""

    def weird(count: int, thing: Thing) -> str:
        """Weird.

        Args:
            count: How many.
            thing: A thing.
        """
        return "w"

    with pytest.raises(ConfigError) as info:
        tool(weird)
    message = str(info.value)
    assert "\n" not in message
    assert "parameter 'thing'" in message and "Thing" in message
    assert "arbitrary_types_allowed" not in message


def _search(query: str, *, limit: int = 10) -> str:
    return query


@pytest.mark.parametrize(
    "doc",
    [
        """Search the catalog.

        Args:
            query: What to search for.

        Keyword Args:
            limit: Max number of results
                to return.
        """,
        """Search the catalog.

        Parameters
        ----------
        query : str
            What to search for.

        Other Parameters
        ----------------
        limit : int, optional
            Max number of results
            to return.

        Returns
        -------
        str
        """,
        """Search the catalog.

        :param query: What to search for.
        :param int limit: Max number of results
            to return.
        :returns: the hits.
        """,
    ],
    ids=["google_keyword_args", "numpy", "sphinx"],
)
def test_parameter_descriptions_of_other_docstring_styles(doc: str) -> None:
    """openai/openai-agents-python#4985 (a `Keyword Args:` section was lost),
    run-llama/llama_index#22687 (NumPy parameters dropped): the Google `Keyword Args:`
    heading ran on into the description before it, and NumPy and Sphinx parameters reached
    the model only as raw text in the tool's description."""
    _search.__doc__ = doc
    built = tool(_search)
    props = built.input_schema["properties"]
    assert props["query"]["description"] == "What to search for."
    assert props["limit"]["description"] == "Max number of results to return."
    assert built.description == "Search the catalog."


def _place(lat: float, lon: float, *, zoom: int = 3) -> str:
    return f"{lat},{lon}@{zoom}"


@pytest.mark.parametrize(
    "doc",
    [
        """Show a place on the map.

        Parameters
        ----------
        lat, lon : float
            The place's coordinates,
            in degrees.
        zoom : int, optional
            How close.

        Raises
        ------
        ValueError
            Coordinates off the globe.

        Examples
        --------
        >>> place(59.9, 10.7)
        """,
        """Show a place on the map.

        Args:
            lat, lon (float): The place's coordinates,
                in degrees.
            zoom: How close.

        Raises:
            ValueError: Coordinates off the globe.

        Examples:
            >>> place(59.9, 10.7)
        """,
    ],
    ids=["numpy", "google"],
)
def test_parameters_named_together_share_their_description(doc: str) -> None:
    # numpydoc's `x1, x2 : array_like`: both parameters lost their description, and the
    # line after them did not reach the model at all. Raises and Examples sections, written
    # for developers, stay out of what the model reads.
    _place.__doc__ = doc
    built = tool(_place)
    props = built.input_schema["properties"]
    said = "The place's coordinates, in degrees."
    assert props["lat"]["description"] == said and props["lon"]["description"] == said
    assert props["zoom"]["description"] == "How close."
    assert built.description == "Show a place on the map."


class Booking(BaseModel):
    guest: str
    nights: int


async def test_a_returned_model_or_dict_reaches_the_model_as_json_with_its_characters() -> None:
    # A typed return value (a pydantic model, a dict holding one, a date) reaches the next
    # model call as JSON, not as its repr, and its non-ASCII text stays as written instead
    # of \u escapes that small models misread and that cost tokens.
    @tool
    def book(guest: str) -> Booking:
        """Book a room."""
        return Booking(guest=guest, nights=2)

    @tool
    def stay() -> dict[str, Any]:
        """The stay."""
        return {"booking": Booking(guest="Zoë", nights=1), "from": date(2024, 5, 1)}

    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("book", {"guest": "Zoë 日本"}, id="b"),
                faux_tool_call("stay", {}, id="s"),
            ),
            "done",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[book, stay])
    await agent.prompt("book it")
    results = [m for m in fm.contexts[-1].messages if isinstance(m, ToolResultMessage)]
    assert [text_of(AgentToolResult(r.content)) for r in results] == [
        '{"guest":"Zoë 日本","nights":2}',
        '{"booking":{"guest":"Zoë","nights":1},"from":"2024-05-01"}',
    ]
    assert not any(r.is_error for r in results)


async def test_an_image_returned_beside_a_caption_reaches_the_model_as_an_image() -> None:
    # A screenshot returned with a caption, in a list or a tuple, must stay an image block:
    # as JSON text its base64 costs thousands of tokens and the model cannot see it.
    png = ImageContent("iVBORw0KGgo=", "image/png")

    @tool
    def shot_list() -> list[Any]:
        """A screenshot with a caption."""
        return ["the page", png]

    @tool
    def shot_tuple() -> tuple[Any, ...]:
        """A screenshot with a caption."""
        return (TextContent("the page"), png)

    for made in (shot_list, shot_tuple):
        result = await run_tool(made, {})
        assert isinstance(result, AgentToolResult)
        assert result.content == [TextContent("the page"), png]

    @tool
    def words() -> list[str]:
        """Plain strings stay one JSON value."""
        return ["a", "b"]

    assert text_of(await run_tool(words, {})) == '["a","b"]'


async def test_image_bytes_in_a_returned_list_reach_the_model_as_images() -> None:
    # An image's bytes returned alone are that image; so are image bytes in a list or tuple
    # beside a caption or other images, not one JSON text of base64 the model cannot see.
    # Bytes of no image in such a list keep the list one JSON value.
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(64))
    as_png = ImageContent(base64.b64encode(png).decode(), "image/png")
    as_jpeg = ImageContent(base64.b64encode(jpeg).decode(), "image/jpeg")

    @tool
    def captioned() -> tuple[str, bytes]:
        """A screenshot with its caption."""
        return ("the page", png)

    @tool
    def pages() -> list[bytes]:
        """Two screenshots."""
        return [png, bytearray(jpeg)]

    @tool
    def noted() -> list[Any]:
        """A note block and a screenshot."""
        return [TextContent("note"), png]

    @tool
    def packed() -> list[Any]:
        """A name and bytes of no image."""
        return ["page.zip", b"PK\x03\x04\xff\xfe"]

    tools = [captioned, pages, noted, packed]
    fm = FauxModel([faux_message(*(faux_tool_call(t.name, {}) for t in tools)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("show the pages")
    results = [m for m in fm.contexts[-1].messages if isinstance(m, ToolResultMessage)]
    assert not any(r.is_error for r in results)
    assert [r.content for r in results[:3]] == [
        [TextContent("the page"), as_png],
        [as_png, as_jpeg],
        [TextContent("note"), as_png],
    ]
    as_base64 = base64.urlsafe_b64encode(b"PK\x03\x04\xff\xfe").decode()
    assert json.loads(content_text(results[3].content)) == ["page.zip", as_base64]


async def test_a_partial_is_a_tool_named_and_described_by_its_function() -> None:
    # cpython#138493: a functools.partial has no __name__ or __doc__, and @tool failed on
    # it with an AttributeError. It takes them from the function it wraps; what the partial
    # binds (a connection, a user id) is left out of the schema and never set by the model.
    def lookup(db: dict[str, int], key: str, *, scale: int = 1) -> int:
        """Look a key up.

        Args:
            db: the table.
            key: what to look up.
            scale: a factor.
        """
        return db[key] * scale

    async def alookup(key: str, *, owner: str, scale: int = 1) -> str:
        """Look a key up for its owner."""
        return f"{owner}:{key}*{scale}"

    plain = tool(functools.partial(lookup, {"a": 2}, scale=10))
    assert (plain.name, plain.description) == ("lookup", "Look a key up.")
    assert plain.input_schema["properties"] == {
        "key": {"type": "string", "description": "what to look up."}
    }
    assert text_of(await run_tool(plain, {"key": "a", "scale": 99})) == "20"
    bound = tool(functools.partial(alookup, owner="ann"), name="owned")
    assert bound.name == "owned" and set(bound.input_schema["properties"]) == {"key", "scale"}
    assert text_of(await run_tool(bound, {"key": "k", "owner": "eve"})) == "ann:k*1"


async def test_returned_bytes_reach_the_model_as_an_image_or_base64_not_an_error() -> None:
    # modelcontextprotocol/python-sdk#3554: a tool returning bytes that are not UTF-8 (a
    # thumbnail, a zip) failed at serialisation, so a call that succeeded reached the model
    # as an error and its data was lost. An image's bytes are that image; other bytes are
    # their base64 (URL-safe, as pydantic writes it), at the top level or inside a returned
    # value; UTF-8 bytes stay text.
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256))
    zipped = b"PK\x03\x04\xff\xfe"

    @tool
    def thumbnail() -> bytes:
        """The page's thumbnail."""
        return png

    @tool
    def archive() -> dict[str, Any]:
        """The page's archive."""
        return {"name": "page.zip", "data": zipped}

    @tool
    def raw() -> bytes:
        """The page's raw bytes."""
        return zipped

    @tool
    def title() -> bytes:
        """The page's title, encoded."""
        return "Zoë".encode()

    tools = [thumbnail, archive, raw, title]
    fm = FauxModel([faux_message(*(faux_tool_call(t.name, {}) for t in tools)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("fetch the page")
    results = [m for m in fm.contexts[-1].messages if isinstance(m, ToolResultMessage)]
    assert not any(r.is_error for r in results)
    image, packed, unpacked, text = results
    assert image.content == [ImageContent(base64.b64encode(png).decode(), "image/png")]
    as_base64 = base64.urlsafe_b64encode(zipped).decode()
    assert json.loads(text_of(AgentToolResult(packed.content))) == {
        "name": "page.zip",
        "data": as_base64,
    }
    assert json.loads(text_of(AgentToolResult(unpacked.content))) == as_base64
    assert text_of(AgentToolResult(text.content)) == '"Zoë"'


async def test_a_parameter_without_default_stays_required_whatever_its_union() -> None:
    # A parameter typed `list[str] | None` with no default may be null but must be sent:
    # it stays in `required` beside the plain one, and only defaulted ones are left out.
    @tool
    def search(query: str, tags: list[str] | None, limit: int = 5) -> str:
        """Search."""
        return f"{query} {tags} {limit}"

    schema = search.input_schema
    assert schema["required"] == ["query", "tags"]
    assert schema["properties"]["tags"]["anyOf"] == [
        {"items": {"type": "string"}, "type": "array"},
        {"type": "null"},
    ]
    assert text_of(await run_tool(search, {"query": "q", "tags": None})) == "q None 5"
    missing = validate(schema, {"query": "q"}, tool_name="search")
    assert missing == {"query": "q", "tags": None}


async def test_parameters_named_like_pydantic_members_reach_the_function() -> None:
    # openai-agents-python#4715, modelcontextprotocol/python-sdk#1123: the arguments model
    # took each parameter's name as a field name, and pydantic owns some: `model_config`
    # was left out of the schema and the function got the model's config, `model_extra`
    # and `model_fields_set` gave the property's value, a leading underscore failed the
    # call, and `schema` or `json` warned at import. Each now reaches the function as sent.
    import warnings

    names = ["model_config", "model_extra", "model_fields_set", "_id", "schema", "json"]
    source = "def lookup({}) -> str:\n    '''Look up.'''\n    return repr(({},))\n"
    namespace: dict[str, Any] = {}
    exec(source.format(", ".join(f"{n}: str" for n in names), ", ".join(names)), namespace)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made = tool(namespace["lookup"])
    assert list(made.input_schema["properties"]) == names
    assert made.input_schema["required"] == names
    sent = {n: f"{n} value" for n in names}
    assert text_of(await run_tool(made, sent)) == repr(tuple(sent.values()))


async def test_async_work_behind_a_plain_looking_tool_is_awaited_not_shown() -> None:
    # openai-agents-python#3949, modelcontextprotocol/python-sdk#567, strands#4410: an
    # object with an async __call__, and a sync decorator around an async function, were
    # run as plain functions: the coroutine was never awaited, and the model read
    # "<coroutine object ...>" as the tool's successful answer. An async generator's items
    # were lost the same way. Each is awaited now; the object's hints are its __call__'s.
    class Lookup:
        async def __call__(self, key: int) -> str:
            """Look a key up.

            Args:
                key: The key.
            """
            return f"value {key}"

    def logged(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    @tool
    @logged
    async def fetch(key: int) -> str:
        """Fetch a key."""
        await asyncio.sleep(0)
        return f"fetched {key}"

    @tool
    async def pages(key: int) -> Any:
        """The pages of a key."""
        for page in range(2):
            await asyncio.sleep(0)
            yield f"page {page} of {key}"

    lookup = tool(name="lookup")(Lookup())
    assert lookup.input_schema["properties"] == {
        "key": {"type": "integer", "description": "The key."}
    }
    tools = [lookup, fetch, pages]
    fm = FauxModel([faux_message(*(faux_tool_call(t.name, {"key": "7"}) for t in tools)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("look it up")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.is_error, text_of(AgentToolResult(r.content))) for r in results] == [
        (False, "value 7"),
        (False, "fetched 7"),
        (False, '["page 0 of 7","page 1 of 7"]'),
    ]


class Stay(BaseModel):
    nights: int
    start: date


async def test_a_value_only_the_type_refuses_is_said_as_a_schema_failure_is() -> None:
    # microsoft/agent-framework#7222: a model told only that its arguments failed retried
    # the same call. What the JSON Schema cannot check (a date's format) failed in pydantic
    # after the schema passed, and the model read pydantic's own report: the arguments
    # model's name and a documentation URL per problem, without the arguments it sent. It
    # reads the shape every invalid call gets: each path and problem, then what it sent.
    @tool
    def book(guest: str, stay: Stay, when: date) -> str:
        """Book a stay."""
        return "booked"

    sent = {"guest": "Zoë", "stay": {"nights": 2, "start": "2024-13-45"}, "when": "tomorrow"}
    with pytest.raises(ToolArgumentsError) as raised:
        await run_tool(book, sent)
    text = str(raised.value)
    assert text.splitlines()[:3] == [
        'Invalid arguments for tool "book":',
        "- $.stay.start: Input should be a valid date or datetime, month value is outside "
        "expected range of 1-12",
        "- $.when: Input should be a valid date or datetime, input is too short",
    ]
    assert text.splitlines()[-1] == f"Received: {json.dumps(sent, ensure_ascii=False)}"
    assert "errors.pydantic.dev" not in text


def test_a_string_beside_a_hint_describes_its_parameter() -> None:
    # openai-agents-python#1731: `Annotated[int, "First number"]`, how LangChain's tools
    # describe a parameter, reached the schema without its description (pydantic ignores a
    # plain string there). The string describes the parameter; a Field's description
    # beside it, and then the docstring, come after it as before.
    @tool
    def add(
        a: Annotated[int, "First number"],
        b: Annotated[int, "not this", Field(description="Second number")] = 2,
        c: Annotated[int, Field(ge=0)] = 1,
    ) -> int:
        """Add numbers.

        Args:
            a: overridden by the hint's text.
            c: Third number.
        """
        return a + b + c

    props = add.input_schema["properties"]
    assert [props[n].get("description") for n in "abc"] == [
        "First number",
        "Second number",
        "Third number.",
    ]
    assert props["c"]["minimum"] == 0


async def test_a_type_defined_in_the_enclosing_function_resolves() -> None:
    # With `from __future__ import annotations` (this module's first line) every hint is a
    # string; one naming a class local to the function that defines the tool is resolved
    # in that function's names, as pydantic resolves a model defined inside a function.
    class Place(BaseModel):
        city: str
        floor: int = 0

    @tool
    def locate(place: Place, near: list[Place] | None = None) -> str:
        """Say where a place is."""
        assert isinstance(place, Place)
        return f"{place.city}/{place.floor}/{len(near or [])}"

    @tool(name="locate_again")
    def locate_named(place: Place) -> str:
        return place.city

    assert locate.input_schema["properties"]["place"] == {"$ref": "#/$defs/Place"}
    assert locate_named.input_schema["required"] == ["place"]
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("locate", {"place": {"city": "Oslo", "floor": "3"}}),
                faux_tool_call("locate_again", {"place": {"city": "Rome"}}),
            ),
            "done",
        ]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[locate, locate_named])
    await agent.prompt("where?")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(m.is_error, content_text(m.content)) for m in results] == [
        (False, "Oslo/3/0"),
        (False, "Rome"),
    ]


def test_a_type_nowhere_to_be_found_is_still_one_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"tool 'lost': cannot resolve type hints: .*Missing"):

        @tool
        def lost(x: Missing) -> str:  # type: ignore[name-defined]  # noqa: F821
            return ""


async def test_an_optional_parameter_without_a_default_may_be_left_out() -> None:
    # `b: str | None` with no default is required and nullable in the schema; a model that
    # leaves it out meant None, and the function gets None instead of an error result.
    got: list[tuple[str, str | None]] = []

    @tool
    def find(a: str, b: str | None) -> str:
        got.append((a, b))
        return "found"

    assert find.input_schema["required"] == ["a", "b"]
    fm = FauxModel([faux_message(faux_tool_call("find", {"a": "x"})), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[find])
    await agent.prompt("find x")
    [result] = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert not result.is_error, content_text(result.content)
    assert got == [("x", None)]


async def test_a_generator_that_fails_midway_is_the_calls_error_not_an_empty_list() -> None:
    # The returned value was serialised twice when the first pass failed (for bytes that
    # are no UTF-8): a generator's failure made the first pass fail, and the second read
    # the spent generator, so the model read "[]" as the tool's successful answer.
    def rows() -> Iterator[dict[str, Any]]:
        yield {"id": 1}
        raise ConnectionError("the database went away")

    @tool
    def query() -> Any:
        """Query the rows."""
        return rows()

    @tool
    def blobs() -> Any:
        """The stored blobs."""
        return (blob for blob in [b"PK\x03\x04\xff", b"ok"])

    tools = [query, blobs]
    fm = FauxModel([faux_message(*(faux_tool_call(t.name, {}) for t in tools)), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=tools)
    await agent.prompt("look")
    failed, stored = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert failed.is_error and "the database went away" in text_of(AgentToolResult(failed.content))
    assert not stored.is_error
    assert json.loads(text_of(AgentToolResult(stored.content))) == [
        base64.urlsafe_b64encode(b"PK\x03\x04\xff").decode(),
        base64.urlsafe_b64encode(b"ok").decode(),
    ]


async def test_async_work_an_async_tool_forgot_to_await_is_awaited_not_shown() -> None:
    # An async tool returning `lookup()` without `await`: the model read
    # "<coroutine object lookup at 0x...>" as the tool's successful answer (and Python
    # warned that the coroutine was never awaited).
    async def lookup(key: str) -> str:
        await asyncio.sleep(0)
        return f"value of {key}"

    @tool
    async def find(key: str) -> Any:
        """Find a key."""
        return lookup(key)

    fm = FauxModel([faux_message(faux_tool_call("find", {"key": "k"})), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[find])
    await agent.prompt("find k")
    (result,) = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert (result.is_error, text_of(AgentToolResult(result.content))) == (False, "value of k")


_UNSET = object()
"""A sentinel default: no JSON value stands for it."""


async def test_a_default_with_no_json_form_is_left_out_of_the_schema_without_a_warning() -> None:
    # pydantic leaves such a default out of the schema but warns
    # (PydanticJsonSchemaWarning) at every schema built: under warnings-as-errors, as many
    # test suites run, that warning was an exception out of `@tool` itself.
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @tool
        def since(day: str, until: Any = _UNSET) -> str:
            """Days since a date."""
            return "open-ended" if until is _UNSET else f"until {until}"

    props = since.input_schema["properties"]
    assert "default" not in props["until"] and since.input_schema["required"] == ["day"]
    calls = [faux_tool_call("since", {"day": "2026-01-01"})]
    calls.append(faux_tool_call("since", {"day": "2026-01-01", "until": "2026-02-01"}))
    fm = FauxModel([faux_message(*calls), "done"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[since])
    await agent.prompt("how long")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(AgentToolResult(r.content)) for r in results] == [
        "open-ended",
        "until 2026-02-01",
    ]
