"""A decision on a held call may be changed until `resume()` (DESIGN §14): the last one
counts, also when another agent on the same stored session (another process) changes it.
openai-agents#4429 lost a per-call rejection made after an approval, so the tool still
ran; here an approval then a rejection runs nothing, and a rejection then an approval runs
the call once."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent import SqliteSessionStore, ToolResultMessage
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import stored_agent, transcript_problems


@pytest.mark.parametrize("last", ["reject", "approve"])
async def test_the_last_decision_counts_also_from_another_agent(tmp_path: Path, last: str) -> None:
    ran: list[str] = []
    store = SqliteSessionStore(tmp_path / "s.db")
    fm = FauxModel([faux_message(faux_tool_call("rm", {"n": 1}, id="c1")), "done"])

    first = stored_agent(fm, store, ran)
    await first.prompt("remove it")
    if last == "reject":
        first.approve("c1")
    else:
        first.reject("c1", "not yet")
    await first.close()

    second = stored_agent(fm, store, ran)  # as another process would: the first decision is stored
    (held,) = second.pending_approvals
    assert held.decision is not None and held.decision.approved is (last == "reject")
    if last == "reject":
        second.reject("c1", "changed my mind")
    else:
        second.approve("c1")
    assert (await second.resume()).text == "done"
    (result,) = [m for m in second.state.messages if isinstance(m, ToolResultMessage)]
    if last == "reject":
        assert ran == []
        assert result.is_error
        assert text_of(result.content) == "Tool call rejected by the user: changed my mind"
    else:
        assert ran == ["c1"] and not result.is_error
    assert transcript_problems(second.state.messages) == []
    assert second.pending_approvals == []
    await second.close()
    store.close()
