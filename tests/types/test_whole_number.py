"""One check for every "a whole number >= N" option: `types.tools.is_whole_number`, used by
the loop's config, agent files, evals and batch; each caller words its own message."""

from __future__ import annotations

import pytest

from yiemagent import AgentLoopConfig, ConfigError, Model
from yiemagent.types.tools import is_whole_number


@pytest.mark.parametrize(
    ("value", "least", "whole"),
    [(0, 0, True), (3, 1, True), (1, 1, True), (0, 1, False), (-1, 0, False),
     (True, 0, False), (False, 0, False), (2.0, 1, False), ("3", 1, False), (None, 0, False)],
)  # fmt: skip
def test_a_whole_number_is_an_int_at_least_the_bound(
    value: object, least: int, whole: bool
) -> None:
    """A bool is an int to Python but no count; 2.0 and "3" are no whole numbers."""
    assert is_whole_number(value, least) is whole


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [("max_turns", 2.0, "max_turns must be a whole number >= 1 or None, not 2.0"),
     ("max_turns", True, "max_turns must be a whole number >= 1 or None, not True"),
     ("max_parallel_tools", 0, "max_parallel_tools must be a whole number >= 1 or None, not 0"),
     ("max_parallel_tools", "4", "max_parallel_tools must be a whole number >= 1 or None, not '4'"),
     ("output_retries", -1, "output_retries must be a whole number >= 0, not -1"),
     ("output_retries", False, "output_retries must be a whole number >= 0, not False")],
)  # fmt: skip
def test_the_loop_config_refuses_what_is_no_whole_number(
    option: str, value: object, message: str
) -> None:
    model = Model(id="m", provider="p", api="faux")
    with pytest.raises(ConfigError) as caught:
        AgentLoopConfig(model=model, **{option: value})  # type: ignore[arg-type]
    assert str(caught.value) == message
