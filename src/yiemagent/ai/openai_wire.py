"""The OpenAI Chat Completions wire format, both ways (DESIGN §7): messages, tools, usage and
finish reasons. The `openai-completions` provider builds its requests with it, the embedded
model reads its runtime's usage with it, and the Agent's `llm_call` path formats its context
(`format_openai_messages`) and reads the answer with it, so every one of them sends and reads
the same dicts.

To the wire: `messages_to_openai` (the transcript, system prompt first), `openai_tool`.
From the wire: `user_message_from_openai`, `usage_from_openai`, `FINISH_REASONS`.

The shape is the one every compatible server accepts: `content` is a string unless a user
message carries images (then a list of `text` and `image_url` parts); an assistant message's
text blocks are joined by a newline (`content` None when it only calls tools) and one with
neither text nor calls is left out; a tool result whose text is blank says "(error)", "(see
attached image)" or "(no output)"; the images of tool results follow, after the last result
of the batch (nothing may come between an assistant message and its tool messages), as a user
message "Images returned by the tool call {id}:" (the id tells apart two calls of one tool).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from yiemagent.ai._sanitize import image_base64
from yiemagent.ai.attachments import (
    attachment_stand_in,
    document_from_base64,
    image_from_base64,
    image_type_stand_in,
)
from yiemagent.errors import MessageInputError
from yiemagent.types.messages import (
    AssistantMessage,
    DocumentContent,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from yiemagent.ai.builder import DoneReason
    from yiemagent.types.model import Model, StreamOptions
    from yiemagent.types.tools import AgentTool

__all__ = [
    "EXTRA_CONTENT",
    "FINISH_REASONS",
    "MAX_CACHE_KEY_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "REASONING_FIELDS",
    "fold_root_choices",
    "function_fields",
    "function_parameters",
    "inline_root_ref",
    "is_mistral",
    "is_openai_proper",
    "messages_to_openai",
    "openai_only_fields",
    "openai_tool",
    "signature_object",
    "strict_schema_allowed",
    "usage_from_openai",
    "user_message_from_openai",
]

REASONING_FIELDS: Final = ("reasoning_content", "reasoning", "reasoning_text")
"""The fields compatible servers put thinking in; a model's own thinking goes back in the same
one (its name is the thinking block's signature)."""

FINISH_REASONS: Final[Mapping[str, DoneReason]] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "toolUse",
    "function_call": "toolUse",
    # Spellings of compatible servers and proxies (compared in lower case).
    "tool_call": "toolUse",
    "tool_use": "toolUse",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "eos": "stop",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "model_length": "length",  # Mistral: the context window is full
}
"""A `finish_reason` (lower case) → the stop reason of a message that ended normally;
"content_filter", "error" and their kin end it as a failure, which the reader says in its
own words."""


def is_openai_proper(model: Model) -> bool:
    """Whether `model` is OpenAI's own (provider "openai", also behind a proxy base URL)
    rather than a compatible server."""
    return model.provider == "openai"


def openai_only_fields(model: Model, options: StreamOptions) -> dict[str, Any]:
    """The request fields only OpenAI itself takes, the same in Chat Completions and the
    Responses API: `prompt_cache_key` (the session id, hashed when longer than OpenAI takes;
    none with `cache_retention="none"`),
    `prompt_cache_retention="24h"` (`cache_retention="long"`) and `metadata` (as strings;
    Chat Completions leaves it out, as OpenAI takes it there only for a stored completion).
    Empty for any other server."""
    if not is_openai_proper(model):
        return {}
    fields: dict[str, Any] = {}
    if options.cache_retention != "none":
        if options.session_id:
            fields["prompt_cache_key"] = _cache_key(options.session_id)
        if options.cache_retention == "long":
            fields["prompt_cache_retention"] = "24h"
    if options.metadata:
        fields["metadata"] = {str(k): str(v) for k, v in options.metadata.items()}
    return fields


MAX_CACHE_KEY_CHARS: Final = 64
"""The longest `prompt_cache_key` OpenAI takes; a longer one refuses the whole request (HTTP
400 "string_above_max_length")."""


def _cache_key(session_id: str) -> str:
    """The `prompt_cache_key` of a session: its id, or, when longer than
    `MAX_CACHE_KEY_CHARS`, the id's SHA-256 in hex (64 characters, the same for every request
    of the session, and apart from any other session's)."""
    if len(session_id) <= MAX_CACHE_KEY_CHARS:
        return session_id
    return hashlib.sha256(session_id.encode(errors="replace")).hexdigest()


def is_mistral(model: Model) -> bool:
    """Whether `model` is served by Mistral's API (its own rules for ids and tool messages)."""
    return model.provider == "mistral" or "mistral.ai" in (model.base_url or "")


def _tool_call(call: ToolCall, same_model: bool) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(
                call.arguments if isinstance(call.arguments, dict) else {}, ensure_ascii=False
            ),
        },
    }
    signature = call.thought_signature
    held = signature_object(signature)
    if same_model and signature and held is None:
        # Gemini refuses its call back without it
        wire[EXTRA_CONTENT] = {"google": {"thought_signature": signature}}
    elif same_model and held is not None and isinstance(held.get(EXTRA_CONTENT), dict):
        wire[EXTRA_CONTENT] = held[EXTRA_CONTENT]  # Vertex AI's, under its own name
    return wire


EXTRA_CONTENT = "extra_content"
"""A call's field for a provider's own data (Gemini's thought signature); a call's
signature that is a JSON object with this key goes back as the call's field."""


def signature_object(signature: str | None) -> dict[str, Any] | None:
    """The JSON object a signature holds (an OpenRouter `reasoning_details` entry on a call,
    a Responses reasoning item on a thinking block), else None: Gemini's own signatures
    are base64, a thinking block's may name a field (`reasoning_content`)."""
    if not signature or not signature.startswith("{"):
        return None
    try:
        value = json.loads(signature)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _needs_reasoning_content(model: Model) -> bool:
    """Whether `model`'s API refuses an assistant message without `reasoning_content`:
    DeepSeek's in thinking mode (a reasoner, or reasoning on), and Moonshot's, whose Kimi
    models think by default."""
    url = model.base_url or ""
    deepseek = model.provider == "deepseek" or "deepseek.com" in url
    if deepseek:
        return model.reasoning or "reasoner" in model.id
    return model.provider in ("moonshot", "moonshotai") or "moonshot." in url


# ── to the wire ─────────────────────────────────────────────────────────────


def messages_to_openai(
    messages: Sequence[Message], *, system_prompt: str = "", model: Model | None = None
) -> list[dict[str, Any]]:
    """The Chat Completions `messages` for a transcript (already repaired for the model, see
    `transform_messages`), the system prompt first.

    Args:
        messages: User, assistant and tool-result messages; others are left out.
        system_prompt: Sent first when not empty.
        model: The model the request goes to, for what depends on it: OpenAI's reasoning
            models take the system prompt as a `developer` message; a model without image
            input gets a note in place of each image; Mistral wants the tool's name on a tool
            message, an assistant message between tool results and a user message, and
            an assistant's text apart from its calls; DeepSeek
            thinking and Kimi want `reasoning_content` on every assistant message; a model's own
            thinking goes back in its reasoning field (Claude's through LiteLLM also as its
            signed `thinking_blocks`), and Gemini's thought signatures with their calls (in
            `reasoning_details` through OpenRouter). None: the plain
            format (`system` role, images sent, no thinking).

    Returns:
        The message dicts, ready for the request body.
    """
    out: list[dict[str, Any]] = []
    if system_prompt:
        developer = model is not None and is_openai_proper(model) and model.reasoning
        out.append({"role": "developer" if developer else "system", "content": system_prompt})
    images_ok = model is None or "image" in model.input
    pdfs_ok = model is None or "pdf" in model.input
    held: list[dict[str, Any]] = []  # image messages of tool results, after all the results
    for message in messages:
        if isinstance(message, ToolResultMessage):
            tool_message, *images = _tool_result(message, model, images_ok)
            out.append(tool_message)
            held.extend(images)
            continue
        out.extend(held)
        held.clear()
        if isinstance(message, UserMessage):
            typed = model is not None and is_openai_proper(model)
            content = _user_content(message.content, images_ok, pdfs_ok, typed=typed)
            out.append({"role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            out.extend(_assistant(message, model))
    out.extend(held)
    if model is not None and is_mistral(model):
        out = _bridge_tool_results(_text_apart_from_calls(out))
    return out


def _text_apart_from_calls(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`out` with each assistant message that has both text and calls sent as two, the text
    and then the calls: Mistral refuses the pair for its models of tokenizer v3 ("Assistant
    message must have either content or tool_calls, but not both."), and takes an assistant
    message after another."""
    apart: list[dict[str, Any]] = []
    for message in out:
        if message["role"] == "assistant" and message.get("content") and message.get("tool_calls"):
            apart.append({"role": "assistant", "content": message["content"]})
            message = {**message, "content": None}
        apart.append(message)
    return apart


_MISTRAL_BRIDGE: Final = "I have the tool results."
"""What the assistant says between tool results and a user message, for Mistral."""


def _bridge_tool_results(out: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`out` with an assistant message wherever a user message follows a tool message:
    Mistral refuses "Unexpected role 'user' after role 'tool'" (a steering message, a prompt
    after a run that ended on its tool results, and a tool's images all come so)."""
    bridged: list[dict[str, Any]] = []
    for message in out:
        if message["role"] == "user" and bridged and bridged[-1]["role"] == "tool":
            bridged.append({"role": "assistant", "content": _MISTRAL_BRIDGE})
        bridged.append(message)
    return bridged


def _tool_result(
    message: ToolResultMessage, model: Model | None, images_ok: bool
) -> list[dict[str, Any]]:
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent))
    images = [b for b in message.content if isinstance(b, ImageContent)]
    if images and not images_ok:
        notes = "\n".join(attachment_stand_in(image) for image in images)
        text = (text + "\n" if text.strip() else "") + notes
    if not text.strip():  # servers reject blank content: a placeholder keeps the pair
        text = "(error)" if message.is_error else "(see attached image)" if images else ""
    tool_message: dict[str, Any] = {
        "role": "tool",
        "tool_call_id": message.tool_call_id,
        "content": text or "(no output)",
    }
    if model is not None and is_mistral(model):
        tool_message["name"] = message.tool_name
    if not (images and images_ok):
        return [tool_message]
    # Tool messages cannot carry images: they follow in a user message.
    note = TextContent(f"Images returned by the tool call {message.tool_call_id}:")
    typed = model is not None and is_openai_proper(model)
    content = _user_content([note, *images], True, typed=typed)
    return [tool_message, {"role": "user", "content": content}]


def _user_content(
    blocks: Sequence[TextContent | ImageContent | DocumentContent],
    images_ok: bool,
    pdfs_ok: bool = False,
    *,
    typed: bool = False,
) -> str | list[dict[str, Any]]:
    """Text, `image_url` parts (base64 data URLs) and `file` parts (a PDF as a data URL);
    a model that cannot read one gets its text stand-in, and with `typed` (OpenAI's own
    API) so does an image of a type outside `API_IMAGE_TYPES`."""
    if all(isinstance(b, TextContent) for b in blocks):
        return "\n".join(b.text for b in blocks if isinstance(b, TextContent))
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "text": block.text})
        elif isinstance(block, ImageContent) and images_ok:
            data, mime_type = image_base64(block.data, block.mime_type)
            stand_in = image_type_stand_in(mime_type, "the OpenAI API") if typed else None
            if stand_in is not None:
                parts.append({"type": "text", "text": stand_in})
                continue
            url = f"data:{mime_type};base64,{data}"
            parts.append({"type": "image_url", "image_url": {"url": url}})
        elif isinstance(block, DocumentContent) and pdfs_ok:
            file = {
                "filename": block.name or "document.pdf",
                "file_data": f"data:{block.mime_type};base64,{block.data}",
            }
            parts.append({"type": "file", "file": file})
        else:
            parts.append({"type": "text", "text": attachment_stand_in(block)})
    return parts


def _assistant(message: AssistantMessage, model: Model | None) -> list[dict[str, Any]]:
    # Blocks apart (text around a call, another model's thinking turned into text) are
    # joined by a newline so that their words do not run together.
    text = "\n".join(b.text for b in message.content if isinstance(b, TextContent) and b.text)
    out: dict[str, Any] = {"role": "assistant", "content": text if text.strip() else None}
    same_model = (
        model is not None and message.provider == model.provider and message.model == model.id
    )
    thinking = [b for b in message.content if isinstance(b, ThinkingContent) and not b.redacted]
    if same_model and thinking:
        field_name = thinking[0].signature
        if field_name in REASONING_FIELDS:
            out[field_name] = "\n".join(b.thinking for b in thinking)
    blocks = _thinking_blocks(message) if same_model else []
    if blocks:  # LiteLLM: Claude's thinking, signed, which its next turn must start with
        out["thinking_blocks"] = blocks
    if model is not None and _needs_reasoning_content(model):
        # DeepSeek in thinking mode and Kimi refuse an assistant message without the field
        # ("Missing `reasoning_content` field", "thinking is enabled but reasoning_content is
        # missing"); one another model wrote, or one without thinking, has none.
        out.setdefault("reasoning_content", "")
    calls = [b for b in message.content if isinstance(b, ToolCall)]
    if calls:
        out["tool_calls"] = [_tool_call(call, same_model) for call in calls]
    details = _reasoning_details(message) if same_model else []
    if details:  # OpenRouter: Claude's signed thinking, Gemini's calls' signatures
        out["reasoning_details"] = details
    if out["content"] is None and not calls:
        return []  # providers reject an assistant message with neither
    return [out]


def _reasoning_details(message: AssistantMessage) -> list[dict[str, Any]]:
    """OpenRouter's `reasoning_details` entries of `message` again, in the order its blocks
    came (OpenRouter refuses a sequence that differs from the one the model wrote): a
    signed thinking block's `reasoning.text` entry with its text, a summary's
    `reasoning.summary` entry with its text, a redacted block's
    encrypted entry, and a call's encrypted entry (Gemini's thought signature) naming the
    call by the id it goes with (repaired ids included). A thinking block whose signature
    never arrived (a stream cut off) has none."""
    out: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, ThinkingContent):
            entry = signature_object(block.signature)
            kind = entry.get("type") if entry is not None else None
            if entry is not None and kind == "reasoning.text" and not block.redacted:
                out.append({**entry, "text": block.thinking})
            elif entry is not None and kind == "reasoning.summary" and not block.redacted:
                out.append({**entry, "summary": block.thinking})
            elif entry is not None and kind == "reasoning.encrypted" and block.redacted:
                out.append(entry)
        elif isinstance(block, ToolCall):
            entry = signature_object(block.thought_signature)
            if entry is not None and EXTRA_CONTENT not in entry:
                out.append({**entry, "id": block.id} if "id" in entry else entry)
    return out


def _thinking_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    """The thinking blocks of `message` that came as entries of `thinking_blocks` (their
    signature is the entry as JSON, see `providers.openai_completions`), as those entries
    again, in order: a thinking one with its text and signature, a redacted one with its
    data. A block whose signature never arrived (a stream cut off) is not one of them."""
    out: list[dict[str, Any]] = []
    for block in message.content:
        if not isinstance(block, ThinkingContent):
            continue
        entry = signature_object(block.signature)
        if entry is None:
            continue
        if entry.get("type") == "thinking" and not block.redacted:
            signature = entry.get("signature")
            out.append({"type": "thinking", "thinking": block.thinking, "signature": signature})
        elif entry.get("type") == "redacted_thinking" and block.redacted:
            out.append({"type": "redacted_thinking", "data": entry.get("data")})
    return out


MAX_DESCRIPTION_CHARS: Final = 1024
"""The longest function description OpenAI takes: a longer one refuses the whole request
("string_above_max_length"). Parameter descriptions have no such limit."""

_CONTINUED = "… (the whole description is the parameters')"


def openai_tool(tool: AgentTool) -> dict[str, Any]:
    """`tool` as a Chat Completions function tool: `{"type": "function", "function": {"name",
    "description", "parameters"}}` (`function_fields`)."""
    return {"type": "function", "function": function_fields(tool)}


def function_fields(tool: AgentTool) -> dict[str, Any]:
    """`tool`'s `name`, `description` and `parameters` (`function_parameters`) as both OpenAI
    wire formats take them. A description longer than `MAX_DESCRIPTION_CHARS` is cut to
    fit, at a space, saying so, and goes whole at the head of the parameters' own
    description, where the model still reads all of it."""
    parameters, note = _parameters_and_note(tool.input_schema)
    description = f"{tool.description}\n\n{note}" if note else tool.description
    if len(description) > MAX_DESCRIPTION_CHARS:
        head = description[: MAX_DESCRIPTION_CHARS - len(_CONTINUED)]
        head = head.rsplit(None, 1)[0] if " " in head.strip() else head
        own = parameters.get("description")
        whole = f"{description}\n\n{own}" if isinstance(own, str) and own else description
        parameters = {**parameters, "description": whole}
        description = head.rstrip() + _CONTINUED
    return {"name": tool.name, "description": description, "parameters": parameters}


def function_parameters(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool's input schema as OpenAI takes a function's `parameters` (`function_fields`
    adds the note of `fold_root_choices` to the description)."""
    return _parameters_and_note(schema)[0]


def _parameters_and_note(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """`function_parameters`, and the note of `fold_root_choices` ("" when none).

    A schema that is a `$ref` into itself (pydantic's and MCP servers' way to name a whole
    model once) becomes the definition it names (`inline_root_ref`), and one with `anyOf`,
    `oneOf` or `allOf` at its root (a pydantic union as the parameters, an MCP server's
    "give `route` or `file`") gets its branches' properties at the root
    (`fold_root_choices`): the API reads no properties through either. A schema with no
    `properties` (`{"type": "object"}`, how MCP servers list a tool without parameters, or
    `{}`) gets empty ones and the object type, which OpenAI requires ("object schema
    missing properties" refuses the whole request), and one with properties but no `type`
    gets the object type ("schema must be a JSON Schema of 'type: \"object\"'", as OpenAI
    refuses it). Others are returned as they are."""
    schema, note = fold_root_choices(schema)
    if schema.get("type", "object") != "object":
        return schema, note
    if "properties" in schema:
        return (schema if "type" in schema else {"type": "object", **schema}), note
    return {**schema, "type": "object", "properties": {}}, note


_COMBINATORS: Final = ("anyOf", "oneOf", "allOf")


def fold_root_choices(schema: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    """A tool's input schema with an object root that names every parameter, and a note for
    the tool's description.

    OpenAI and Anthropic take a function's parameters as an object: through `anyOf`, `oneOf`
    or `allOf` at the root the model sees none (OpenAI), or the API refuses the request
    ("input_schema does not support oneOf, allOf, or anyOf at the top level"). The
    branches' properties join the root's (a name several branches give with different
    schemas takes `anyOf` of them: a discriminator takes each branch's value); a name every
    `anyOf`/`oneOf` branch requires, and an `allOf` branch's required names, join its
    `required`; the choice between branches is said in the note. The arguments are still
    checked against the tool's own schema before it runs, so a call that breaks the
    choice gets the usual error result. A root `$ref` is inlined first (`inline_root_ref`).

    Returns:
        The schema to send (`schema` itself when its root has no such keyword), and the
        note ("" when nothing was folded).
    """
    schema = inline_root_ref(schema)
    if not any(keyword in schema for keyword in _COMBINATORS):
        return schema, ""
    out = dict(schema) if "type" in schema else {"type": "object", **schema}
    folded = {k: out.pop(k) for k in _COMBINATORS if k in out}
    out.pop("discriminator", None)  # OpenAPI's key to the `oneOf` it names
    properties = dict(out.get("properties") or {})
    own = set(properties)
    required = [n for n in out.get("required") or [] if isinstance(n, str)]
    notes: list[str] = []
    for keyword, listed in folded.items():
        items = listed if isinstance(listed, list) else []
        branches = [b for b in (_local_ref(b, schema) for b in items) if isinstance(b, Mapping)]
        choices: list[str] = []
        needed_by_all: list[str] | None = None
        for branch in branches:
            given = branch.get("properties")
            for name, sub in (given if isinstance(given, Mapping) else {}).items():
                if name not in own:
                    properties[name] = _either(properties.get(name), sub)
            needed = [n for n in branch.get("required") or [] if isinstance(n, str)]
            if keyword == "allOf":
                required += [n for n in needed if n not in required]
                continue
            first = needed if needed_by_all is None else needed_by_all
            needed_by_all = [n for n in first if n in needed]
            if needed:
                choices.append(" and ".join(needed))
        if needed_by_all and len(branches) == len(items):
            required += [n for n in needed_by_all if n not in required]
        if choices:
            how_many = "Exactly one" if keyword == "oneOf" else "At least one"
            notes.append(f"{how_many} of these must be given: {'; or '.join(choices)}.")
    out["properties"] = properties
    if required:
        out["required"] = required
    return out, " ".join(notes)


def _either(known: Any, other: Any) -> Any:
    """The schema of a property two branches give: `other` when it is the first or the
    same, else `anyOf` of the different ones."""
    if known is None or known == other:
        return other
    variants = known["anyOf"] if isinstance(known, Mapping) and set(known) == {"anyOf"} else [known]
    return known if other in variants else {"anyOf": [*variants, other]}


def _local_ref(branch: Any, root: Mapping[str, Any]) -> Any:
    """`branch`, or the definition its local `$ref` (`#/$defs/X`) names."""
    ref = branch.get("$ref") if isinstance(branch, Mapping) else None
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return branch
    target: Any = root
    for part in ref[2:].split("/"):
        target = target.get(part) if isinstance(target, Mapping) else None
    return target if isinstance(target, Mapping) else branch


def inline_root_ref(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """`schema` with a root `$ref` into itself (`{"$ref": "#/$defs/M", "$defs": {...}}`)
    replaced by the definition it names, the other keys (`$defs`, for the refs inside it)
    kept; `schema` itself when its root has no such `$ref`, or it names nothing or another
    `$ref`."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    target: Any = schema
    for part in ref[2:].split("/"):
        target = (
            target.get(part.replace("~1", "/").replace("~0", "~"))
            if isinstance(target, Mapping)
            else None
        )
    if not isinstance(target, Mapping) or "$ref" in target:
        return schema
    return {**{k: v for k, v in schema.items() if k != "$ref"}, **target}


# ── from the wire ───────────────────────────────────────────────────────────


_STRICT_KEYWORDS: Final = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "anyOf", "$ref", "$defs", "definitions", "description", "title", "pattern", "format",
        "multipleOf", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
        "minItems", "maxItems",
    }
)  # fmt: skip
"""The JSON Schema keywords OpenAI's Structured Outputs take with `strict: true`."""

_STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)


_STRICT_MAX_DEPTH: Final = 10
"""Levels of objects, the root the first, a strict schema may nest."""
_STRICT_MAX_PROPERTIES: Final = 5000
"""Object properties a strict schema may have in all."""
_STRICT_MAX_CHARS: Final = 120_000
"""Characters of its property names, definition names, enum and const values in all."""
_STRICT_MAX_ENUM_VALUES: Final = 1000
"""Enum values over all its enums."""
_STRICT_LONG_ENUM: Final = (250, 15_000)
"""A string enum of more values than the first may hold the second in characters at most."""


def strict_schema_allowed(schema: Mapping[str, Any]) -> bool:
    """Whether OpenAI takes `schema` (an output's JSON Schema) with `strict: true`, which
    makes the model's answer follow it exactly: the root is an object, every object lists
    all its properties in `required` and sets `additionalProperties: false`, only the
    keywords (and string formats) Structured Outputs supports appear, and the schema is
    within its documented sizes (the `_STRICT_MAX_*` values: nesting depth, properties,
    characters of names and values, enum values). A schema outside that subset is sent
    without `strict` (OpenAI would refuse the request), its answer checked on arrival as
    before."""
    return (
        schema.get("type") == "object"
        and _strict_node(schema)
        and _StrictSize.of(schema).within_limits()
    )


class _StrictSize:
    """What Structured Outputs' size limits count in a schema of the strict subset (each
    `$defs` entry counted once where it is defined: a `$ref` is not followed, as recursive
    schemas are allowed)."""

    def __init__(self) -> None:
        self.depth = self.properties = self.chars = self.enum_values = 0
        self.long_enum = False

    @classmethod
    def of(cls, schema: Mapping[str, Any]) -> _StrictSize:
        size = cls()
        size._add(schema, 0)
        return size

    def within_limits(self) -> bool:
        return (
            self.depth <= _STRICT_MAX_DEPTH
            and self.properties <= _STRICT_MAX_PROPERTIES
            and self.chars <= _STRICT_MAX_CHARS
            and self.enum_values <= _STRICT_MAX_ENUM_VALUES
            and not self.long_enum
        )

    def _add(self, node: Mapping[str, Any], depth: int) -> None:
        kinds = node.get("type")
        if (
            "properties" in node
            or kinds == "object"
            or (isinstance(kinds, list) and "object" in kinds)
        ):
            depth += 1
            self.depth = max(self.depth, depth)
        properties: Mapping[str, Any] = node.get("properties", {})
        self.properties += len(properties)
        self.chars += sum(len(name) for name in properties)
        enum = node.get("enum")
        if isinstance(enum, list):
            self.enum_values += len(enum)
            chars = sum(len(value) for value in enum if isinstance(value, str))
            self.chars += chars
            many, most = _STRICT_LONG_ENUM
            self.long_enum |= len(enum) > many and chars > most
        if isinstance(node.get("const"), str):
            self.chars += len(node["const"])
        children = [*properties.values(), *node.get("anyOf", [])]
        if "items" in node:
            children.append(node["items"])
        for key in ("$defs", "definitions"):
            defs: Mapping[str, Any] = node.get(key, {})
            self.chars += sum(len(name) for name in defs)
            children.extend(defs.values())
        for child in children:
            self._add(child, depth)


def _strict_node(node: Any) -> bool:
    if not isinstance(node, Mapping) or not _STRICT_KEYWORDS.issuperset(node):
        return False
    if "format" in node and node["format"] not in _STRICT_FORMATS:
        return False
    properties = node.get("properties", {})
    kinds = node.get("type")
    is_object = kinds == "object" or (isinstance(kinds, list) and "object" in kinds)
    if is_object or "properties" in node:
        required = node.get("required", [])
        if (
            not isinstance(properties, Mapping)
            or node.get("additionalProperties") is not False
            or not isinstance(required, list)
            or set(required) != set(properties)
        ):
            return False
    children: list[Any] = list(properties.values())
    if "items" in node:
        children.append(node["items"])
    for key in ("$defs", "definitions"):
        defs = node.get(key, {})
        if not isinstance(defs, Mapping):
            return False
        children.extend(defs.values())
    variants = node.get("anyOf", [])
    if not isinstance(variants, list):
        return False
    children.extend(variants)
    return all(_strict_node(child) for child in children)


def _field(value: Any, name: str) -> Any:
    """`value[name]` of a dict, else the attribute (None when missing)."""
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def _count(value: Any) -> int:
    """A token count as sent (an int, a numeric string, None); 0 for anything else or < 0."""
    try:
        return max(0, int(value or 0))
    except (TypeError, ValueError):
        return 0


def usage_from_openai(raw: Any) -> Usage:
    """The `Usage` of a Chat Completions `usage` object (a dict or the SDK's model).

    Prompt tokens read from the cache (`prompt_tokens_details.cached_tokens`, or DeepSeek's
    `prompt_cache_hit_tokens`) count as `cache_read`, those written to it
    (`cache_write_tokens`, which OpenAI bills apart from GPT-5.6 on, or LiteLLM's
    `cache_creation_tokens` for a model that bills them, as Claude does) as `cache_write`,
    the rest as `input`; `completion_tokens`
    as `output` (the Responses API's `input_tokens`/`output_tokens` are read too), or the
    server's `total_tokens` less the prompt when that is more: Gemini's OpenAI endpoint counts
    its (billed) thinking tokens only in the total. The output's `reasoning_tokens`
    (`completion_tokens_details`, or the Responses API's `output_tokens_details`) are
    `reasoning`, a part of `output`. Negative or missing counts are 0, and the cached count
    never exceeds the prompt, nor the reasoning count the output. `total_tokens` is the
    sum, as for every provider; cost is left to the caller (it knows the price).
    """
    prompt = _count(_field(raw, "prompt_tokens") or _field(raw, "input_tokens"))
    details = _field(raw, "prompt_tokens_details") or _field(raw, "input_tokens_details")
    cached = _count(_field(details, "cached_tokens"))
    if not cached:
        cached = _count(_field(raw, "prompt_cache_hit_tokens"))
    cached = min(cached, prompt)
    written = _count(_field(details, "cache_write_tokens"))
    if not written:
        written = _count(_field(details, "cache_creation_tokens"))
    written = min(written, prompt - cached)
    output = _count(_field(raw, "completion_tokens") or _field(raw, "output_tokens"))
    output = max(output, _count(_field(raw, "total_tokens")) - prompt)
    spent = _field(raw, "completion_tokens_details") or _field(raw, "output_tokens_details")
    return Usage(
        input=prompt - cached - written,
        output=output,
        cache_read=cached,
        cache_write=written,
        total_tokens=prompt + output,
        reasoning=min(_count(_field(spent, "reasoning_tokens")), output),
    )


def user_message_from_openai(message: Mapping[str, Any]) -> UserMessage:
    """An OpenAI chat user message as a `UserMessage` (the seeds' OpenAiToUserMessage).

    Args:
        message: `{"role": "user", "content": str | [parts]}`; parts are `{"type": "text",
            "text"}`, `{"type": "image_url", "image_url": {"url": "data:<mime>;base64,..."}}`
            (or the URL string directly), `{"type": "image", "data", "mime_type"}` and a PDF
            as `{"type": "file", "file": {"file_data": "data:application/pdf;base64,...",
            "filename"?}}`.
            `role` may be left out.

    Returns:
        The user message, timestamped now.

    Raises:
        MessageInputError: (a `ValueError`) another role, content that is neither a string
            nor a list of parts, an unknown part type, an image that is not a base64 data
            URL, or a file part that is not a PDF given as data.
    """
    if not isinstance(message, Mapping):
        raise MessageInputError(f"expected an OpenAI message dict, got {type(message).__name__}")
    role = message.get("role", "user")
    if role != "user":
        raise MessageInputError(f"expected a message with role 'user', got role {role!r}")
    content = message.get("content")
    if isinstance(content, str):
        return UserMessage(content)
    if not isinstance(content, list):
        raise MessageInputError(
            "a user message's content must be a string or a list of text/image_url parts, "
            f"got {type(content).__name__}"
        )
    blocks: list[TextContent | ImageContent | DocumentContent] = []
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append(TextContent(part["text"]))
        elif kind == "image_url":
            image_url = part.get("image_url")
            url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
            if not isinstance(url, str):
                raise MessageInputError("an image_url part needs image_url.url (a data: URL)")
            blocks.append(_image_from_url(url))
        elif kind == "image" and isinstance(part.get("data"), str):
            mime = part.get("mime_type") or part.get("mimeType") or "image/png"
            blocks.append(image_from_base64(part["data"], str(mime)))
        elif kind == "file":
            blocks.append(_document_from_file_part(part.get("file")))
        else:
            raise MessageInputError(
                f"unknown user content part {part!r}: use {{'type': 'text', 'text': ...}}, "
                "{'type': 'image_url', 'image_url': {'url': 'data:...'}} or a PDF as "
                "{'type': 'file', 'file': {'file_data': 'data:application/pdf;base64,...'}}"
            )
    return UserMessage(blocks)


def _document_from_file_part(file: Any) -> DocumentContent:
    # The `file` part Chat Completions takes (and `_content_parts` sends) for a PDF.
    data = file.get("file_data") if isinstance(file, Mapping) else None
    if not isinstance(data, str) or not data.startswith("data:application/pdf;base64,"):
        raise MessageInputError(
            "a file part must hold a PDF as file.file_data, a data:application/pdf;base64,... "
            "URL (a file id or another type cannot be read here)"
        )
    name = file.get("filename")
    return document_from_base64(data, name if isinstance(name, str) and name else None)


def _image_from_url(url: str) -> ImageContent:
    if not url.startswith("data:") or ";base64," not in url:
        raise MessageInputError(
            f"image_url {url[:60]!r} is not a base64 data: URL; download the image and pass "
            "it as data:<mime>;base64,<data> or as ImageContent"
        )
    header, data = url[len("data:") :].split(";base64,", 1)
    return image_from_base64(data, header or "image/png")
