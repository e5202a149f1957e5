"""The public exceptions name their public path (a traceback reads
`yiemagent.agent.AgentRunError`, not `yiemagent.agent._run.AgentRunError`) and survive
pickling whole, as they must to cross a process pool or a Ray task; the public dataclasses
pickle too, and the type hints of the classes that keep their module still resolve."""

from __future__ import annotations

import importlib
import inspect
import pickle
import typing
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Any

import pytest

from yiemagent import (
    Agent,
    AgentRunError,
    ApprovalPendingError,
    AssistantMessage,
    BatchError,
    GuardrailTripped,
    SessionBusyError,
    SessionCorruptError,
    SessionStoreClosedError,
    ToolLoadError,
    ToolResultMessage,
    UsageLimitExceeded,
    UserMessage,
    get_model,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_text
from yiemagent.batch import BatchTask, TaskResult
from yiemagent.types import PendingApproval, TextContent, ToolApproval, ToolCall

PACKAGES = [
    "yiemagent",
    "yiemagent.agent",
    "yiemagent.ai",
    "yiemagent.batch",
    "yiemagent.compaction",
    "yiemagent.errors",
    "yiemagent.evals",
    "yiemagent.mcp",
    "yiemagent.sessions",
    "yiemagent.teams",
    "yiemagent.testing",
    "yiemagent.tools",
    "yiemagent.types",
]


def _exported(kind: type[Any]) -> dict[str, type[Any]]:
    """Every class of `kind` a package lists in `__all__`, by its public name."""
    found: dict[str, type[Any]] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isclass(value) and issubclass(value, kind):
                found.setdefault(f"{package}.{name}", value)
    return found


def test_each_public_exception_names_a_public_module_that_holds_it() -> None:
    errors = _exported(BaseException)
    assert "yiemagent.agent.AgentRunError" in errors
    for public, error in errors.items():
        module = error.__module__
        assert not any(part.startswith("_") for part in module.split(".")), (public, module)
        assert getattr(importlib.import_module(module), error.__qualname__) is error, public


def _answer(text: str, stop_reason: Any = "stop") -> AssistantMessage:
    return faux_message(faux_text(text), stop_reason=stop_reason, error_message="boom")


ERRORS = [
    ApprovalPendingError("2 calls are held", ["c1", "c2"]),
    BatchError("bad line 3", results_file="out.jsonl"),
    SessionBusyError("held by another writer", session_id="s", holder="pid 7"),
    SessionCorruptError("s", ["line 2 is not JSON"], store="s.db"),
    SessionStoreClosedError("the session store 's.db' is closed"),
    ToolLoadError([("tools/a.py", "import failed: SyntaxError")]),
    AgentRunError(_answer("half", "error"), [UserMessage("hi")]),
    UsageLimitExceeded(_answer("over", "error"), []),
    GuardrailTripped(_answer("no", "error"), [], "input", "polite", "rude"),
]


@pytest.mark.parametrize("error", ERRORS, ids=lambda e: type(e).__name__)
def test_a_public_exception_pickles_whole(error: Exception) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error)
    assert str(back) == str(error) and back.args == error.args
    assert vars(back) == vars(error)


def _failing_prompt() -> None:
    """In a worker process: a real run whose model call fails."""
    fm = FauxModel([_answer("half an answer", "error")])
    Agent(model=fm.model, stream_fn=fm.stream_fn).prompt_sync("hi")


def test_a_run_error_raised_in_a_worker_process_reaches_the_parent_whole() -> None:
    with ProcessPoolExecutor(1, mp_context=get_context("spawn")) as pool:
        future = pool.submit(_failing_prompt)
        with pytest.raises(AgentRunError) as raised:
            future.result(timeout=120)
    error = raised.value
    assert str(error) == "boom"
    assert error.message.text == "half an answer"
    assert [m.role for m in error.new_messages] == ["user", "assistant"]


def test_public_dataclasses_pickle_whole() -> None:
    call = ToolCall("c1", "rm", {"path": "/tmp/x"})
    held = AssistantMessage([TextContent("removing"), call], stop_reason="toolUse")
    values = [
        UserMessage("hi"),
        held,
        ToolResultMessage("c1", "rm", [TextContent("done")]),
        ToolApproval(False, "nobody to ask", by_user=False),
        PendingApproval("c1", "rm", {"path": "/tmp/x"}, held),
        get_model("openai/gpt-4o-mini"),
        BatchTask("t1", "hi", metadata={"n": 1}),
        TaskResult("t1", "ok", "hello"),
    ]
    for value in values:
        assert pickle.loads(pickle.dumps(value)) == value, value


def test_type_hints_of_classes_still_resolve() -> None:
    """Only exceptions name their package: a class's string annotations resolve in the
    namespace of its `__module__`, and a package's `__init__` does not hold the names they
    use (`Any`, `Path`, `Literal`, ...). These broke when every class was moved."""
    from yiemagent.agent import GuardrailContext, Handoff
    from yiemagent.evals import Dataset, RunReport

    for cls in (BatchTask, TaskResult, GuardrailContext, Handoff, Dataset, RunReport):
        assert typing.get_type_hints(cls), cls
