"""How many llama.cpp threads a loaded embedded model gets (`thread_count`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from yiemagent.ai.providers.local import runtime
from yiemagent.errors import ProviderError

SetMachine = Callable[..., None]


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> SetMachine:
    """Sets the CPUs the process may use and the cgroup quota file's text (None: no file)."""
    monkeypatch.delenv(runtime.THREADS_ENV, raising=False)

    def set_machine(cpus: int, cpu_max: str | None = None) -> None:
        monkeypatch.setattr(runtime.os, "sched_getaffinity", lambda pid: set(range(cpus)))
        path = tmp_path / "cpu.max"
        if cpu_max is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(cpu_max)
        monkeypatch.setattr(runtime, "CGROUP_CPU_MAX", path)

    return set_machine


@pytest.mark.parametrize(
    ("cpus", "threads"), [(1, 1), (2, 1), (4, 3), (8, 7), (64, runtime.MAX_THREADS)]
)
def test_one_usable_cpu_is_left_to_the_rest_of_the_machine(
    machine: SetMachine, cpus: int, threads: int
) -> None:
    machine(cpus)
    assert runtime.thread_count() == threads


def test_a_cgroup_quota_caps_the_cpus_a_container_sees(machine: SetMachine) -> None:
    machine(32, "200000 100000\n")
    assert runtime.usable_cpus() == 2
    assert runtime.thread_count() == 1
    machine(32, "150000 100000\n")  # one and a half CPUs' time: two may run
    assert runtime.usable_cpus() == 2
    machine(4, "max 100000\n")
    assert runtime.usable_cpus() == 4


def test_an_unreadable_quota_is_no_quota(machine: SetMachine) -> None:
    machine(4, "garbage")
    assert runtime.usable_cpus() == 4


def test_the_variable_decides_when_set(
    machine: SetMachine, monkeypatch: pytest.MonkeyPatch
) -> None:
    machine(2)
    monkeypatch.setenv(runtime.THREADS_ENV, " 2")
    assert runtime.thread_count() == 2


def _whole_number(raw: str) -> int | None:
    try:
        return int(raw)
    except ValueError:
        return None


@given(
    st.text(alphabet=st.characters(exclude_characters="\0", exclude_categories=("Cs",)), max_size=6)
)
def test_a_set_variable_is_a_thread_count_or_one_clear_error(raw: str) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(runtime.THREADS_ENV, raw)
        number = _whole_number(raw)
        if not raw.strip():
            assert runtime.thread_count() >= 1  # blank: as if unset
        elif number is not None and number >= 1:
            assert runtime.thread_count() == number
        else:
            with pytest.raises(ProviderError, match=runtime.THREADS_ENV):
                runtime.thread_count()
