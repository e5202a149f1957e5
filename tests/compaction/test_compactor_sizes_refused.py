"""A `Compactor` or `FauxModel` given sizes that cannot work is refused when made, with
the package's `ConfigError` (DESIGN §10: every exception raised on purpose derives from
`YiemAgentError`; it is still a `ValueError`), saying what to change."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import ConfigError, YiemAgentError
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.compaction import Compactor


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"context_window": 100}, "context_window must be at least 256 tokens, not 100"),
        ({"context_window": 1000, "reserve_tokens": 1000}, "leaves no room in a 1000 window"),
    ],
)
def test_a_compactor_of_sizes_that_cannot_work_is_a_config_error(
    kwargs: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem) as info:
        Compactor(FauxModel([]).model, **kwargs)
    assert isinstance(info.value, YiemAgentError) and isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [({"chunk_size": 0}, "chunk_size must be >= 1"), ({"delay_s": -1}, "delay_s must be >= 0")],
)
def test_a_faux_model_of_sizes_that_cannot_work_is_a_config_error(
    kwargs: dict[str, Any], problem: str
) -> None:
    with pytest.raises(ConfigError, match=problem):
        FauxModel([], **kwargs)
