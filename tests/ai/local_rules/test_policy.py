"""`LocalPolicy`: the empty policy is plain constrained decoding, rules are switched off by
name, and every step of a rule is in the message's details."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

import pytest

from tests.ai._local_kit import FakeRuntime
from tests.ai.local_rules._kit import (
    GET_TIME,
    GET_WEATHER,
    answer,
    conversation,
    reply,
    run,
)
from yiemagent.ai import get_model
from yiemagent.ai.providers.local import LOCAL_MODELS, local_model
from yiemagent.ai.providers.local.model import policy_of
from yiemagent.ai.providers.local.rules import (
    DEFAULT_POLICY,
    DETAILS_KEY,
    AddsPart,
    LocalPolicy,
)
from yiemagent.errors import ProviderError
from yiemagent.types.messages import AssistantMessage, message_from_dict, message_to_dict


def _branches(request: dict[str, object]) -> list[str]:
    schema = request["response_format"]["json_schema"]["schema"]  # type: ignore[index]
    return [b["properties"]["name"]["const"] for b in schema["anyOf"] if b["type"] == "object"]


async def test_the_empty_policy_offers_everything_and_emits_calls_as_written(
    fake: Callable[..., FakeRuntime],
) -> None:
    """What every rule would change is left as the model wrote it: an ungrounded call of a
    tool the request does not name, and the same call twice; one request, no probe, no
    extra call."""
    runtime = fake([reply(("get_time", {"place": "Hamlet"}), ("get_time", {"place": "Hamlet"}))])
    message = await run(conversation("Who wrote Hamlet?"), [GET_TIME, GET_WEATHER], LocalPolicy())
    assert [c.arguments for c in message.tool_calls] == [{"place": "Hamlet"}] * 2
    assert (len(runtime.requests), runtime.probes) == (1, [])
    assert _branches(runtime.requests[0]) == ["get_time", "get_weather", "answer"]
    assert DETAILS_KEY not in message.details


async def test_the_empty_policy_still_answers_in_text(fake: Callable[..., FakeRuntime]) -> None:
    fake([answer("Shakespeare.")])
    message = await run(conversation("Who wrote Hamlet?"), [GET_TIME], LocalPolicy())
    assert (message.stop_reason, message.text) == ("stop", "Shakespeare.")


async def test_the_details_survive_the_transcript(fake: Callable[..., FakeRuntime]) -> None:
    fake([reply(("get_time", {"place": "Hamlet"})), answer("Shakespeare.")])
    message = await run(conversation("Who wrote Hamlet?"), [GET_TIME])
    steps = message.details[DETAILS_KEY]
    assert {"rule": "relevant", "action": "dropped"}.items() <= steps[0].items()
    assert "get_time" in steps[0]["what"]
    again = message_from_dict(message_to_dict(message))
    assert isinstance(again, AssistantMessage)
    assert again.details == message.details


def test_without_switches_rules_off_by_name_and_rejects_unknown_names() -> None:
    fewer = DEFAULT_POLICY.without("relevant", "grounded")
    assert set(DEFAULT_POLICY.names) - set(fewer.names) == {"relevant", "grounded"}
    with pytest.raises(ProviderError, match=r"no local rule named 'relevance'.*relevant"):
        DEFAULT_POLICY.without("relevance")
    with pytest.raises(ProviderError, match="twice: adds_part"):
        LocalPolicy([AddsPart(), AddsPart()])


def test_a_policy_is_for_models_the_embedded_provider_drives() -> None:
    assert local_model(policy=LocalPolicy()).policy == LocalPolicy()
    assert "relevant" not in policy_of(local_model(without=("relevant",))).names
    assert policy_of(get_model("local/qwen2.5-coder-1.5b")) is DEFAULT_POLICY
    with pytest.raises(ProviderError, match="not driven by the embedded provider"):
        local_model("openai/gpt-4o-mini")
    with pytest.raises(ProviderError, match="tool_format must be one of json, native"):
        local_model(tool_format="xml")  # type: ignore[arg-type]


def test_the_trace_shows_what_the_rules_did() -> None:
    from yiemagent.telemetry import build_timeline
    from yiemagent.types.messages import TextContent, UserMessage

    step = {"rule": "relevant", "action": "dropped", "what": 'get_time {"place": "Hamlet"}'}
    message = AssistantMessage(content=[TextContent("Shakespeare.")], details={DETAILS_KEY: [step]})
    timeline = build_timeline([UserMessage("Who wrote Hamlet?"), message])
    shown = timeline.turns[0].bars[0].details["rules"]
    assert shown == 'relevant dropped: get_time {"place": "Hamlet"}'


def test_yiem_run_json_lines_carry_the_rules_steps() -> None:
    """`yiem run --json` prints `event_to_dict` of each event: the message's details too."""
    from yiemagent.types.events import MessageEndEvent, event_to_dict
    from yiemagent.types.messages import TextContent

    step = {"rule": "grounded", "action": "dropped", "what": 'get_weather {"city": "Paris"}'}
    message = AssistantMessage(content=[TextContent("Which city?")], details={DETAILS_KEY: [step]})
    line = json.loads(json.dumps(event_to_dict(MessageEndEvent(message))))
    assert line["message"]["details"] == {DETAILS_KEY: [step]}


def test_each_embedded_model_runs_its_own_default_policy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both embedded models run every rule; a spec can turn rules off for its model
    (`LocalModelSpec.rules_off`), `without` starts from that default, and a chosen policy
    is kept as it is."""
    small = policy_of(get_model("local/qwen2.5-coder-0.5b")).names
    large = policy_of(get_model("local/qwen2.5-coder-1.5b")).names
    assert small == large == DEFAULT_POLICY.names
    spec = LOCAL_MODELS["qwen2.5-coder-0.5b"]
    monkeypatch.setitem(LOCAL_MODELS, spec.id, replace(spec, rules_off=("named_unused",)))
    off = policy_of(get_model("local/qwen2.5-coder-0.5b")).names
    assert set(DEFAULT_POLICY.names) - set(off) == {"named_unused"}
    trimmed = local_model("local/qwen2.5-coder-0.5b", without=("relevant",)).policy
    assert trimmed is not None
    assert set(trimmed.names) == set(off) - {"relevant"}
    chosen = local_model("local/qwen2.5-coder-0.5b", policy=DEFAULT_POLICY).policy
    assert chosen is DEFAULT_POLICY
