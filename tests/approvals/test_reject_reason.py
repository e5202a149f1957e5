"""`reject(id, reason)` checks `reason` before it records anything (DESIGN §14): a
reason that is not text (a dict) or that cannot be stored (a lone surrogate) raises
`ConfigError`, and neither memory nor the stored record changes; a valid decision then
works as usual."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from yiemagent import ConfigError, SqliteSessionStore, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import stored_agent

BAD_REASONS: list[Any] = [{"why": "no"}, ["no"], 42, b"no", "bad \ud800 text"]


@pytest.mark.parametrize("reason", BAD_REASONS, ids=["dict", "list", "int", "bytes", "surrogate"])
async def test_a_bad_reason_is_refused_before_anything_is_recorded(
    tmp_path: Path, reason: Any
) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "s.db")
    fm = FauxModel([faux_message(faux_tool_call("rm", {"n": 1}, id="c1")), "not removed"])

    first = stored_agent(fm, store, ran)
    await first.prompt("remove it")
    stored_before = store.load_state("s", "held_tool_calls")
    with pytest.raises(ConfigError, match="reason"):
        first.reject("c1", reason)
    assert first.pending_approvals[0].decision is None  # memory unchanged
    assert store.load_state("s", "held_tool_calls") == stored_before  # store unchanged
    await first.close()

    second = stored_agent(fm, store, ran)  # another process would see the same: no decision
    assert second.pending_approvals[0].decision is None
    second.reject("c1", "not today")
    answer = await second.resume()
    assert answer.text == "not removed" and ran == []
    [result] = [m for m in second.state.messages if isinstance(m, ToolResultMessage)]
    assert text_of(result.content) == "Tool call rejected by the user: not today"
    await second.close()


async def test_a_call_nobody_could_decide_is_not_called_rejected_even_after_a_reload(
    tmp_path: Path,
) -> None:
    """`reject(id, reason, by_user=False)`: no person refused the call, so its result says
    it was not run, and a process that reloads the stored decision says the same."""
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "s.db")
    fm = FauxModel([faux_message(faux_tool_call("rm", {"n": 1}, id="c1")), "asked nobody"])
    first = stored_agent(fm, store, ran)
    await first.prompt("remove it")
    first.reject("c1", "nobody is there to approve it", by_user=False)
    await first.close()

    second = stored_agent(fm, store, ran)
    decision = second.pending_approvals[0].decision
    assert decision is not None and decision.by_user is False
    answer = await second.resume()
    assert answer.text == "asked nobody" and ran == []
    [result] = [m for m in second.state.messages if isinstance(m, ToolResultMessage)]
    assert result.is_error
    assert text_of(result.content) == "Tool call not run: nobody is there to approve it"
    await second.close()
