"""The built-in model catalogue, `get_model` and `calculate_cost` (DESIGN §7).

Prices are USD per million tokens from the `genai-prices` database (`yiemagent.ai._prices`,
loaded the first time a hosted model is looked up; check them before relying on them for
billing). `get_model("provider/id")` looks a model up; any OpenAI-compatible server
(llama.cpp, vLLM, Ollama, OpenRouter…) is reached with
`get_model("openai-compatible/<model id>", base_url="http://host:port/v1")`.
"""

from __future__ import annotations

import difflib
import os
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Final, Literal

from yiemagent.errors import ProviderError
from yiemagent.types.messages import Cost, Usage
from yiemagent.types.model import Model

DEFAULT_MODEL = "local/qwen2.5-coder-0.5b"
"""The model an `Agent` given no model, `stream_fn` or `llm_call` runs, and `yiem`'s
default `--model`: the embedded one."""

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "OLLAMA_URL",
    "ToolCallMode",
    "calculate_cost",
    "get_model",
    "ollama_url",
]

_OPENAI_URL: Final = "https://api.openai.com/v1"
_ANTHROPIC_URL: Final = "https://api.anthropic.com"
_TEXT_IMAGE_PDF: Final = ("text", "image", "pdf")


_OPENAI: Final = Model(
    id="", provider="openai", api="openai-completions", base_url=_OPENAI_URL, input=_TEXT_IMAGE_PDF
)
_ANTHROPIC: Final = Model(
    id="",
    provider="anthropic",
    api="anthropic-messages",
    base_url=_ANTHROPIC_URL,
    reasoning=True,
    input=_TEXT_IMAGE_PDF,
    context_window=200_000,
)
_LOCAL: Final = Model(id="", provider="local", api="local", max_tokens=2048)


def _entry(
    kind: Model,
    id: str,
    *,
    name: str = "",
    context_window: int | None = None,
    max_tokens: int | None = None,
    reasoning: bool | None = None,
) -> Model:
    """A catalogue entry: `kind`'s provider, API and defaults, with this id (also its name
    unless one is given) and the fields given."""
    return replace(
        kind,
        id=id,
        name=name or id,
        context_window=kind.context_window if context_window is None else context_window,
        max_tokens=kind.max_tokens if max_tokens is None else max_tokens,
        reasoning=kind.reasoning if reasoning is None else reasoning,
    )


_CATALOGUE: tuple[Model, ...] = (
    # OpenAI (prices: genai-prices, yiemagent.ai._prices)
    _entry(_OPENAI, "gpt-4o", context_window=128_000, max_tokens=16_384),
    _entry(_OPENAI, "gpt-4o-mini", context_window=128_000, max_tokens=16_384),
    _entry(_OPENAI, "gpt-4.1", context_window=1_047_576, max_tokens=32_768),
    _entry(_OPENAI, "gpt-4.1-mini", context_window=1_047_576, max_tokens=32_768),
    _entry(_OPENAI, "gpt-4.1-nano", context_window=1_047_576, max_tokens=32_768),
    _entry(_OPENAI, "o3", context_window=200_000, max_tokens=100_000, reasoning=True),
    _entry(_OPENAI, "o4-mini", context_window=200_000, max_tokens=100_000, reasoning=True),
    _entry(_OPENAI, "gpt-5", context_window=400_000, max_tokens=128_000, reasoning=True),
    _entry(_OPENAI, "gpt-5-mini", context_window=400_000, max_tokens=128_000, reasoning=True),
    _entry(_OPENAI, "gpt-5-nano", context_window=400_000, max_tokens=128_000, reasoning=True),
    # Anthropic (context windows and output limits: each model's page of Anthropic's docs)
    _entry(_ANTHROPIC, "claude-opus-5-5", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-sonnet-5-5", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-haiku-5-5", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-fable-5-1", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-fable-5", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-opus-5", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-sonnet-5", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-opus-4-8", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-opus-4-7", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-opus-4-6", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-sonnet-4-6", context_window=1_000_000, max_tokens=128_000),
    _entry(_ANTHROPIC, "claude-sonnet-4-5", max_tokens=64_000),
    _entry(_ANTHROPIC, "claude-sonnet-4-0", max_tokens=64_000),
    _entry(_ANTHROPIC, "claude-opus-4-1", max_tokens=32_000),
    _entry(_ANTHROPIC, "claude-opus-4-0", max_tokens=32_000),
    _entry(_ANTHROPIC, "claude-haiku-4-5", max_tokens=64_000),
    _entry(_ANTHROPIC, "claude-3-5-haiku-latest", max_tokens=8_192, reasoning=False),
    # The embedded runtime (docs/local-model.md): in-process, free.
    _entry(
        _LOCAL,
        "qwen2.5-coder-0.5b",
        name="Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
        context_window=32_768,
    ),
    _entry(
        _LOCAL,
        "qwen2.5-coder-1.5b",
        name="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
        context_window=32_768,
    ),
)


class _Catalogue(Mapping[str, Model]):
    """The catalogue, read-only; a hosted model gets its price (`yiemagent.ai._prices`) the
    first time it is looked up, so the price database loads only when a model is used."""

    __slots__ = ("_models", "_priced")

    def __init__(self, models: tuple[Model, ...]) -> None:
        self._models = {f"{m.provider}/{m.id}": m for m in models}
        self._priced: dict[str, Model] = {}

    def __getitem__(self, key: str) -> Model:
        priced = self._priced.get(key)
        if priced is not None:
            return priced
        model = self._models[key]
        if model.api != "local":
            from yiemagent.ai._prices import lookup_price

            price = lookup_price(model.provider, model.id)
            if price is not None:
                model = replace(model, cost=price)
        return self._priced.setdefault(key, model)

    def __iter__(self) -> Iterator[str]:
        return iter(self._models)

    def __len__(self) -> int:
        return len(self._models)

    def __repr__(self) -> str:
        return f"MODELS({', '.join(self._models)})"


MODELS: Final[Mapping[str, Model]] = _Catalogue(_CATALOGUE)
"""The built-in catalogue: "provider/id" → `Model` (read-only; hosted models carry their
price in USD per million tokens from `genai-prices`)."""

OPENAI_COMPATIBLE: Final = "openai-compatible"
AZURE: Final = "azure"
"""The provider of `azure/<deployment>`: an Azure OpenAI deployment, found as the `openai`
SDK's `AzureOpenAI` finds it (`azure_url`)."""


_TEXT_ONLY_OPENAI = re.compile(r"(gpt-35|gpt-3\.5|o1-mini|o1-preview|o3-mini)(?![\w.])")
"""OpenAI models an Azure deployment may run that read no images (GPT-3.5 is
`gpt-35-turbo` on Azure)."""


def azure_vision(deployment: str) -> bool:
    """Whether the Azure OpenAI deployment `deployment` is taken to read images: a
    deployment's name is its owner's, often the model's (`gpt-4o`, `gpt-4.1-mini`). Named
    for a catalogue OpenAI model, that model's modalities; for GPT-3.5, o1-mini, o1-preview
    or o3-mini, no; otherwise yes, as the chat models Azure deploys today (GPT-4o, 4.1, 5,
    o1, o3, o4-mini) read images: a text-only model then refuses the image with a clear
    HTTP 400, where a stand-in would drop it unsaid."""
    known = _azure_catalogue_model(deployment)
    if known is not None:
        return "image" in known.input
    return _TEXT_ONLY_OPENAI.search(deployment.lower()) is None


def azure_reasoning(deployment: str) -> bool:
    """Whether the Azure OpenAI deployment `deployment` is taken to think: named for a
    catalogue OpenAI model (`gpt-5`, `o3`), that model's `reasoning`, so a run's reasoning
    level goes to it as `reasoning_effort`; any other name, no (sending the level to a
    model that does not think is an HTTP 400; `reasoning=True` says it thinks)."""
    known = _azure_catalogue_model(deployment)
    return known is not None and known.reasoning


def _azure_catalogue_model(deployment: str) -> Model | None:
    """The catalogue OpenAI model an Azure deployment is named for (case aside), else None."""
    return MODELS.get(f"openai/{deployment.lower()}")


def azure_url(deployment: str, environ: Mapping[str, str]) -> str | None:
    """The base URL of the Azure OpenAI deployment `deployment`, from the variables the
    `openai` SDK's `AzureOpenAI` reads: `AZURE_OPENAI_ENDPOINT`, the resource
    (`https://NAME.openai.azure.com`), and `OPENAI_API_VERSION`: with it the deployment's
    URL with that `api-version`; without it the v1 API (`…/openai/v1`), which takes the
    deployment as the model and no version. None when `environ` names no endpoint."""
    endpoint = (environ.get("AZURE_OPENAI_ENDPOINT") or "").strip().rstrip("/")
    if not endpoint:
        return None
    version = (environ.get("OPENAI_API_VERSION") or "").strip()
    if not version:
        return f"{endpoint}/openai/v1"
    query = urllib.parse.urlencode({"api-version": version})
    return f"{endpoint}/openai/deployments/{urllib.parse.quote(deployment, safe='')}?{query}"


OLLAMA_URL: Final = "http://127.0.0.1:11434/v1"
"""Where `ollama/<model>` is served unless `base_url` or `OLLAMA_HOST` says otherwise
(Ollama's default)."""

_LISTEN_EVERYWHERE: Final = ("0.0.0.0", "::", "")
"""Hosts a server listens on but a client cannot name; reached at the loopback."""


def ollama_url(host: str | None) -> str:
    """The OpenAI API root of the Ollama server `host` names, read as Ollama's own client
    reads its `OLLAMA_HOST`: `host[:port]` or a URL, the scheme http unless given, the port
    11434 without a scheme (else the scheme's), a path kept; `/v1` is added.

    Args:
        host: The value of `OLLAMA_HOST`; None or blank gives `OLLAMA_URL`.

    Raises:
        ProviderError: a value that names no host and port (an unknown scheme, a port
            that is not a number from 1 to 65535).
    """
    text = (host or "").strip()
    if not text:
        return OLLAMA_URL
    scheme, sep, rest = text.partition("://")
    if not sep:
        scheme, rest, default_port = "http", text, 11434
    elif scheme in ("http", "https"):
        default_port = 80 if scheme == "http" else 443
    else:
        raise ProviderError(
            f"OLLAMA_HOST={text!r} is not host[:port] or an http(s):// URL "
            "(e.g. OLLAMA_HOST=127.0.0.1:11434)"
        )
    hostport, _, path = rest.partition("/")
    name, port = hostport, str(default_port)
    if hostport.startswith("["):  # [IPv6]:port
        name, _, tail = hostport[1:].partition("]")
        port = tail[1:] if tail.startswith(":") else port
    elif hostport.count(":") == 1:
        name, port = hostport.split(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ProviderError(
            f"OLLAMA_HOST={text!r}: the port {port!r} is not a number from 1 to 65535"
        )
    name = "127.0.0.1" if name in _LISTEN_EVERYWHERE else name
    name = f"[{name}]" if ":" in name else name
    root = f"{scheme}://{name}:{port}" + (f"/{path.strip('/')}" if path.strip("/") else "")
    return f"{root}/v1"


ToolCallMode = Literal["native", "text", "schema"]
_TOOL_CALL_APIS: Final[dict[str, str]] = {
    "native": "openai-completions",
    "text": "openai-text-calls",
    "schema": "openai-reply-schema",
}


_REASONING_FAMILY = re.compile(r"o\d|gpt-5(?!-chat)|gpt-6")
"""OpenAI model ids of the reasoning families (the o-series, GPT-5 and later, not GPT-5's
chat model): an id the catalogue lacks is taken for a reasoning model when its name says so,
so its reasoning items come back with their encrypted content and no temperature is sent."""


def _did_you_mean(name: str) -> str:
    """' Did you mean 'openai/gpt-4o-mini'?' for a name that begins at most three catalogue
    ids ("local/qwen": both embedded ones), or else is one typo away from one (with or
    without its provider), else "": the catalogue is listed after it, and a long list
    hides the one meant."""
    ids = {model_id: model_id for model_id in MODELS}
    ids |= {model_id.partition("/")[2]: model_id for model_id in MODELS}
    begun = [] if len(name) < 3 else [m for k, m in ids.items() if k.startswith(name)]
    begun = list(dict.fromkeys(begun))  # an id begun with and without its provider: once
    if 1 <= len(begun) <= 3:
        return f" Did you mean {' or '.join(repr(model_id) for model_id in begun)}?"
    close = difflib.get_close_matches(name, list(ids), n=1, cutoff=0.85)
    return f" Did you mean {ids[close[0]]!r}?" if close else ""


def get_model(
    name: str,
    *,
    base_url: str | None = None,
    tool_calls: ToolCallMode | None = None,
    vision: bool | None = None,
    reasoning: bool = False,
) -> Model:
    """Look a model up by "provider/id".

    Args:
        name: "provider/id" from `MODELS` (e.g. "openai/gpt-4o", "anthropic/claude-sonnet-4-5",
            "local/qwen2.5-coder-0.5b"), a bare id when exactly one provider has it,
            "openai-responses/<id>" for an OpenAI model over the Responses API,
            "ollama/<id>" for a model Ollama serves (at `base_url`, else where the
            `OLLAMA_HOST` environment variable says, `ollama_url`, else `OLLAMA_URL`),
            "openai-compatible/<id>" for any OpenAI-compatible server (needs
            `base_url`), or "azure/<deployment>" for an Azure OpenAI deployment (at
            `base_url`, else where `AZURE_OPENAI_ENDPOINT` and `OPENAI_API_VERSION` say,
            `azure_url`; its key in `AZURE_OPENAI_API_KEY`, else an Entra ID token in
            `AZURE_OPENAI_AD_TOKEN`), which takes the options of "openai-compatible/…".
        base_url: Server URL overriding the catalogue's (e.g. a proxy); required for
            "openai-compatible/…".
        tool_calls: How a local server's model calls tools (only with
            "openai-compatible/…" and "ollama/…"): "native" (the API's `tool_calls`; the
            default for "openai-compatible/…"), "text" (also the calls it writes as text,
            read while streaming; the default for "ollama/…"), "schema" (the embedded
            model's JSON reply schema and rules, for servers that take `response_format`).
        vision: Whether a local server's model reads images (only with
            "openai-compatible/…", "ollama/…" and "azure/…", e.g. "ollama/llava"): images
            then go to the server as OpenAI image parts; without it they get a text
            stand-in. Not given (None): no for "openai-compatible/…" and "ollama/…", since
            nothing tells which models a server's model reads; for "azure/…" what
            `azure_vision` says of the deployment's name. A catalogue model's modalities
            are known.
        reasoning: Whether a local server's model thinks (only with "openai-compatible/…",
            "ollama/…" and "azure/…", e.g. "ollama/qwen3"): a run's reasoning level then goes
            to the server as `reasoning_effort`; without it the level is ignored (with a
            warning), since nothing tells which models think, except that an "azure/…"
            deployment named for a catalogue model thinks as it does (`azure_reasoning`).
            A catalogue model's is known.

    Returns:
        The `Model` (a new one carrying `base_url` when given).

    Raises:
        ProviderError: unknown model (the message lists the known ones),
            "openai-compatible/…" without `base_url`, "azure/…" without it or
            `AZURE_OPENAI_ENDPOINT`, a `base_url` that is not http(s),
            a `base_url` for an embedded model, `tool_calls` for a hosted model or with
            an unknown value, `vision` (True or False) or `reasoning` for a model that is
            not a local server's, or an `OLLAMA_HOST` naming no server for "ollama/…".
    """
    provider, sep, model_id = name.partition("/")
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ProviderError(
            f"base_url {base_url!r} is not an http:// or https:// URL "
            '(e.g. base_url="http://127.0.0.1:8080/v1")'
        )
    if tool_calls is not None and tool_calls not in _TOOL_CALL_APIS:
        raise ProviderError(
            f"tool_calls must be one of {', '.join(_TOOL_CALL_APIS)}, not {tool_calls!r}"
        )
    if sep and provider in (OPENAI_COMPATIBLE, "ollama", AZURE):
        if not model_id:
            raise ProviderError(f'"{provider}/<model id>" needs a model id after the "/"')
        if provider == "ollama":
            base_url = base_url or ollama_url(os.environ.get("OLLAMA_HOST"))
        if provider == AZURE:
            base_url = base_url or azure_url(model_id, os.environ)
            if not base_url:
                raise ProviderError(
                    f"{name!r} needs AZURE_OPENAI_ENDPOINT in the environment (the resource,"
                    " https://NAME.openai.azure.com), or the deployment's URL as its base URL"
                )
        if not base_url:
            raise ProviderError(
                f"{name!r} needs base_url, the server's OpenAI API root "
                '(e.g. base_url="http://127.0.0.1:8080/v1")'
            )
        mode = tool_calls or ("text" if provider == "ollama" else "native")
        if vision is None:
            vision = provider == AZURE and azure_vision(model_id)
        reasoning = reasoning or (provider == AZURE and azure_reasoning(model_id))
        return Model(
            id=model_id,
            provider=provider,
            api=_TOOL_CALL_APIS[mode],
            base_url=base_url,
            name=model_id,
            input=("text", "image") if vision else ("text",),
            reasoning=reasoning,
        )
    local_only = (
        ("tool_calls", tool_calls is not None),
        ("vision", vision is not None),  # False too: a hosted model's modalities are known
        ("reasoning", reasoning),
    )
    for option, value in local_only:
        if value:
            raise ProviderError(
                f"{option} is for local servers (openai-compatible/..., ollama/...), not {name!r}"
            )
    if sep and provider == "openai-responses" and model_id:
        known = MODELS.get(f"openai/{model_id}")
        unknown = replace(
            _OPENAI, id=model_id, name=model_id, reasoning=bool(_REASONING_FAMILY.match(model_id))
        )
        responses = replace(known or unknown, api="openai-responses")
        return responses if base_url is None else replace(responses, base_url=base_url)
    model = MODELS.get(name) if sep else _by_bare_id(name)
    if model is None:
        known_names = ", ".join(MODELS)
        raise ProviderError(
            f"unknown model {name!r}.{_did_you_mean(name)} Known models: {known_names}; or use "
            '"openai-compatible/<model id>" with base_url for any OpenAI-compatible server, '
            '"ollama/<model id>", or "openai-responses/<model id>"'
        )
    if base_url is not None and model.api == "local":
        raise ProviderError(
            f"{name!r} runs in-process and takes no base_url; for a server use "
            '"openai-compatible/<model id>" with base_url'
        )
    return model if base_url is None else replace(model, base_url=base_url)


def _by_bare_id(model_id: str) -> Model | None:
    matches = [m for m in _CATALOGUE if m.id == model_id]
    return MODELS[f"{matches[0].provider}/{model_id}"] if len(matches) == 1 else None


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Fill `usage.cost` from the model's prices (USD per million tokens) and return it.

    Args:
        model: Supplies `cost`, the prices per million tokens.
        usage: Token counts; its `cost` is replaced in place.

    Returns:
        The new `Cost` (also stored in `usage.cost`), `total` the sum of the four parts;
        cache writes at the input price when the model has no write price.
    """
    price = model.cost
    # A write to the cache without a price of its own costs what input does: OpenAI bills
    # writes as input before GPT-5.6 (the price table lists no write price for those).
    write_price = price.cache_write or price.input
    cost = Cost(
        input=price.input * usage.input / 1e6,
        output=price.output * usage.output / 1e6,
        cache_read=price.cache_read * usage.cache_read / 1e6,
        cache_write=write_price * usage.cache_write / 1e6,
    )
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    usage.cost = cost
    return cost
