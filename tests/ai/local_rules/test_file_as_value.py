"""`file_as_value`: a file name in a parameter that does not take files is dropped."""

from __future__ import annotations

from dataclasses import replace

from tests.ai.local_rules._kit import CALCULATOR, GET_TIME, READ_FILE, conversation, scene, tool
from yiemagent.ai.providers.local.rules import Dropped, FileAsValue

TOOLS = [CALCULATOR, GET_TIME, READ_FILE]


def test_a_file_name_for_its_content_is_dropped_and_a_path_is_kept() -> None:
    at = scene(conversation("where.txt names a city. What time is it there?"), TOOLS)
    verdict = FileAsValue().judge(GET_TIME, {"place": "where.txt"}, at)
    assert isinstance(verdict, Dropped) and verdict.ask_again
    assert FileAsValue().judge(READ_FILE, {"path": "where.txt"}, at) is None
    assert FileAsValue().judge(GET_TIME, {"place": "Oslo"}, at) is None
    summed = scene(conversation("Add up the numbers in sum.txt."), TOOLS)
    assert isinstance(
        FileAsValue().judge(CALCULATOR, {"expression": "sum(sum.txt)"}, summed), Dropped
    )


def test_only_given_files_and_only_beside_a_tool_that_reads_files() -> None:
    # a file name nobody gave is grounded's to judge
    at = scene(conversation("What time is it in Oslo?"), TOOLS)
    assert FileAsValue().judge(GET_TIME, {"place": "oslo.txt"}, at) is None
    # with no tool that reads files, "site.com" is a name, not a file
    site = scene(conversation("What time is it for example.com?"), [GET_TIME])
    assert FileAsValue().judge(GET_TIME, {"place": "example.com"}, site) is None


def test_a_tool_about_files_takes_one_by_its_only_parameter() -> None:
    # An MCP server's `read_note(name)`, "Read one note file by its name": the name is the
    # file's (kept), where a city in get_time is still the file's content (dropped).
    read_note = replace(
        tool("read_note", {"name": {"type": "string"}}),
        description="Read one note file by its name, e.g. ideas.md.",
    )
    tools = [GET_TIME, read_note]
    at = scene(conversation("Read plan.md: when is the launch?"), tools)
    assert FileAsValue().judge(read_note, {"name": "plan.md"}, at) is None
    assert isinstance(FileAsValue().judge(GET_TIME, {"place": "plan.md"}, at), Dropped)
    # a tool whose description says nothing of files does not take them by its one value
    lookup = tool("lookup", {"name": {"type": "string"}})
    assert isinstance(
        FileAsValue().judge(
            lookup, {"name": "plan.md"}, scene(conversation("Read plan.md"), [*tools, lookup])
        ),
        Dropped,
    )
