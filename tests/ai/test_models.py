"""Model catalogue, `get_model` and `calculate_cost` (DESIGN §7)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, strategies as st

from yiemagent import ProviderError, Usage
from yiemagent.ai import MODELS, calculate_cost, get_model


@pytest.mark.parametrize(
    ("name", "api"),
    [
        ("openai/gpt-4o", "openai-completions"),
        ("openai/gpt-4o-mini", "openai-completions"),
        ("openai/gpt-4.1", "openai-completions"),
        ("openai/gpt-4.1-mini", "openai-completions"),
        ("openai/o3", "openai-completions"),
        ("openai/o4-mini", "openai-completions"),
        ("anthropic/claude-sonnet-4-5", "anthropic-messages"),
        ("anthropic/claude-opus-4-1", "anthropic-messages"),
        ("anthropic/claude-haiku-4-5", "anthropic-messages"),
        ("local/qwen2.5-coder-0.5b", "local"),
        ("local/qwen2.5-coder-1.5b", "local"),
    ],
)
def test_catalogue_entries(name: str, api: str) -> None:
    model = get_model(name)
    assert f"{model.provider}/{model.id}" == name and model.api == api
    assert model.context_window > 0 and 0 < model.max_tokens <= model.context_window
    if api == "local":
        assert model.cost.input == model.cost.output == 0
    else:
        assert model.cost.input > 0 and model.cost.output > model.cost.input


@pytest.mark.parametrize(
    ("model_id", "price"),
    [
        ("claude-opus-4-6", (5, 25)),
        ("claude-sonnet-4-6", (3, 15)),
        ("claude-opus-4-7", (5, 25)),
        ("claude-opus-4-8", (5, 25)),
        ("claude-sonnet-5", (2, 10)),
        ("claude-opus-5", (5, 25)),
        ("claude-fable-5", (10, 50)),
        ("claude-fable-5-1", (10, 50)),
        ("claude-opus-5-5", (4, 20)),
        ("claude-sonnet-5-5", (2, 10)),
        ("claude-haiku-5-5", (0.1, 0.5)),
    ],
)
def test_claude_4_6_and_later_are_listed_with_1m_context_and_128k_output(
    model_id: str, price: tuple[float, float]
) -> None:
    # get_model("anthropic/claude-opus-4-7") was an unknown model. Figures: each model's
    # page of Anthropic's docs (1M tokens of context, 128K of output; USD per million
    # input/output tokens, Haiku 5.5's its first tier).
    model = get_model(f"anthropic/{model_id}")
    assert (model.api, model.reasoning) == ("anthropic-messages", True)
    assert (model.context_window, model.max_tokens) == (1_000_000, 128_000)
    assert (model.cost.input, model.cost.output) == price


def test_reasoning_flags_and_anthropic_cache_prices() -> None:
    assert get_model("openai/o3").reasoning and not get_model("openai/gpt-4o").reasoning
    sonnet = get_model("anthropic/claude-sonnet-4-5")
    assert sonnet.cost.cache_write > sonnet.cost.input > sonnet.cost.cache_read > 0


def test_bare_id_and_base_url_override() -> None:
    assert get_model("gpt-4o") is MODELS["openai/gpt-4o"]
    proxied = get_model("openai/gpt-4o", base_url="http://proxy/v1")
    assert proxied.base_url == "http://proxy/v1" and MODELS["openai/gpt-4o"].base_url != (
        "http://proxy/v1"
    )


def test_openai_compatible_server_by_base_url() -> None:
    model = get_model("openai-compatible/qwen2.5-coder", base_url="http://127.0.0.1:8080/v1")
    assert (model.id, model.api, model.base_url) == (
        "qwen2.5-coder",
        "openai-completions",
        "http://127.0.0.1:8080/v1",
    )
    with pytest.raises(ProviderError, match="base_url"):
        get_model("openai-compatible/qwen2.5-coder")


def test_unknown_model_lists_known_ones() -> None:
    with pytest.raises(ProviderError) as info:
        get_model("openai/gpt-99")
    assert "gpt-99" in str(info.value) and "openai/gpt-4o" in str(info.value)
    assert "anthropic/claude-sonnet-4-5" in str(info.value)


def test_calculate_cost_fills_usage_cost() -> None:
    usage = Usage(input=2_000, output=1_000, cache_read=10_000, cache_write=0)
    cost = calculate_cost(get_model("openai/gpt-4o"), usage)
    assert usage.cost is cost
    assert cost.input == pytest.approx(0.005) and cost.output == pytest.approx(0.01)
    assert cost.cache_read == pytest.approx(0.0125)
    assert cost.total == pytest.approx(0.0275)


@pytest.mark.parametrize("url", ["notaurl", "ftp://host/v1", "127.0.0.1:8080/v1", ""])
def test_a_base_url_that_is_not_http_is_refused_at_once(url: str) -> None:
    """Not at the first request, as 'Request URL is missing a protocol'."""
    with pytest.raises(ProviderError, match="not an http:// or https:// URL"):
        get_model("openai-compatible/x", base_url=url)


def test_a_base_url_for_the_embedded_model_is_refused_not_ignored() -> None:
    with pytest.raises(ProviderError, match="in-process and takes no base_url"):
        get_model("local/qwen2.5-coder-0.5b", base_url="http://127.0.0.1:8080/v1")


@pytest.mark.parametrize("vision", [True, False])
@pytest.mark.parametrize("name", ["openai/gpt-4o", "anthropic/claude-sonnet-4-5", "gpt-4o-mini"])
def test_vision_for_a_hosted_model_is_refused_not_ignored(name: str, vision: bool) -> None:
    """A hosted model's modalities are known: `vision=False` was taken silently, and a
    model that reads images was still sent them."""
    with pytest.raises(ProviderError, match=r"vision is for local servers .*, not"):
        get_model(name, vision=vision)


def test_local_server_models_and_their_tool_call_modes() -> None:
    """`ollama/<id>` at Ollama's default URL with text tool calls;
    `openai-compatible/<id>` native unless `tool_calls` says text or schema;
    `openai-responses/<id>` the catalogue's OpenAI model on the Responses API."""
    ollama = get_model("ollama/qwen2.5:0.5b")
    assert (ollama.provider, ollama.api, ollama.base_url, ollama.id) == (
        "ollama",
        "openai-text-calls",
        "http://127.0.0.1:11434/v1",
        "qwen2.5:0.5b",
    )
    assert get_model("ollama/q", base_url="http://h:1/v1").base_url == "http://h:1/v1"
    url = "http://127.0.0.1:8080/v1"
    apis = [
        get_model("openai-compatible/q", base_url=url, tool_calls=mode).api
        for mode in (None, "native", "text", "schema")
    ]
    assert apis == [
        "openai-completions",
        "openai-completions",
        "openai-text-calls",
        "openai-reply-schema",
    ]
    with pytest.raises(ProviderError, match="tool_calls must be one of native, text, schema"):
        get_model("openai-compatible/q", base_url=url, tool_calls="json")  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="tool_calls is for local servers"):
        get_model("openai/gpt-4o-mini", tool_calls="text")
    responses = get_model("openai-responses/gpt-4o-mini")
    assert responses.api == "openai-responses" and responses.provider == "openai"
    assert responses.cost == get_model("openai/gpt-4o-mini").cost
    assert "pdf" in responses.input and "pdf" not in get_model("local/qwen2.5-coder-0.5b").input


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("openai/gpt-4o-mni", "openai/gpt-4o-mini"),
        ("gpt-4o-mni", "openai/gpt-4o-mini"),
        ("claude-haiku-4.5", "anthropic/claude-haiku-4-5"),
        ("anthropic/claude-sonet-4-5", "anthropic/claude-sonnet-4-5"),
        ("local/qwen2.5-coder-05b", "local/qwen2.5-coder-0.5b"),
    ],
)
def test_an_id_one_typo_away_is_suggested(typed: str, meant: str) -> None:
    # It said "unknown model ..." and listed eighteen ids, the one meant among them.
    with pytest.raises(ProviderError) as caught:
        get_model(typed)
    assert str(caught.value).startswith(f"unknown model {typed!r}. Did you mean {meant!r}? ")


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("local/qwen", "'local/qwen2.5-coder-0.5b' or 'local/qwen2.5-coder-1.5b'"),
        ("qwen2.5-coder", "'local/qwen2.5-coder-0.5b' or 'local/qwen2.5-coder-1.5b'"),
        ("openai/gpt-4.1-n", "'openai/gpt-4.1-nano'"),
        ("claude-haiku", "'anthropic/claude-haiku-5-5' or 'anthropic/claude-haiku-4-5'?"),
    ],
)
def test_the_start_of_an_id_suggests_the_few_ids_it_begins(typed: str, meant: str) -> None:
    # "local/qwen" (the start of both embedded ids) listed all 29 ids and suggested none.
    with pytest.raises(ProviderError) as caught:
        get_model(typed)
    assert str(caught.value).startswith(f"unknown model {typed!r}. Did you mean {meant}")


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-./", max_size=30))
def test_a_suggestion_is_always_a_catalogue_id(typed: str) -> None:
    servers = ("openai-compatible/", "ollama/", "openai-responses/")
    if typed in MODELS or typed.startswith(servers):  # ids of no catalogue
        return
    try:
        get_model(typed)
    except ProviderError as exc:
        found = re.search(r"Did you mean ('[^?]+)\?", str(exc))
        meant = re.findall(r"'([^']+)'", found[1]) if found else []
        assert all(model_id in MODELS for model_id in meant), str(exc)
