"""Checks of `local_agent.yaml` that no built-in check expresses: each is a plain function
check (`(EvalRun) -> bool | CheckResult`) or a factory of one, named in the dataset as
`local_agent_checks.py:NAME`."""

from __future__ import annotations

import re
from collections.abc import Callable

from yiemagent.evals import CheckResult, EvalRun

_HHMM = re.compile(r"\b(\d\d):(\d\d) on\b")


def _times(text: str) -> list[str]:
    """Ways an answer may write the HH:MM at the start of a `get_time` result (24-hour,
    without the leading zero, 12-hour)."""
    match = _HHMM.search(text)
    if match is None:
        return []
    hour, minute = int(match.group(1)), match.group(2)
    twelve = hour % 12 or 12
    return [f"{hour:02d}:{minute}", f"{hour}:{minute}", f"{twelve}:{minute}"]


def time_of(place: str) -> Callable[[EvalRun], CheckResult]:
    """The answer gives the time `get_time` returned for `place` (a call whose `place`
    contains it, ignoring case): the model wrote the tool's time, not one of its own."""

    def check(run: EvalRun) -> CheckResult:
        arguments = {call.id: call.arguments for call in run.tool_calls}
        shown = [
            "".join(getattr(block, "text", "") for block in result.content)
            for result in run.tool_results
            if result.tool_name == "get_time"
            and place.lower()
            in str(arguments.get(result.tool_call_id, {}).get("place", "")).lower()
        ]
        forms = [form for text in shown for form in _times(text)]
        if not forms:
            return CheckResult(False, f"no get_time result for {place}")
        if not any(form in run.text for form in forms):
            return CheckResult(False, f"answer lacks the {place} time {forms[0]}")
        return CheckResult(True, f"answer has the {place} time {forms[0]}")

    check.__name__ = f"time_of({place!r})"
    return check
