"""The providers: one module per wire API, the embedded model, the scripted faux model and the
fallback chain (DESIGN §7). `yiemagent.ai.stream` reaches each through the registry by
`model.api`; users import them only for what they add to that:

- `openai_completions`: `stream_openai_completions` (OpenAI Chat Completions and compatible
  servers, over the `openai` SDK);
- `openai_responses`: `stream_openai_responses` (OpenAI's Responses API, the `openai` SDK);
- `local_server`: `stream_text_calls` (a local server whose model writes tool calls as text);
- `anthropic_messages`: `stream_anthropic_messages` (the `anthropic` SDK);
- `local`: the embedded model (`stream_local`, `LOCAL_MODELS`, `load_runtime`, …);
- `faux`: `FauxModel` and the scripted responses the tests queue;
- `fallback`: `FallbackModel` (also exported by `yiemagent.ai`).

What a front end checks before a run, so it can say what to do instead of failing at the
first call: `missing_sdk(model)` (the extra to install) and `missing_api_key(model)` (the
environment variable to set).

The modules starting with `_` are the SDK providers' plumbing, private: the SDK call with
its frame and API keys (`_sdk_call`), what an SDK failure means (`_sdk_failures`), the HTTP
transport (`_http_guard`). Importing this package imports none of
its modules, so no SDK and no model runtime is loaded before a call needs it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from yiemagent.ai.providers._sdk_call import SdkApi
    from yiemagent.types import Model

__all__ = [
    "anthropic_messages",
    "fallback",
    "faux",
    "local",
    "local_server",
    "missing_api_key",
    "missing_sdk",
    "openai_completions",
    "openai_responses",
]


def missing_sdk(model: Model) -> str | None:
    """The extra to install for `model` ("openai", "anthropic") when its API's SDK is not
    installed; None when it is, or the model needs none. Said before `missing_api_key`: a
    key alone would not help. Looks the SDK up without importing it."""
    import importlib.util

    api = _sdk_api(model)
    if api is None:
        return None
    if api.sdk in sys.modules:  # imported already, or blocked (None) as a missing one is
        return api.sdk if sys.modules[api.sdk] is None else None
    return api.sdk if importlib.util.find_spec(api.sdk) is None else None


def missing_api_key(model: Model) -> str | None:
    """The environment variable to set for `model`, when its API needs a key (OpenAI's or
    Anthropic's own API) and the environment has none; None when a key is there or none is
    needed (the embedded model, a compatible or local server, faux, a custom API). The key
    is looked for as a call looks for it, at the model's base URL: an Azure OpenAI URL's
    in `AZURE_OPENAI_API_KEY` first, the variable then named. Imports the model's provider
    module, not its SDK."""
    from yiemagent.ai.providers._sdk_call import get_env_api_key, key_variable

    api = _sdk_api(model)
    if api is None or not api.key_required(model):
        return None
    if get_env_api_key(model.provider, model.base_url):
        return None
    return key_variable(model, api.env_var)


def _sdk_api(model: Model) -> SdkApi[Any] | None:
    """The `SdkApi` of `model`'s API (OpenAI's two, Anthropic's), or None for another API."""
    from yiemagent.ai.providers import anthropic_messages, openai_completions, openai_responses

    apis = (openai_completions.CHAT_COMPLETIONS, openai_responses.RESPONSES,
            anthropic_messages.MESSAGES)  # fmt: skip
    return next((api for api in apis if api.name == model.api), None)
