"""`file_as_value`: a file name in a parameter that does not take files is dropped."""

from __future__ import annotations

from tests.ai.local_rules._kit import CALCULATOR, GET_TIME, READ_FILE, conversation, scene
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
