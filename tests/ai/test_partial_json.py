"""Streaming tool-call arguments are parsed with jiter's partial mode and are always a dict
(DESIGN §7)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from yiemagent.ai.builder import complete_arguments, parse_json_object, parse_partial_json
from yiemagent.types.messages import ToolCall

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=6)


@settings(max_examples=150, deadline=None)
@given(obj=json_objects, indent=st.sampled_from([None, 2]), ascii_only=st.booleans())
def test_every_prefix_parses_to_a_dict_and_the_whole_text_to_the_object(
    obj: dict[str, Any], indent: int | None, ascii_only: bool
) -> None:
    text = json.dumps(obj, indent=indent, ensure_ascii=ascii_only)
    for end in range(len(text)):
        assert isinstance(parse_partial_json(text[:end]), dict)
    assert parse_partial_json(text) == obj
    assert parse_json_object(text) == obj


@settings(max_examples=200, deadline=None)
@given(text=st.text())
def test_arbitrary_text_never_raises(text: str) -> None:
    assert isinstance(parse_partial_json(text), dict)
    result = parse_json_object(text)
    assert result is None or isinstance(result, dict)


def test_incomplete_string_is_kept_as_far_as_it_arrived() -> None:
    assert parse_partial_json('{"path": "/tmp/fi') == {"path": "/tmp/fi"}


def test_growing_prefix_gains_keys() -> None:
    assert parse_partial_json('{"a": 1, "b"') == {"a": 1}
    assert parse_partial_json('{"a": 1, "b": [1, 2') == {"a": 1, "b": [1, 2]}


def test_non_objects_and_garbage_give_an_empty_dict() -> None:
    for text in ["", "[1, 2]", '"a string"', "42", "null", "garbage", "{{{", "\ud800"]:
        assert parse_partial_json(text) == {}, text


def test_garbage_after_a_good_start_keeps_the_good_part() -> None:
    assert parse_partial_json('{"path": "a", oops') == {"path": "a"}
    assert parse_partial_json('{"päth": "ééé", oops') == {"päth": "ééé"}


def test_parse_json_object_rejects_incomplete_and_non_objects() -> None:
    assert parse_json_object('{"a": 1') is None
    assert parse_json_object("[1]") is None
    assert parse_json_object("") is None
    assert parse_json_object('{"a": [1, {"b": null}]}') == {"a": [1, {"b": None}]}


path_parts = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,8}", fullmatch=True)
windows_paths = st.builds(
    lambda drive, parts: drive + ":\\" + "\\".join(parts),
    st.sampled_from("CDEZ"),
    st.lists(path_parts, min_size=1, max_size=4),
)


@settings(max_examples=150, deadline=None)
@given(path=windows_paths, note=st.text(max_size=12))
def test_a_windows_path_written_as_is_keeps_every_backslash(path: str, note: str) -> None:
    # A path whose backslashes the model did not double, beside a value written as JSON: in
    # the path's string every backslash is its own as soon as one escape is no JSON escape
    # (`\U` of `C:\Users`); otherwise the text is JSON and means what JSON says.
    raw = '{"path": "' + path + '", "note": ' + json.dumps(note) + "}"
    call = ToolCall("c", "read_file", {})
    complete_arguments(call, raw)
    try:
        expected = json.loads(raw)
    except ValueError:
        expected = {"path": path, "note": note}
    assert call.arguments == expected
    assert call.partial_json is None
