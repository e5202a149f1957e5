"""`AgentLoopConfig` refuses a hook that is no function when it is made (DESIGN §8), as the
`Agent` does and as openai-agents' `test_validate_run_hooks_rejects_non_hook_objects`
checks. A `before_tool_call` that was a text failed every tool call of every run instead,
each answered "'str' object is not callable" to the model."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import AgentLoopConfig, ConfigError, Model

HOOKS = [
    "convert_to_llm",
    "transform_context",
    "get_api_key",
    "get_steering_messages",
    "get_follow_up_messages",
    "before_tool_call",
    "after_tool_call",
    "should_stop_after_turn",
    "prepare_next_turn",
]
MODEL = Model(id="m", provider="p", api="faux")


@pytest.mark.parametrize("hook", HOOKS)
def test_a_hook_that_is_no_function_is_refused(hook: str) -> None:
    with pytest.raises(ConfigError) as caught:
        AgentLoopConfig(model=MODEL, **{hook: "oops"})
    assert str(caught.value) == f"{hook} must be a function or None, not 'oops'"


class Hook:
    """A callable object: accepted as a function is."""

    def __call__(self, *args: Any) -> None:
        return None


@pytest.mark.parametrize("hook", HOOKS)
def test_functions_and_callable_objects_are_taken(hook: str) -> None:
    AgentLoopConfig(model=MODEL, **{hook: Hook()})
    AgentLoopConfig(model=MODEL, **{hook: lambda *args: None})
