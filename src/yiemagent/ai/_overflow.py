"""Whether a model call failed because its request was longer than the model's context
window: the providers say so only in words, each its own ("prompt is too long" from
Anthropic, or "input length and `max_tokens` exceed context limit" when the prompt leaves
less room than `max_tokens`; "maximum context length is N tokens" from OpenAI and the
servers that copy it; "exceeds the available context size" from llama.cpp's server), so
the error text is matched against the wordings the APIs are known to use, as pi's
`isContextOverflow` does.
"""

from __future__ import annotations

import re

from yiemagent.types.messages import AssistantMessage

__all__ = ["is_context_overflow"]

_OVERFLOW = re.compile(
    "|".join(
        (
            r"prompt is too long",  # Anthropic
            r"input length and .max_tokens. exceed context limit",  # Anthropic, with max_tokens
            r"exceeded max context length",  # Ollama
            r"is too long to fit into the model",  # vLLM
            r"(?<!encoder )prompt \(length \d+\) is longer than the maximum model length",  # vLLM
            r"is longer than the model'?s context length",  # Together AI
            r"maximum context length",  # OpenAI, vLLM, OpenRouter
            r"context[_ ]length[_ ]exceeded",  # OpenAI's error code
            r"exceeds? the (?:available )?context (?:size|window)",  # llama.cpp, OpenAI
            r"maximum prompt length is \d+",  # xAI
            r"input is too long for (?:the )?requested model",  # Amazon Bedrock
            r"input token count.{0,40}exceeds the maximum",  # Google
            r"reduce the length of the messages",  # Groq
            r"greater than the context length",  # LM Studio
        )
    ),
    re.IGNORECASE,
)


def is_context_overflow(message: AssistantMessage) -> bool:
    """Whether `message` ended in error because the request did not fit the model's context
    window (its `error_message` uses a wording the APIs use for that). An answer cut off by
    its output limit (stop reason "length") is not one: it was answered."""
    return message.stop_reason == "error" and bool(_OVERFLOW.search(message.error_message or ""))
