"""The embedded model's grounding guard (DESIGN §11): `ungrounded` lists what a
call holds that the user's messages and the tool results do not back; `adds_to`
whether an extra call of a reply brings a part of the request the earlier calls leave out."""

from __future__ import annotations

import itertools
import re
from typing import Any

from hypothesis import example, given, strategies as st

from yiemagent import AgentTool, TextContent, ToolResultMessage, UserMessage
from yiemagent.ai.providers.local.choice import (
    ChainStep,
    adds_to,
    mentions,
    prose,
    relevant,
    spells,
    vocabulary,
)
from yiemagent.ai.providers.local.grounding import (
    PREFIX,
    SHORT_WORD,
    STRING_NUMBERS,
    Grounding,
    coordinated,
    drop_unbacked_options,
    invented_numbers,
    listed_choices,
    unbacked_numbers,
    ungrounded,
    words,
)
from yiemagent.ai.providers.local.repair import percent_as_fraction, repair_file_names


def _tool(properties: dict[str, Any], required: list[str]) -> AgentTool:
    return AgentTool(
        name="t",
        label="t",
        description="t",
        input_schema={"type": "object", "properties": properties, "required": required},
        execute=lambda *a: "unused",
    )


TOOL = _tool({"a": {"type": "string"}, "b": {"type": "array"}, "c": {}}, ["a", "b"])


@given(
    st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=4),
    st.text(max_size=30),
)
@example(["0"], "2:3:4")  # three numbers nothing backs
@example(["0"], "2")  # one number nothing backs, alone in the string
def test_ungrounded_words_are_the_unbacked_lettered_ones(parts: list[str], extra: str) -> None:
    """What `ungrounded` lists of a required string: its unbacked lettered words, and its
    numbers when `STRING_NUMBERS` or more of them are unbacked ("2:3:4"), or the string is
    one unbacked number ("2")."""
    grounding = Grounding.of_text(" ".join(parts))
    assert not ungrounded(TOOL, {"a": " ".join(reversed(parts)), "b": [parts[0], True]}, grounding)
    called = {w.lower() for w in re.findall(r"([^\W_]+)\s*\(", extra)}
    unbacked = {
        w
        for w in words(extra) - called
        if any(c.isalpha() for c in w) and not grounding.knows_word(w)
    }
    expected = unbacked | invented_numbers(extra, grounding)
    if re.fullmatch(r"-?\d+(?:\.\d+)?", extra.strip()):  # one number alone: judged as it
        expected = set() if grounding.knows_number(float(extra)) else {extra.strip()}
    assert ungrounded(TOOL, {"a": extra, "b": []}, grounding) == expected
    assert not ungrounded(TOOL, {"a": "", "b": [], "c": extra}, grounding)  # optional: unchecked
    for word in unbacked:
        assert len(word) > SHORT_WORD and word not in grounding.words


def test_enum_values_stems_short_codes_numbers_and_function_names_are_backed() -> None:
    tool = _tool(
        {"x": {"type": "string", "enum": ["medium", "large"]}, "e": {}, "n": {"type": "array"}},
        ["x", "e", "n"],
    )
    grounding = Grounding.of_text(
        "What is 15% of 240 in NY, as a medium? The square root of 2? Points of ten players, "
        "a 298K gas, 100 million shares, 12,000 miles, (40.7128, -74.0060)."
    )
    backed = {
        "x": "medium",
        "e": "0.15 * 240 + sqrt(2), ny, point, players",
        "n": [0.15, 240, 2.0, 10, 298, 1e8, 12000, -74.006, 0, 1],
    }
    assert not ungrounded(tool, backed, grounding)
    assert ungrounded(tool, {"x": "medium", "e": "", "n": [240, 1.615]}, grounding) == {"1.615"}
    assert ungrounded(tool, {"x": "large", "e": "path/to/your/file.txt", "n": []}, grounding) == {
        "path",
        "your",
        "file",
    }
    assert len("path") < PREFIX  # short words match only whole


def test_a_word_is_backed_by_its_plural_or_singular_in_s() -> None:
    grounding = Grounding.of_text("Avoid highways and toll roads; two cats.")
    assert grounding.knows_word("tolls") and grounding.knows_word("cat")
    assert not grounding.knows_word("tollss") and not grounding.knows_word("dogs")


MOVIES = AgentTool(
    name="find_movies",
    label="find_movies",
    description="Movies of an actor.",
    input_schema={
        "type": "object",
        "properties": {
            "actor": {"type": "string"},
            "year": {"type": "integer"},
            "category": {"type": "string"},
            "size": {"type": "string", "enum": ["small", "large"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "subtitles": {"type": "boolean"},
            "note": {"type": "string", "contentMediaType": "text/plain"},
        },
        "required": ["actor"],
    },
    execute=lambda *a: "unused",
)


def test_optional_values_nothing_backs_are_left_out() -> None:
    """The 0.5B fills optional parameters with values of its own (BFCL: `category:
    "Drama"` for all movies of an actor); the default is what the user asked for."""
    grounding = Grounding.of_text("Find all movies starring Leonardo DiCaprio in 2010, vegan.")
    arguments = {
        "actor": "Tom Cruise",  # required: the call's own check (`ungrounded`) decides
        "year": 1999,
        "category": "Drama",
        "size": "large",  # one of its choices, but nobody asked for it
        "tags": ["vegan", "Chinese", "Italian"],
        "subtitles": True,
        "note": "a note the model writes",
    }
    assert drop_unbacked_options(MOVIES, arguments, grounding) == {
        "actor": "Tom Cruise",
        "tags": ["vegan"],
        "subtitles": True,
        "note": "a note the model writes",
    }
    backed = {"actor": "Leonardo DiCaprio", "year": 2010, "tags": ["Vegan"]}
    assert drop_unbacked_options(MOVIES, backed, grounding) is backed
    assert "tags" not in drop_unbacked_options(MOVIES, {"actor": "x", "tags": ["Drama"]}, grounding)


@given(
    st.text(max_size=40),
    st.dictionaries(
        st.sampled_from(["actor", "year", "category", "size", "tags", "subtitles"]),
        st.one_of(
            st.text(max_size=12),
            st.integers(-3000, 3000),
            st.booleans(),
            st.lists(st.text(max_size=8), max_size=3),
        ),
    ),
)
def test_leaving_out_unbacked_options_keeps_the_rest_and_is_idempotent(
    request: str, arguments: dict[str, Any]
) -> None:
    grounding = Grounding.of_text(request)
    kept = drop_unbacked_options(MOVIES, arguments, grounding)
    assert set(kept) <= set(arguments)
    assert kept.get("actor") == arguments.get("actor")
    for name, value in kept.items():
        assert value == arguments[name] or (
            isinstance(value, list) and all(v in arguments[name] for v in value)
        )
    assert drop_unbacked_options(MOVIES, kept, grounding) == kept


RATES = _tool(
    {
        "interest_rate": {"type": "number", "description": "The interest rate per period."},
        "tax": {"type": "number", "description": "The tax as a decimal (5% is 0.05)."},
        "yield": {"type": "number", "description": "The yearly yield as a percentage."},
        "discount": {"type": "integer", "description": "The discount."},
        "years": {"type": "number", "description": "The number of years."},
    },
    ["interest_rate"],
)


def test_a_percentage_the_user_wrote_becomes_a_fraction_where_a_number_is_taken() -> None:
    """The 0.5B copies "5%" as 5 (`interest_rate: 5`); a float
    rate wants 0.05, unless its description asks for a percentage; integers keep it."""
    grounding = Grounding.of_text("A rate of 5%, tax 7.5 percent, yield 4%, 10% off, for 3 years.")
    assert grounding.percents == {5.0, 7.5, 4.0, 10.0}
    arguments = {"interest_rate": 5, "tax": 7.5, "yield": 4, "discount": 10, "years": 3}
    assert percent_as_fraction(RATES, arguments, grounding) == {
        "interest_rate": 0.05,
        "tax": 0.075,
        "yield": 4,
        "discount": 10,
        "years": 3,
    }
    as_given = {"interest_rate": 0.05, "years": 3}
    assert percent_as_fraction(RATES, as_given, grounding) is as_given
    no_percent = Grounding.of_text("A rate of 5 for 3 years.")
    assert percent_as_fraction(RATES, {"interest_rate": 5}, no_percent) == {"interest_rate": 5}


@given(
    st.lists(st.integers(1, 99), max_size=3),
    st.dictionaries(
        st.sampled_from(["interest_rate", "tax", "yield", "discount", "years"]),
        st.one_of(st.integers(0, 120), st.booleans(), st.text(max_size=4)),
    ),
)
def test_only_number_values_written_as_percentages_change(
    percents: list[int], arguments: dict[str, Any]
) -> None:
    grounding = Grounding.of_text(" and ".join(f"{p}%" for p in percents))
    fixed = percent_as_fraction(RATES, arguments, grounding)
    assert set(fixed) == set(arguments)
    for name, value in fixed.items():
        before = arguments[name]
        if value != before or type(value) is not type(before):
            assert name in ("interest_rate", "tax", "years")
            assert before in percents and not isinstance(before, bool)
            assert value == before / 100


def test_the_grounding_of_a_conversation_holds_user_messages_and_results() -> None:
    messages = [
        UserMessage("city.txt names a city"),
        ToolResultMessage("c1", "read_file", [TextContent("Lisbon")]),
    ]
    grounding = Grounding.of(messages)
    tool = _tool({"place": {"type": "string"}}, ["place"])
    assert not ungrounded(tool, {"place": "Lisbon"}, grounding)
    assert ungrounded(tool, {"place": "Tokyo"}, grounding) == {"tokyo"}


# ── adds_to: does an extra call bring a part of the request ────────────────────

TEXT = _tool({"text": {"type": "string"}}, ["text"])
TIME_TOOL = AgentTool(
    name="get_time",
    label="get_time",
    description="The current time.",
    input_schema={"type": "object", "properties": {"place": {"type": "string"}}},
    execute=lambda *a: "unused",
)

_VALUES = st.lists(
    st.one_of(
        st.integers(min_value=2, max_value=10_000).map(str),
        st.sampled_from(["London", "Paris", "Oslo", "Maroon", "Taylor", "Swift", "apples"]),
    ),
    min_size=1,
    max_size=4,
    unique=True,
)


@given(_VALUES, st.randoms(use_true_random=False))
def test_a_repeat_or_a_reshuffle_of_the_earlier_values_adds_nothing(
    values: list[str], rnd: Any
) -> None:
    request = Grounding.of_text("Please do it for " + " and ".join(values))
    shuffled = list(values)
    rnd.shuffle(shuffled)
    earlier = [(TEXT, {"text": " ".join(values)})]
    assert not adds_to(TEXT, {"text": " ".join(shuffled)}, earlier, request)
    assert not adds_to(TEXT, {"text": " ".join(values[:1])}, earlier, request)


@given(_VALUES, _VALUES)
def test_a_call_with_a_value_of_the_request_no_earlier_call_holds_adds_a_part(
    first: list[str], second: list[str]
) -> None:
    request = Grounding.of_text(" and ".join(first + second))
    earlier = [(TEXT, {"text": " ".join(first)})]
    new = set(map(str.lower, second)) - set(map(str.lower, first))
    assert adds_to(TEXT, {"text": " ".join(second)}, earlier, request) == bool(new)


def test_values_from_nowhere_or_the_tools_own_words_add_nothing() -> None:
    request = Grounding.of_text("What time is it in Oslo? Also 12 * 12")
    earlier = [(TEXT, {"text": "Oslo"})]
    assert not adds_to(TEXT, {"text": "Lisbon"}, earlier, request)  # not in the request
    assert adds_to(TEXT, {"text": "12 * 12"}, earlier, request)
    assert adds_to(TEXT, {"text": "time"}, earlier, request)
    assert not adds_to(TEXT, {"text": "time"}, earlier, request, vocabulary([TIME_TOOL]))
    assert {"get", "time", "place"} <= vocabulary([TIME_TOOL])


def _named_with(name: str, properties: dict[str, Any], required: list[str]) -> AgentTool:
    return AgentTool(
        name=name,
        label=name,
        description="A tool.",
        input_schema={"type": "object", "properties": properties, "required": required},
        execute=lambda *a: "unused",
    )


RESISTANCE = _tool(
    {"length": {"type": "number"}, "material": {"type": "string"}, "unit": {"type": "string"}},
    ["length"],
)


def test_an_optional_value_that_changes_an_earlier_calls_adds_a_part() -> None:
    """ "resistivity of copper and aluminum" — the second call differs only in an
    optional value; a value the earlier call left out is a refinement, not a part."""
    request = Grounding.of_text("A 5 m wire of copper and aluminum, in ohms")
    earlier = [(RESISTANCE, {"length": 5, "material": "copper"})]
    assert adds_to(RESISTANCE, {"length": 5, "material": "aluminum"}, earlier, request)
    assert not adds_to(RESISTANCE, {"length": 5, "material": "copper"}, earlier, request)
    # left out before: a refinement of the same call
    assert not adds_to(
        RESISTANCE, {"length": 5, "material": "copper", "unit": "ohms"}, earlier, request
    )
    # changed, but to a value the request does not give
    assert not adds_to(RESISTANCE, {"length": 5, "material": "silver"}, earlier, request)
    # a value an earlier call holds in another parameter is no new part
    # (`magnetic_field(I=1, r=0.01)` after `capacitance(A=10, d=0.01, K=1.0)`)
    other = _tool({"current": {"type": "number"}, "r": {"type": "number"}}, ["current", "r"])
    assert not adds_to(
        other, {"current": 5, "r": 0}, [(RESISTANCE, {"length": 0, "unit": "5 m"})], request
    )
    # changed back to a value an earlier call already holds
    both = [*earlier, (RESISTANCE, {"length": 5, "material": "aluminum"})]
    assert not adds_to(RESISTANCE, {"length": 5, "material": "aluminum"}, both, request)


def test_a_call_of_another_tool_the_request_names_adds_a_part_with_the_same_values() -> None:
    """ "final velocity … Also, compute the total distance" — the second call has the
    first one's values; its tool's name holds a word of the request the first tool's lacks."""
    velocity, distance, report = (
        _named_with(name, {"speed": {"type": "number"}}, ["speed"])
        for name in (
            "kinematics_final_velocity",
            "kinematics_distance_traveled",
            "kinematicsReport",
        )
    )
    request = Grounding.of_text("Final velocity at a speed of 20. Also the total distance.")
    earlier = [(velocity, {"speed": 20})]
    assert adds_to(distance, {"speed": 20}, earlier, request)
    # "kinematics" is the first tool's word too; "report" is not in the request
    assert not adds_to(report, {"speed": 20}, earlier, request)
    # a word the first tool's own vocabulary has names no new part
    # (`calculate_final_speed` after `calculate_displacement(initial_speed=20, …)`)
    displacement = _named_with("calculate_displacement", {"initial_speed": {"type": "number"}}, [])
    final_speed = _named_with("calculate_final_speed", {"initial_speed": {"type": "number"}}, [])
    moving = Grounding.of_text("The displacement of a car at an initial speed of 20 m/s")
    first = [(displacement, {"initial_speed": 20})]
    assert not adds_to(final_speed, {"initial_speed": 20}, first, moving)
    # the same tool again with the same values is still a repeat
    assert not adds_to(velocity, {"speed": 20}, earlier, request)
    assert not adds_to(distance, {"speed": 20}, [*earlier, (distance, {"speed": 20})], request)
    # a value that is only the tools' own word is a placeholder, not a part (a chain's next
    # step written beside the first: get_time("city") beside read_file("city.txt"))
    place = _named_with("get_time", {"place": {"type": "string"}}, ["place"])
    reader = _named_with("read_file", {"path": {"type": "string"}}, ["path"])
    chain = Grounding.of_text("city.txt names a city. What time is it there?")
    words_of_tools = vocabulary([place, reader]) | {"city"}
    assert not adds_to(
        place, {"place": "city"}, [(reader, {"path": "city.txt"})], chain, words_of_tools
    )
    both = Grounding.of_text("Read city.txt, and what time is it in Oslo?")
    assert adds_to(place, {"place": "Oslo"}, [(reader, {"path": "city.txt"})], both, words_of_tools)


RANKING = _tool({"team": {"type": "string"}, "season": {"type": "integer"}}, ["team", "season"])


def test_a_new_combination_of_values_the_request_lists_adds_a_part() -> None:
    """ "Lakers and Bulls in seasons 2018 and 2020" asks for the four combinations
    (the 0.5B stopped after two); paired values, or lists paired "respectively",
    do not multiply."""
    listed = Grounding.of_text(
        "The winning percentage of Lakers and Bulls in seasons 2018 and 2020"
    )
    two = [
        (RANKING, {"team": "Lakers", "season": 2018}),
        (RANKING, {"team": "Bulls", "season": 2020}),
    ]
    assert adds_to(RANKING, {"team": "Lakers", "season": 2020}, two, listed)
    three = [*two, (RANKING, {"team": "Lakers", "season": 2020})]
    assert adds_to(RANKING, {"team": "Bulls", "season": 2018}, three, listed)
    assert not adds_to(RANKING, {"team": "Bulls", "season": 2020}, three, listed)  # a repeat
    paired = Grounding.of_text("The Lakers in season 2018 and the Bulls in season 2020")
    assert not adds_to(RANKING, {"team": "Lakers", "season": 2020}, two, paired)
    respectively = Grounding.of_text("Lakers and Bulls in 2018 and 2020 respectively")
    assert not adds_to(RANKING, {"team": "Lakers", "season": 2020}, two, respectively)
    # one earlier call: nothing to recombine
    assert not adds_to(RANKING, {"team": "Lakers", "season": 2018}, two[:1], listed)


def test_every_two_items_of_a_quoted_list_are_in_one_list() -> None:
    """Items quoted one by one ("the 'open', 'close', 'high', and 'low' prices") are one
    list, also two that other items stand between; a word after the list is not in it."""
    request = Grounding.of_text("The 'Open', 'Close', 'High', and 'Low' prices of tea")
    items = ["Open", "Close", "High", "Low"]
    for first, second in itertools.combinations(items, 2):
        assert coordinated(first, second, items, request)
    assert not coordinated("Open", "tea", items, request)
    stock = _tool({"company": {"type": "string"}, "kind": {"type": "string"}}, ["company", "kind"])
    listed = Grounding.of_text("The 'open', 'close' and 'high' prices of tea and coffee")
    made = [
        (stock, {"company": "tea", "kind": "open"}),
        (stock, {"company": "coffee", "kind": "open"}),
        (stock, {"company": "tea", "kind": "close"}),
        (stock, {"company": "coffee", "kind": "close"}),
        (stock, {"company": "tea", "kind": "high"}),
    ]
    assert adds_to(stock, {"company": "coffee", "kind": "high"}, made, listed)


_NAMES = st.lists(
    st.sampled_from(["Lakers", "Bulls", "Celtics", "Heat", "Oslo", "Paris"]),
    min_size=2,
    max_size=3,
    unique=True,
)


@given(_NAMES, st.lists(st.integers(1990, 2030), min_size=2, max_size=3, unique=True), st.data())
def test_recombining_listed_values_yields_exactly_the_product(
    teams: list[str], years: list[int], data: st.DataObject
) -> None:
    """Starting from any two calls that differ in both values, every other
    combination of the listed values is accepted once, and nothing outside the product."""
    request = Grounding.of_text(f"{', '.join(teams)} and more in {' or '.join(map(str, years))}")
    product = [{"team": t, "season": y} for t in teams for y in years]
    order = data.draw(st.permutations(product))
    first = order[0]
    second = next(c for c in order if c["team"] != first["team"] and c["season"] != first["season"])
    made = [(RANKING, first), (RANKING, second)]
    for call in order:
        if any(call == values for _, values in made):
            assert not adds_to(RANKING, call, made, request)
            continue
        assert adds_to(RANKING, call, made, request)
        made.append((RANKING, call))
    assert len(made) == len(product)
    assert not adds_to(RANKING, {"team": teams[0], "season": 1989}, made, request)


@given(_VALUES, _VALUES)
def test_changed_optional_values_add_exactly_the_request_s_new_words(
    first: list[str], second: list[str]
) -> None:
    request = Grounding.of_text(" and ".join(first + second))
    earlier = [(RESISTANCE, {"length": 1, "material": " ".join(first)})]
    new = set(map(str.lower, second)) - set(map(str.lower, first)) - {"1"}
    changed = " ".join(second) != " ".join(first)
    got = adds_to(RESISTANCE, {"length": 1, "material": " ".join(second)}, earlier, request)
    assert got == (changed and bool(new))


def test_a_description_s_listed_choices_back_a_value() -> None:
    """A description that lists the values (quoted or slashed) makes them the
    tool's own words, like an enum (`type: "country"` for "the population of the USA")."""
    assert listed_choices("Specify whether the area is city/state/country.") == {
        "city",
        "state",
        "country",
    }
    assert listed_choices("Units, 'metric' or 'imperial'. Default 'metric'.") == {
        "metric",
        "imperial",
    }
    assert listed_choices("Order, 'asc', 'desc' or 'none'.") == {"asc", "desc", "none"}
    assert listed_choices('Sort "asc" | "desc"') == {"asc", "desc"}
    assert listed_choices("Name of the city, state, or country.") == set()
    assert listed_choices("The user's name and the owner's") == set()
    # examples are not choices: the model copies them into stray calls
    assert listed_choices("A city name, e.g. 'Tokyo'.") == set()
    assert listed_choices("Cities such as 'Tokyo', 'Paris'.") == set()
    assert listed_choices("The field, such as 'Physics' or 'Chemistry'.") == set()
    assert listed_choices("A unit, e.g. 'm' or 'km' or 'mi'.") == set()
    assert listed_choices('JSON like {"type": "object", "properties": {}}') == set()
    area = _tool(
        {
            "area": {"type": "string"},
            "type": {"type": "string", "description": "Whether the area is city/state/country."},
            "name": {"type": "string", "description": "Name of the city, state, or country."},
        },
        ["area", "type", "name"],
    )
    request = Grounding.of_text("the population of the USA")
    assert ungrounded(area, {"area": "USA", "type": "country", "name": "USA"}, request) == set()
    assert ungrounded(area, {"area": "USA", "type": "USA", "name": "country"}, request) == {
        "country"
    }


# ── ChainStep: what a call after results must bring ───────────────────────────

CALC_TOOL = AgentTool(
    name="calculator",
    label="calculator",
    description="Evaluate an arithmetic expression.",
    input_schema={
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
    execute=lambda *a: "unused",
)
FILE_TOOL = AgentTool(
    name="read_file",
    label="read_file",
    description="Read a text file.",
    input_schema={
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    },
    execute=lambda *a: "unused",
)
TOOLS = [CALC_TOOL, TIME_TOOL, FILE_TOOL]


def _after(request: str, *rounds: list[tuple[str, dict[str, Any], str]]) -> ChainStep | None:
    from yiemagent import AssistantMessage, ToolCall

    messages: list[Any] = [UserMessage(request)]
    for n, round_ in enumerate(rounds):
        calls = [ToolCall(id=f"c{n}{i}", name=c, arguments=a) for i, (c, a, _) in enumerate(round_)]
        messages.append(AssistantMessage(content=list(calls), stop_reason="toolUse"))
        for call, (_, _, result) in zip(calls, round_, strict=True):
            error = result.startswith("Error")
            messages.append(
                ToolResultMessage(call.id, call.name, [TextContent(result)], is_error=error)
            )
    return ChainStep.after(messages, TOOLS)


def test_after_results_only_the_tools_the_request_names_are_offered_anew() -> None:
    step = _after(
        "Tell me the time in Tokyo and in New York.",
        [("get_time", {"place": "Tokyo"}, "11:31 on Tuesday in Tokyo")],
    )
    assert step is not None and step.unnamed(TOOLS) == {"calculator", "read_file"}
    step = _after(
        "expr.txt holds an expression. Read it and compute it with the calculator.",
        [("read_file", {"path": "expr.txt"}, "3 + 4")],
    )
    assert step is not None and step.unnamed(TOOLS) == {"get_time"}
    assert mentions(TIME_TOOL, Grounding.of_text("what time is it there now?"))
    assert not mentions(CALC_TOOL, Grounding.of_text("Tell me what that is."))


def test_a_used_tool_is_called_again_only_with_a_value_from_the_results() -> None:
    step = _after(
        "Read pointer.txt and follow what it says to find the code word.",
        [("read_file", {"path": "pointer.txt"}, "The code word is in secret.txt.")],
    )
    assert step is not None
    assert step.allows(FILE_TOOL, {"path": "secret.txt"})
    assert not step.allows(FILE_TOOL, {"path": "pointer.txt"})
    assert not step.allows(FILE_TOOL, {"path": "code.txt"})
    assert step.allows(CALC_TOOL, {"expression": "1"})  # a new tool: offered or not by name
    step = _after(
        "Use the calculator to compute 17 * 23, then use it again to add 9 to that result.",
        [("calculator", {"expression": "17 * 23"}, "17 * 23 = 391")],
    )
    assert step is not None and step.allows(CALC_TOOL, {"expression": "391 + 9"})
    assert not step.allows(CALC_TOOL, {"expression": "17 * 23 + 9"})


def test_no_rule_before_results_and_a_failed_tool_may_be_retried() -> None:
    assert ChainStep.after([UserMessage("What is 2 + 2?")], TOOLS) is None
    failed = _after("Read a.txt", [("read_file", {"path": "a.txt"}, "Error: not found")])
    assert failed is not None and failed.failed == {"read_file"}
    assert failed.allows(FILE_TOOL, {"path": "A.txt"})
    assert failed.unnamed(TOOLS) == {"calculator", "get_time"}


@given(st.lists(st.integers(min_value=2, max_value=99_999), min_size=1, max_size=6, unique=True))
def test_numbers_in_a_string_count_from_three_that_nothing_backs(numbers: list[int]) -> None:
    text = " + ".join(map(str, numbers))
    nothing = Grounding.of_text("What is the project called?")
    invented = invented_numbers(text, nothing)
    assert invented == ({str(n) for n in numbers} if len(numbers) >= STRING_NUMBERS else set())
    assert not invented_numbers(text, Grounding.of_text("Add " + ", ".join(map(str, numbers))))
    calc = _tool({"e": {"type": "string"}}, ["e"])
    alone = {text} if len(numbers) == 1 else set()  # one number alone: judged as the number
    assert ungrounded(calc, {"e": text}, nothing) == (invented | alone)


@given(
    st.integers(min_value=2, max_value=9_999),
    st.lists(st.integers(min_value=2, max_value=99_999), min_size=3, max_size=6, unique=True),
)
def test_a_string_that_works_on_a_given_number_may_bring_constants(
    given_number: int, constants: list[int]
) -> None:
    """A computation on a given number brings the constants it needs: `(100 - 32) * 5 / 9`
    for "Convert 100 Fahrenheit to Celsius." is grounded by its 100; the same constants
    with nothing given are invented."""
    constants = [n for n in constants if n != given_number]
    request = Grounding.of_text(f"Convert {given_number} Fahrenheit to Celsius.")
    text = " * ".join(map(str, [given_number, *constants]))
    assert not invented_numbers(text, request)
    alone = " * ".join(map(str, constants))
    unbacked = unbacked_numbers(alone, request)
    expected = unbacked if len(unbacked) >= STRING_NUMBERS else set()
    assert invented_numbers(alone, request) == expected
    calc = _tool({"e": {"type": "string"}}, ["e"])
    assert not ungrounded(calc, {"e": "(100 - 32) * 5 / 9"}, Grounding.of_text("Convert 100 F."))
    assert ungrounded(calc, {"e": "3 + 4 * 5 / 2 - 3"}, Grounding.of_text("Read README.md."))


# ── file names: given whole, or repaired to the one given ─────────────────────


def test_an_invented_file_name_becomes_the_one_the_request_gives() -> None:
    given = Grounding.of_text("What version is in pyproject.toml? Read the file.")
    assert given.files == ("pyproject.toml",)
    fixed = repair_file_names(FILE_TOOL, {"path": "path/to/your/file.txt"}, given, [])
    assert fixed == {"path": "pyproject.toml"}
    order = Grounding.of_text("Read order.txt and compute the total with the calculator.")
    assert repair_file_names(FILE_TOOL, {"path": "read_order.txt"}, order, []) == {
        "path": "order.txt"
    }
    same = {"path": "PyProject.TOML"}
    assert repair_file_names(FILE_TOOL, same, given, []) is same  # given (ignoring case)


def test_without_exactly_one_free_file_name_the_value_is_left() -> None:
    two = Grounding.of_text("Compare a.txt with b.txt")
    assert repair_file_names(FILE_TOOL, {"path": "c.txt"}, two, []) == {"path": "c.txt"}
    assert repair_file_names(FILE_TOOL, {"path": "c.txt"}, two, ["a.txt"]) == {"path": "b.txt"}
    none = Grounding.of_text("What does the README say?")
    assert repair_file_names(FILE_TOOL, {"path": "README.md"}, none, []) == {"path": "README.md"}
    words_only = {"path": "notes"}  # not a file name: left to the word check
    assert repair_file_names(FILE_TOOL, words_only, two, []) is words_only


@given(st.from_regex(r"[a-z]{1,8}(/[a-z]{1,8})?\.(txt|md|toml|ini|json)", fullmatch=True))
@example("www.txt")
def test_file_names_are_found_as_written(name: str) -> None:
    assert Grounding.of_text(f"Please read {name}, then stop.").files == (name,)
    assert Grounding.of_text(f"pi is 3.14 and e.g. {name}").files == (name,)


@given(
    st.from_regex(r"[a-z]{1,10}", fullmatch=True),
    st.sampled_from(["com", "org", "net", "edu", "gov", "io"]),
    st.booleans(),
)
@example("www", "com", False)
def test_web_and_mail_addresses_are_no_file_names(name: str, suffix: str, www: bool) -> None:
    """`www.python.org`, `example.com` and `bob@example.com` are addresses, not files to
    read; a file name beside them is still found."""
    host = f"{'www.' if www else ''}{name}.{suffix}"
    assert Grounding.of_text(f"What is on {host} today?").files == ()
    assert Grounding.of_text(f"Mail bob@{host} the notes.txt").files == ("notes.txt",)
    assert Grounding.of_text(f"Read {name}.{suffix}.txt").files == (f"{name}.{suffix}.txt",)
    # An address is no given file: a call carrying it must be named by the request.
    asked = Grounding.of_text(f"What is on {host}?")
    assert not relevant(TIME_TOOL, {"place": host}, asked)


# ── relevant: before any result, does the request name the tool ───────────────


def test_a_tool_the_request_does_not_name_may_not_take_its_words() -> None:
    weather = Grounding.of_text("What will the weather be in Berlin tomorrow?")
    assert not relevant(TIME_TOOL, {"place": "Berlin"}, weather)
    clock = Grounding.of_text("What time is it in Berlin?")
    assert relevant(TIME_TOOL, {"place": "Berlin"}, clock)


def test_numbers_expressions_and_given_file_names_need_no_name() -> None:
    assert relevant(CALC_TOOL, {"expression": "17 * 23"}, Grounding.of_text("What is 17 * 23?"))
    assert relevant(
        CALC_TOOL, {"expression": "sqrt(2) * 10"}, Grounding.of_text("Square root of 2, x10?")
    )
    version = Grounding.of_text("What version is in pyproject.toml?")
    assert relevant(FILE_TOOL, {"path": "pyproject.toml"}, version)
    assert not relevant(FILE_TOOL, {"path": "version"}, version)


@given(st.sampled_from(["Berlin", "Lakers", "sourdough bread", "Picasso"]))
def test_an_unnamed_tool_with_a_word_of_the_request_is_not_relevant(value: str) -> None:
    request = Grounding.of_text(f"Tell me something about {value}, please.")
    assert not relevant(TIME_TOOL, {"place": value}, request)
    assert relevant(TIME_TOOL, {"place": value}, Grounding.of_text(f"The time for {value}?"))


def _named(name: str) -> AgentTool:
    return _named_with(name, {}, [])


def test_a_request_that_spells_out_a_tool_s_name_asks_for_it() -> None:
    """Every word of four or more letters of the name, two or more of them."""
    request = prose("What is the official crime rate of violent crime in SF?")
    assert spells(_named("get_crime_rate"), request)
    assert spells(_named("getCrimeRate"), request)
    assert not spells(_named("get_crime_statistics"), request)  # one word is missing
    assert not spells(_named("crime"), request)  # one word says too little
    assert not spells(_named("get_rate"), request)  # "get" is too short to count
    assert spells(_named("calculate_probability"), prose("Calculate the probabilities"))
    # an identifier the request writes is not prose ("Is word_counter a good name?")
    assert not spells(_named("word_count"), prose("Is word_counter a good name?"))
    assert not spells(_named("word_count"), prose("Use the Word_Count tool"))
    assert spells(_named("word_count"), prose("Count the words, please."))
