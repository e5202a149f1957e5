"""`date_format`: a date reaches its parameter in the layout the description gives."""

from __future__ import annotations

import datetime
from collections.abc import Callable

from hypothesis import given, strategies as st

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import conversation, notes, reply, run, scene, tool
from yiemagent import AgentTool
from yiemagent.ai.providers.local.repair import date_as_described
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, DateFormat, Repaired


def dated(layout: str) -> AgentTool:
    return tool(
        "book_table",
        {"date": {"type": "string", "description": f"The date, in the format {layout}."}},
    )


BOOK = dated("MM-DD-YYYY")


def test_an_iso_date_is_written_month_first_when_the_description_says_so() -> None:
    at = scene(conversation("Book a table for June 5th, 2025."), [BOOK])
    verdict = DateFormat().judge(BOOK, {"date": "2025-06-05"}, at)
    assert isinstance(verdict, Repaired)
    assert verdict.arguments == {"date": "06-05-2025"}


def test_dates_in_words_and_other_layouts_are_rewritten() -> None:
    cases = [
        ("DD/MM/YYYY", "June 5th, 2025", "05/06/2025"),
        ("YYYYMMDD", "2024-01-15", "20240115"),
        ("yyyy/mm/dd", "1st of May 2027", "2027/05/01"),
        ("mm-dd-yyyy", "Dec 24 2025", "12-24-2025"),
        ("DD.MM.YYYY", "06/25/2025", "25.06.2025"),  # 25 can only be the day
        ("YYYY-MM-DD", "3 January 2023", "2023-01-03"),
    ]
    for layout, value, written in cases:
        assert date_as_described(dated(layout), {"date": value}) == {"date": written}


def test_what_is_no_single_date_or_has_no_layout_is_left_alone() -> None:
    plain = tool("book_table", {"date": {"type": "string", "description": "The date."}})
    left = [
        (BOOK, "06-05-2025"),  # already in the layout
        (dated("YYYY-MM-DD"), "05/06/2025"),  # which is the month?
        (dated("YYYY-MM-DD"), "2023-06-01T10:00"),  # more than a date
        (BOOK, "2025-02-30"),  # no such day
        (BOOK, "next Friday"),
        (plain, "2025-06-05"),  # no layout given
    ]
    for schema_tool, value in left:
        arguments = {"date": value}
        assert date_as_described(schema_tool, arguments) is arguments


@given(
    st.dates(min_value=datetime.date(1000, 1, 1)),
    st.permutations(["YYYY", "MM", "DD"]),
    st.sampled_from(["-", "/", ".", ""]),
)
def test_an_iso_date_is_the_same_day_in_any_layout(
    day: datetime.date, parts: list[str], separator: str
) -> None:
    layout = separator.join(parts)
    written = date_as_described(dated(layout), {"date": day.isoformat()})["date"]
    fields = {"YYYY": f"{day.year:04d}", "MM": f"{day.month:02d}", "DD": f"{day.day:02d}"}
    assert written == separator.join(fields[part] for part in parts)


async def test_through_the_provider_with_and_without_the_rule(
    fake: Callable[..., FakeRuntime],
) -> None:
    messages = conversation("Book a table for June 5th, 2025.")
    fake([reply(("book_table", {"date": "2025-06-05"}))])
    fixed = await run(messages, [BOOK])
    assert fixed.tool_calls[0].arguments == {"date": "06-05-2025"}
    assert notes(fixed, "date_format")[0]["action"] == "repaired"
    fake([reply(("book_table", {"date": "2025-06-05"}))])
    kept = await run(messages, [BOOK], DEFAULT_POLICY.without("date_format"))
    assert kept.tool_calls[0].arguments == {"date": "2025-06-05"}
