"""API keys from the environment, and scrubbing them out of any text (DESIGN §8).

A key is looked up per call (`StreamOptions.api_key` first, then the provider's
environment variable). Keys never appear in events, logs or error texts:
every error message a provider builds goes through `scrub`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

__all__ = ["ENV_KEYS", "NO_KEY", "get_env_api_key", "resolve_api_key", "scrub"]

ENV_KEYS: Mapping[str, tuple[str, ...]] = {
    "openai": ("OPENAI_API_KEY",),
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openrouter": ("OPENROUTER_API_KEY",),
    "groq": ("GROQ_API_KEY",),
    "mistral": ("MISTRAL_API_KEY",),
    "deepseek": ("DEEPSEEK_API_KEY",),
    "xai": ("XAI_API_KEY",),
    "together": ("TOGETHER_API_KEY",),
    "fireworks": ("FIREWORKS_API_KEY",),
    "cerebras": ("CEREBRAS_API_KEY",),
    "google": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "ollama": ("OLLAMA_API_KEY",),
    "vllm": ("VLLM_API_KEY",),
    "llamacpp": ("LLAMACPP_API_KEY",),
}
"""Provider name → environment variables tried in order."""

NO_KEY = "no-key"
"""Placeholder sent to servers that need no key (local llama.cpp, vLLM, Ollama): the SDKs
refuse to build a client without one."""

# Shapes of common secrets, scrubbed even when we do not know the exact key (a key the
# server echoes back, a key in a base URL's query).
_SECRET_PATTERNS = re.compile(
    r"(sk-[A-Za-z0-9_\-]{8,}|sk-ant-[A-Za-z0-9_\-]{8,}|(?<=Bearer )[A-Za-z0-9._\-]{8,}"
    r"|(?<=[?&]key=)[^&\s]+|(?<=[?&]api_key=)[^&\s]+)"
)


def get_env_api_key(provider: str) -> str | None:
    """The API key for `provider` from its environment variable(s), or None.

    Unknown providers are tried as `<PROVIDER>_API_KEY` (upper case, `-` → `_`).
    """
    names = ENV_KEYS.get(provider) or (provider.upper().replace("-", "_") + "_API_KEY",)
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def resolve_api_key(provider: str, explicit: str | None) -> str | None:
    """`explicit` when given and non-empty, else the environment's key, else None."""
    return explicit or get_env_api_key(provider)


def scrub(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with every given secret and anything shaped like an API key replaced by `***`.

    Args:
        text: Any text that may leave the provider (error messages, log lines).
        secrets: The exact keys in use; values shorter than 4 characters or None are ignored
            (a placeholder such as "x" would otherwise garble the text).
    """
    for secret in secrets:
        if secret and len(secret) >= 4 and secret != NO_KEY:
            text = text.replace(secret, "***")
    return _SECRET_PATTERNS.sub("***", text)
