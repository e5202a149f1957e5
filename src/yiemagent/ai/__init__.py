"""The provider layer (DESIGN §7): `Model`, `get_model`, the catalogue `MODELS` and
`calculate_cost` (a usage's price in USD), the assistant-message event stream,
`stream`/`complete`, which call any model by dispatching on `model.api`, and
`FallbackModel`, which tries several models in order on provider failures;
`is_context_overflow`, whether a call failed for a request longer than the model's window;
`register_api` / `get_stream_fn`, the registry of wire APIs (a recorder wraps the stream
function it finds there); `ProviderError` (a provider could not be set up; also in
`yiemagent.errors`). Every name of `yiemagent.types.model` (the provider contract:
`Model`, `Context`, `StreamOptions`, the event protocol and its stream) is public here too;
its list is kept there.

Public beside this list: the `providers` package (one module per wire API, the embedded
model, faux, fallback), `builder` (`MessageBuilder`, for writing a provider), `transform`
(`transform_messages`, the transcript repair every provider applies) and `openai_wire` (the
OpenAI Chat Completions format both ways, also behind `format_openai_messages`),
`attachments` (images and PDFs read into content blocks, docs/providers.md), and
`sanitize_surrogates` (a JSON-like value with its lone surrogates made U+FFFD, since UTF-8
cannot carry them; for the layers above that send text, not re-exported by `yiemagent`).
The frame's registry of wire APIs (`_registry`) and retry policy (`_retry`) are private,
used through the names above, like every module starting with `_`. `models` (the model catalogue:
`MODELS`, `DEFAULT_MODEL`, `ToolCallMode`, `get_model`) stays public: the embedded-model
provider and the CLI import from it names this list does not carry. Provider modules
(and their SDKs: `openai`, `anthropic`, `xllamacpp`) are imported on the first call that
needs them, never by `import yiemagent.ai`.
"""

from __future__ import annotations

import inspect

from yiemagent.ai._overflow import is_context_overflow
from yiemagent.ai._registry import get_stream_fn, register_api
from yiemagent.ai._sanitize import sanitize_surrogates
from yiemagent.ai.models import MODELS, calculate_cost, get_model
from yiemagent.ai.providers.fallback import FallbackModel
from yiemagent.errors import ProviderError
from yiemagent.types import model as _model
from yiemagent.types.messages import AssistantMessage
from yiemagent.types.model import *  # noqa: F403 (the provider contract, re-exported whole)
from yiemagent.types.model import AssistantMessageEventStream, Context, Model, StreamOptions

__all__ = [
    *_model.__all__,
    "MODELS",
    "FallbackModel",
    "ProviderError",
    "calculate_cost",
    "complete",
    "get_model",
    "get_stream_fn",
    "is_context_overflow",
    "register_api",
    "sanitize_surrogates",
    "stream",
]


def stream(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessageEventStream:
    """Call `model` on `context`; returns at once with the stream of its answer.

    Args:
        model: Its `api` picks the provider ("openai-completions", "anthropic-messages",
            "local", "faux", or one added with `register_api`).
        context: System prompt, messages (after `convert_to_llm`) and tools.
        options: API key, temperature, max tokens, abort signal, … (`StreamOptions`).

    Returns:
        The provider's `AssistantMessageEventStream` (its events end with `done` or
        `error`, never raises while streaming).

    Raises:
        ProviderError: unknown `model.api`, or its provider cannot be loaded.
    """
    result = get_stream_fn(model.api)(model, context, options)
    if inspect.isawaitable(result):
        raise TypeError(
            f"the stream function for api {model.api!r} returned an awaitable; "
            "yiemagent.ai.stream needs one that returns the stream at once"
        )
    return result


async def complete(
    model: Model, context: Context, options: StreamOptions | None = None
) -> AssistantMessage:
    """Call `model` and wait for the final `AssistantMessage` (its stop reason says whether it
    failed: "error"/"aborted" with `error_message`).

    Raises:
        ProviderError: as `stream`.
    """
    return await stream(model, context, options).result()
