"""The embedded model: llama.cpp in-process (`xllamacpp`) running a GGUF file assembled from
PyPI chunk packages and checked against a pinned SHA-256 (DESIGN §7, docs/local-model.md).

`stream_local` is the provider for `api="local"` models, `stream_local_server` the same
pipeline for a model a llama.cpp-compatible server serves (`api="openai-reply-schema"`);
`LOCAL_MODELS` lists the embedded models; `local_model` drives one with a chosen
`LocalPolicy` (the rules, `rules`) and tool format; `load_runtime` loads one ahead of time (the CLI
does, to show progress). Importing this package does not import `xllamacpp`; the first call
does.
"""

from __future__ import annotations

from yiemagent.ai.providers.local.model import (
    TOOL_FORMAT_ENV,
    LocalModel,
    ToolFormat,
    local_model,
)
from yiemagent.ai.providers.local.provider import stream_local, stream_local_server
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, LocalPolicy
from yiemagent.ai.providers.local.runtime import (
    LocalRuntime,
    get_runtime,
    load_runtime,
    loaded_runtime,
)
from yiemagent.ai.providers.local.weights import (
    DEFAULT_LOCAL_MODEL,
    LOCAL_MODELS,
    LocalModelSpec,
    ensure_model_file,
    is_installed,
    local_spec,
)

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "DEFAULT_POLICY",
    "LOCAL_MODELS",
    "TOOL_FORMAT_ENV",
    "LocalModel",
    "LocalModelSpec",
    "LocalPolicy",
    "LocalRuntime",
    "ToolFormat",
    "ensure_model_file",
    "get_runtime",
    "is_installed",
    "load_runtime",
    "loaded_runtime",
    "local_model",
    "local_spec",
    "stream_local",
    "stream_local_server",
]
