"""`local_model`: a model driven by the embedded provider's pipeline with a chosen policy
and tool format (DESIGN §20). A plain `Model` gets the defaults (`policy_of`,
`tool_format_of`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Final, Literal

from yiemagent.ai.models import ToolCallMode, get_model
from yiemagent.ai.providers.local.rules import DEFAULT_POLICY, LocalPolicy
from yiemagent.ai.providers.local.weights import local_spec
from yiemagent.errors import ProviderError
from yiemagent.types.model import Model

__all__ = [
    "TOOL_FORMATS",
    "TOOL_FORMAT_ENV",
    "LocalModel",
    "ToolFormat",
    "local_model",
    "policy_of",
    "tool_format_of",
]

ToolFormat = Literal["json", "native"]
"""How the model writes tool calls: "json", a reply constrained to one call, a list of
calls or the answer object; "native", the model's own chat-template format (Qwen's
`<tool_call>` blocks, their JSON held to the tools' schemas, free text free)."""
TOOL_FORMATS: Final = ("json", "native")
TOOL_FORMAT_ENV: Final = "YIEMAGENT_LOCAL_TOOL_FORMAT"
"""Names the tool format of a model that does not choose one (`yiem run`, `yiem chat`,
the benches); unset or empty: "json"."""


@dataclass(slots=True, frozen=True)
class LocalModel(Model):
    """A `Model` with the embedded provider's policy and tool format."""

    policy: LocalPolicy | None = None
    """The rules it runs; None: the model's default (`policy_of`)."""
    tool_format: ToolFormat = "json"


def local_model(
    name: str = "local/qwen2.5-coder-0.5b",
    *,
    policy: LocalPolicy | None = None,
    without: tuple[str, ...] = (),
    tool_format: ToolFormat = "json",
    base_url: str | None = None,
    tool_calls: ToolCallMode | None = None,
) -> LocalModel:
    """The model `name` (`get_model`) driven with `policy` and `tool_format`.

    Args:
        name: An embedded model ("local/qwen2.5-coder-0.5b"), or a server's with
            `tool_calls="schema"` ("openai-compatible/<id>" with `base_url`).
        policy: The rules to run (None: the model's default, `policy_of`;
            `LocalPolicy(())`: plain constrained decoding).
        without: Names of rules of the policy switched off (`LocalPolicy.without`).
        tool_format: "json" (the reply schema) or "native" (the model's own
            `<tool_call>` blocks, held to the tools' schemas by a grammar).
        base_url, tool_calls: As for `get_model`.

    Raises:
        ProviderError: an unknown model or rule name, a model the embedded provider does
            not drive, or an unknown `tool_format`.
    """
    model = get_model(name, base_url=base_url, tool_calls=tool_calls)
    if model.api not in ("local", "openai-reply-schema"):
        raise ProviderError(
            f"{name!r} is not driven by the embedded provider: use an embedded model or "
            'a server with tool_calls="schema"'
        )
    if tool_format not in TOOL_FORMATS:
        raise ProviderError(
            f"tool_format must be one of {', '.join(TOOL_FORMATS)}, not {tool_format!r}"
        )
    chosen = (policy or _default_policy(model)).without(*without) if without else policy
    same = {f.name: getattr(model, f.name) for f in fields(Model)}
    return LocalModel(**same, policy=chosen, tool_format=tool_format)


def policy_of(model: Model) -> LocalPolicy:
    """The policy `model` is driven with: its own, else its default: `DEFAULT_POLICY`
    without the rules an embedded model's spec turns off (`LocalModelSpec.rules_off`)."""
    if isinstance(model, LocalModel) and model.policy is not None:
        return model.policy
    return _default_policy(model)


def _default_policy(model: Model) -> LocalPolicy:
    if model.api != "local":
        return DEFAULT_POLICY
    off = local_spec(model.id).rules_off
    return DEFAULT_POLICY.without(*off) if off else DEFAULT_POLICY


def tool_format_of(model: Model) -> ToolFormat:
    """The tool format `model` is driven with: a `LocalModel`'s own, else
    `$YIEMAGENT_LOCAL_TOOL_FORMAT`, else "json".

    Raises:
        ProviderError: the variable names no format.
    """
    if isinstance(model, LocalModel):
        return model.tool_format
    raw = os.environ.get(TOOL_FORMAT_ENV, "").strip() or "json"
    if raw == "native":
        return "native"
    if raw != "json":
        raise ProviderError(
            f"${TOOL_FORMAT_ENV} must be one of {', '.join(TOOL_FORMATS)}, not {raw!r}"
        )
    return "json"
