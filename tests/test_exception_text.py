"""`exception_text` and `exception_summary`: what a reader is told about an exception, the
one describer every package uses."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from yiemagent.errors import exception_summary, exception_text


class _Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_an_exception_is_its_text_and_its_summary_adds_the_class() -> None:
    assert exception_text(ValueError("bad port")) == "bad port"
    assert exception_summary(ValueError("bad port")) == "ValueError: bad port"


@pytest.mark.parametrize("exc", [KeyError(), _Unprintable("x"), SystemExit()])
def test_no_text_or_a_raising_str_gives_the_class_alone(exc: BaseException) -> None:
    name = type(exc).__name__
    assert exception_text(exc) == name
    assert exception_summary(exc) == name


def test_a_group_is_the_texts_of_its_leaves_nested_groups_opened() -> None:
    group = ExceptionGroup(
        "outer", [OSError("refused"), ExceptionGroup("inner", [TimeoutError("slow")])]
    )
    assert exception_text(group) == "refused; slow"
    assert exception_summary(group) == "ExceptionGroup: refused; slow"


def test_a_large_group_names_five_and_counts_the_rest() -> None:
    group = ExceptionGroup("many", [ValueError(str(i)) for i in range(8)])
    assert exception_text(group) == "0; 1; 2; 3; 4; and 3 more errors"


@given(st.text())
def test_never_empty_and_the_summary_holds_the_text(message: str) -> None:
    exc = RuntimeError(message)
    text, summary = exception_text(exc), exception_summary(exc)
    assert text
    assert summary.startswith("RuntimeError")
    assert summary.endswith(text)


class _NamedKeyError(KeyError):
    def __str__(self) -> str:
        return "no user 7 in the directory"


@given(st.text())
def test_a_key_error_names_its_class_since_its_text_is_only_the_key(key: str) -> None:
    # str(KeyError("missing")) is "'missing'": told only that, the model cannot know that a
    # lookup failed. A subclass with its own text keeps it.
    exc = KeyError(key)
    assert exception_text(exc) == f"KeyError: {key!r}"
    assert exception_summary(exc) == f"KeyError: {key!r}"
    assert exception_text(_NamedKeyError("u7")) == "no user 7 in the directory"
    assert exception_summary(_NamedKeyError("u7")) == "_NamedKeyError: no user 7 in the directory"
