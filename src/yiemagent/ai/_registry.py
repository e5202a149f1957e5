"""Which function streams which wire API (DESIGN §7): the built-in map, loaded lazily so that
no provider SDK is imported before it is used, plus `register_api` for custom providers."""

from __future__ import annotations

import importlib
from typing import Final

from yiemagent.errors import ProviderError
from yiemagent.types.model import StreamFn

__all__ = ["get_stream_fn", "register_api", "registered_apis"]

_BUILTIN: Final[dict[str, tuple[str, str]]] = {
    "openai-completions": (
        "yiemagent.ai.providers.openai_completions",
        "stream_openai_completions",
    ),
    "anthropic-messages": (
        "yiemagent.ai.providers.anthropic_messages",
        "stream_anthropic_messages",
    ),
    "openai-responses": ("yiemagent.ai.providers.openai_responses", "stream_openai_responses"),
    "openai-text-calls": ("yiemagent.ai.providers.local_server", "stream_text_calls"),
    "openai-reply-schema": ("yiemagent.ai.providers.local", "stream_local_server"),
    "local": ("yiemagent.ai.providers.local", "stream_local"),
    "faux": ("yiemagent.ai.providers.faux", "stream_faux"),
    "fallback": ("yiemagent.ai.providers.fallback", "stream_fallback"),
}

_REGISTERED: dict[str, StreamFn] = {}


def register_api(api: str, stream_fn: StreamFn) -> None:
    """Make `yiemagent.ai.stream` send models with `model.api == api` to `stream_fn`
    (replaces a built-in or earlier registration)."""
    _REGISTERED[api] = stream_fn


def registered_apis() -> list[str]:
    """Every API name `stream` can dispatch on."""
    return sorted({*_BUILTIN, *_REGISTERED})


def get_stream_fn(api: str) -> StreamFn:
    """The stream function for `api`, importing its provider module on first use.

    Raises:
        ProviderError: unknown API, or its provider module cannot be imported (e.g. the SDK
            extra is not installed; the message says which).
    """
    fn = _REGISTERED.get(api)
    if fn is not None:
        return fn
    target = _BUILTIN.get(api)
    if target is None:
        raise ProviderError(
            f"unknown model api {api!r}; known: {', '.join(registered_apis())} "
            "(register others with yiemagent.ai.register_api)"
        )
    module_name, attr = target
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProviderError(f"the {api!r} provider could not be loaded: {exc}") from exc
    loaded: StreamFn = getattr(module, attr)
    _REGISTERED[api] = loaded
    return loaded
