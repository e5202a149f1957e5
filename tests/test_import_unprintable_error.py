"""A `MODULE:FUNCTION` or `FILE.py:FUNCTION` reference whose module raises, at import, an
exception whose `__str__` raises (`yiemagent.files.import_function`, after openai-agents'
tests/test_tracing_errors.py::test_run_propagates_exception_whose_str_raises): the one
clear error of DESIGN §8 names the exception by its class. A dataset's check file raised
a bare `RuntimeError` out of `Dataset.load` (and `yiem eval` printed "str exploded"), and
an agent file's guardrail was reported as that `RuntimeError`."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests._yiem import yiem_in
from yiemagent import ConfigError, load_agent
from yiemagent.evals import Dataset, DatasetError

RAISES_UNPRINTABLE = """\
class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("str exploded")


raise Unprintable()
"""


def test_a_dataset_check_file_that_raises_so_is_one_dataset_error(tmp_path: Path) -> None:
    (tmp_path / "checks.py").write_text(RAISES_UNPRINTABLE)
    data = tmp_path / "d.yaml"
    data.write_text("cases:\n  - name: a\n    input: hi\n    checks:\n      - checks.py:short\n")
    with pytest.raises(DatasetError) as caught:
        Dataset.load(data)
    assert str(caught.value) == (
        f"{data}: case 'a': checks[0]: cannot import checks.py: Unprintable"
    )
    done = yiem_in(tmp_path, "eval", str(data), timeout=120)
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr == f"yiem: error: {caught.value}\n"


def test_an_agent_files_guardrail_module_that_raises_so_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "guards_unprintable.py").write_text(RAISES_UNPRINTABLE)
    team = tmp_path / "team.toml"
    team.write_text('[agents.a]\ninput_guardrails = ["guards_unprintable:check"]\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as caught:
        load_agent(team)
    assert str(caught.value).endswith(
        "[agents.a] input_guardrails: cannot import guards_unprintable: Unprintable"
    )
