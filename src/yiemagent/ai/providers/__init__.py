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

The modules starting with `_` are the SDK providers' plumbing, private: the SDK call with
its frame and API keys (`_sdk_call`), what an SDK failure means (`_sdk_failures`), the HTTP
transport (`_http_guard`). Importing this package imports none of
its modules, so no SDK and no model runtime is loaded before a call needs it.
"""

from __future__ import annotations

__all__ = [
    "anthropic_messages",
    "fallback",
    "faux",
    "local",
    "local_server",
    "openai_completions",
    "openai_responses",
]
