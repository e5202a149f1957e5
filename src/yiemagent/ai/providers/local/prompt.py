"""What the embedded model sees: chat messages, the tool prompt and the reply schema
(DESIGN §11; docs/local-model.md "How the small model calls tools").

The small Qwen models do not emit native tool calls, so tool use is JSON-schema-constrained
generation. A reply is one call `{"name": <tool>, "arguments": {...}}` (one branch per tool,
its arguments constrained by the tool's input schema), a list of several calls
`[{"name": ..., "arguments": ...}, ...]` (one batch), or the answer
`{"name": "answer", "text": "..."}`. A call and the answer both start with `{"name": "`, so
the model decides between a tool and the answer on the name itself (measured better than a
separate `{"answer": ...}` key, and better than making every reply a list;
docs/local-model.md).
`reply_schema` is the one place that builds the reply's schema.

The system prompt starts with the assistant's identity and lists each tool with its
parameters: name, type, required or optional, enum, default and a description cut to a
budget (prompt tokens cost ~12 ms each on 2 cores; see docs/local-model.md for the figures).

Loop guards: `answered_calls` collects the (name, arguments) pairs that already have
a result; the provider never runs such a call again, and when a reply holds only repeats it
generates again with those tools' branches dropped (`reply_schema(..., drop=...)`).
`tool_rounds` counts the tool rounds since the last user message; after
`LocalModelSpec.max_tool_rounds` only the answer is offered. A request that writes a tool's
name (`named_tools`: "use the word_count tool on ...") gets a call first: the answer is not
offered until that tool's branch is dropped by a guard.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from yiemagent.ai.attachments import attachment_stand_in
from yiemagent.ai.providers.local.grounding import item_choices
from yiemagent.types.messages import (
    AssistantMessage,
    DocumentContent,
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.types.tools import AgentTool

__all__ = [
    "AFTER_RESULTS",
    "ANSWER_TEXT",
    "MAX_CALLS",
    "NAME_PREFIX",
    "NOT_GIVEN",
    "NO_TOOL",
    "REF_DEPTH",
    "answer_name",
    "answered_calls",
    "call_branch",
    "call_key",
    "chat_messages",
    "coined",
    "content_text",
    "current_request",
    "extra_call_grammar",
    "identity",
    "inline_refs",
    "last_results",
    "named_tools",
    "no_tool_turns",
    "not_given_turns",
    "one_call",
    "own_calls",
    "render_tool",
    "reply_schema",
    "request_text",
    "result_labels",
    "result_text",
    "results_turn",
    "steered_request",
    "system_prompt",
    "tool_rounds",
]

ANSWER_TEXT = "text"
"""The key holding the answer in the answer item."""
MAX_CALLS = 8
"""Most calls in one reply (a bound on a model that keeps adding calls)."""
DESCRIPTION_CHARS = 300
"""A tool's description is cut to this many characters in the prompt."""
PARAM_CHARS = 160
"""A parameter's description is cut to this many characters in the prompt."""
ENUM_ITEMS = 12
"""At most this many enum values are listed in the prompt (the grammar still has all)."""

_RULES = (
    'Reply in JSON: {{"name": "<tool>", "arguments": {{...}}}} to call a tool that helps with '
    'the request; a list [{{"name": ..., "arguments": ...}}, ...] to call tools for each part '
    "of a request with several parts. Take the values from the request; leave out optional "
    "parameters it does not give. Call a tool only if it does what the user asks; then never "
    "compute, guess or make up what it gives. To talk to the user (greetings, questions no "
    'tool helps with, or to report tool results): {{"name": "{answer}", "text": "<your '
    'answer>"}}. If no tool does what the user asks, answer that you cannot do it.'
)


def answer_name(tools: Sequence[AgentTool]) -> str:
    """The `name` value of the answer item: "answer" unless a tool is called that."""
    names = {tool.name for tool in tools}
    for candidate in ("answer", "final_answer", "reply_to_user"):
        if candidate not in names:
            return candidate
    return "answer_" + "_".join(sorted(names))[:40]


def identity(model_name: str) -> str:
    """The identity line that starts every system prompt of the embedded model."""
    return (
        f"You are yiem, an assistant made with yiemagent. You run on {model_name}, a model "
        "by the Qwen team, on this computer, offline."
    )


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _type_text(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {_type_text(items)}" if isinstance(items, dict) else "array"
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties")
        if isinstance(properties, dict) and properties:
            inner = ", ".join(
                f"{name}: {_type_text(sub) if isinstance(sub, dict) else 'any'}"
                for name, sub in properties.items()
            )
            return f"object {{{inner}}}"
        return "object"
    if isinstance(kind, str):
        return kind
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list):
            return " or ".join(_type_text(o) for o in options if isinstance(o, dict))
    return "any"


def _param_line(name: str, schema: dict[str, Any], required: bool) -> str:
    facts = [_type_text(schema), "required" if required else "optional"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = ", ".join(json.dumps(v, ensure_ascii=False) for v in enum[:ENUM_ITEMS])
        facts.append("one of " + shown + (", …" if len(enum) > ENUM_ITEMS else ""))
    if "default" in schema:
        facts.append("default " + json.dumps(schema["default"], ensure_ascii=False, default=str))
    line = f"    {name} ({', '.join(facts)})"
    description = schema.get("description")
    if isinstance(description, str) and description.strip():
        line += ": " + _cut(description, PARAM_CHARS)
    return line


def render_tool(tool: AgentTool) -> str:
    """A tool as the model reads it: `- name: description`, then one line per parameter."""
    lines = [f"- {tool.name}: {_cut(tool.description, DESCRIPTION_CHARS)}"]
    schema = inline_refs(dict(tool.input_schema))
    properties = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    if isinstance(properties, dict):
        for name, schema in properties.items():
            param = schema if isinstance(schema, dict) else {}
            lines.append(_param_line(name, param, name in needed))
    return "\n".join(lines)


def system_prompt(base: str, tools: Sequence[AgentTool], model_name: str = "") -> str:
    """The system prompt: the identity (with `model_name`), `base`, then (with tools) each
    tool with its parameters and the reply rules."""
    lines = [identity(model_name)] if model_name else []
    if base.strip():
        lines.append(base.strip())
    if tools:
        lines.append("Tools:")
        lines.extend(render_tool(tool) for tool in tools)
        lines.append(_RULES.format(answer=answer_name(tools)))
    return "\n".join(lines)


def _arguments_schema(tool: AgentTool) -> dict[str, Any]:
    # Descriptions and titles only cost grammar size; the prompt already has them. A tool
    # that lists its parameters and says nothing of others gets only those: JSON Schema
    # allows any other key by default, and the 0.5B then wrote a key that ran to the token
    # cap (`"atm_pressure': 1}}] ```json {"…`).
    schema = {k: v for k, v in tool.input_schema.items() if k not in ("title", "description")}
    schema = inline_refs(schema)
    schema.setdefault("type", "object")
    if isinstance(schema.get("properties"), dict):
        schema.setdefault("additionalProperties", False)
        schema["properties"] = {
            name: _bounded_choices(param) for name, param in schema["properties"].items()
        }
    return schema


REF_DEPTH = 4
"""How many `$ref`s deep `inline_refs` writes a schema out; a deeper (recursive) one admits
any value of its type."""


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with each local `$ref` (`#/$defs/Name`, `#/definitions/Name`) replaced by what
    it names, and its `$defs` left out.

    A tool's arguments sit inside the reply's schema (`call_branch`), where `#/$defs/…`
    would point at the reply's root and name nothing: the grammar failed to build and every
    call of a tool taking a pydantic model failed. Refs nested more than `REF_DEPTH` deep
    (a recursive type) admit any value of the named schema's type; a ref to anything else
    is left as it is."""
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        found = schema.get(key)
        if isinstance(found, dict):
            defs.update({f"#/{key}/{name}": value for name, value in found.items()})

    def walk(node: Any, depth: int) -> Any:
        if isinstance(node, list):
            return [walk(item, depth) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        inlined = isinstance(ref, str) and ref in defs
        left_out = ("$defs", "definitions", "$ref") if inlined else ("$defs", "definitions")
        rest = {k: walk(v, depth) for k, v in node.items() if k not in left_out}
        if not inlined:
            return rest
        target = defs[str(ref)]
        if depth >= REF_DEPTH or not isinstance(target, dict):
            kind = target.get("type") if isinstance(target, dict) else None
            return {**({"type": kind} if kind else {}), **rest}
        return {**walk(target, depth + 1), **rest}

    return dict(walk(schema, 0)) if defs else schema


def _bounded_choices(param: Any) -> Any:
    # A list of choices holds each at most once, so no more items than there are choices:
    # given `"items": {"enum": [...]}`, the 0.5B repeated one choice ("Open 24 Hours", …)
    # until the token cap. At the bound, `repair.runaway_choices` keeps each once.
    if not isinstance(param, dict) or param.get("type") != "array" or "maxItems" in param:
        return param
    choices = item_choices(param)
    return {**param, "maxItems": len(choices)} if choices else param


def call_branch(tool: AgentTool) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"name": {"const": tool.name}, "arguments": _arguments_schema(tool)},
        "required": ["name", "arguments"],
        "additionalProperties": False,
    }


def one_call(calls: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The schema of one call of any of `calls` (`call_branch`es, at least one): the one
    branch itself, or their `anyOf`."""
    return calls[0] if len(calls) == 1 else {"anyOf": list(calls)}


def _answer_branch(tools: Sequence[AgentTool], parts: Sequence[str] = ()) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string"}
    if len(parts) >= 2:
        text = {
            "type": "object",
            "properties": {label: {"type": "string"} for label in parts},
            "required": list(parts),
            "additionalProperties": False,
        }
    return {
        "type": "object",
        "properties": {"name": {"const": answer_name(tools)}, ANSWER_TEXT: text},
        "required": ["name", ANSWER_TEXT],
        "additionalProperties": False,
    }


def reply_schema(
    tools: Sequence[AgentTool],
    *,
    drop: Collection[str] = (),
    answer: bool = True,
    parts: Sequence[str] = (),
) -> dict[str, Any]:
    """The JSON Schema of one reply: a call of a tool not in `drop`, a list of 2..`MAX_CALLS`
    such calls, or the answer.

    Args:
        tools: The tools offered, in order.
        drop: Names of tools whose branch is left out (the repeat guard, the round budget).
        answer: Whether the free-text answer is offered (not while the output tool of a
            typed run is: the value then comes as that tool's arguments).
        parts: With 2 or more labels (`result_labels`), the answer's text is an object of
            one string per label, in order: one per result of the last round (joined by
            newlines; not since the request: a chain's first result is a step, and forcing
            a second part made the 0.5B write garbage). The 0.5B model otherwise reports
            only one of several results, and given a plain list of strings it reported
            one result twice (docs/local-model.md).

    Returns:
        `{"anyOf": [call branch per tool..., <list of calls>, <answer>]}`; with every tool
        dropped, only the answer branch remains. Further answer kinds go beside
        `_answer_branch` here.
    """
    calls = [call_branch(tool) for tool in tools if tool.name not in drop]
    branches: list[dict[str, Any]] = list(calls)
    if calls:
        branches.append(
            {
                "type": "array",
                "items": one_call(calls),
                "minItems": 2,
                "maxItems": MAX_CALLS,
            }
        )
    if answer or not calls:
        branches.append(_answer_branch(tools, parts))
    return {"anyOf": branches}


def extra_call_grammar(tools: Sequence[AgentTool], *, drop: Collection[str] = ()) -> str:
    """The llguidance grammar (llama.cpp's `grammar`, lark syntax) of one more list item
    after the calls so far: exactly `, {call}`.

    A small model rarely opens a list itself, and after one call it closes a list with
    high probability even when the request has several parts (docs/local-model.md). So the provider
    writes the calls so far back as an open list and makes the model write one more call:
    on a one-part request the model repeats a call (dropped: nothing new), on a request with
    several parts it writes the next part's call. The decoder keeps a call only when
    `choice.adds_to` finds that it adds a part of the request.
    """
    item = one_call([call_branch(tool) for tool in tools if tool.name not in drop])
    return (
        f'%llguidance {{}}\nstart: ", " call\ncall: %json {json.dumps(item, ensure_ascii=False)}\n'
    )


def call_key(name: str, arguments: Any) -> tuple[str, str]:
    """A hashable identity of a call: its name and canonical JSON arguments."""
    return name, json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)


LABEL_CHARS = 60
"""A result's label (`result_labels`) is cut to this many characters."""


def result_labels(
    messages: Sequence[Message], results: Sequence[ToolResultMessage]
) -> tuple[str, ...]:
    """A label for each of `results` naming the call that gave it, as the model wrote it:
    `get_time(London)`, `calculator(365 * 24)` (values joined by ", ", cut to
    `LABEL_CHARS`); a label met again gets " #2", " #3". The calls are looked up in the
    assistant messages of `messages` by id; a result whose call is not there is labelled
    by its tool's name."""
    calls = {
        call.id: call for m in messages if isinstance(m, AssistantMessage) for call in m.tool_calls
    }
    labels: list[str] = []
    for result in results:
        call = calls.get(result.tool_call_id)
        values = [
            v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, default=str)
            for v in (call.arguments.values() if call is not None else ())
        ]
        label = _cut(f"{result.tool_name}({', '.join(values)})", LABEL_CHARS)
        seen = sum(1 for known in labels if known == label or known.startswith(label + " #"))
        labels.append(f"{label} #{seen + 1}" if seen else label)
    return tuple(labels)


def answered_calls(messages: Sequence[Message]) -> set[tuple[str, str]]:
    """`call_key`s of the tool calls in `messages` that have a tool result."""
    result_ids = {m.tool_call_id for m in messages if isinstance(m, ToolResultMessage)}
    return {
        call_key(call.name, call.arguments)
        for m in messages
        if isinstance(m, AssistantMessage)
        for call in m.tool_calls
        if call.id in result_ids
    }


def own_calls(messages: Sequence[Message], tools: Sequence[AgentTool]) -> list[Message]:
    """`messages` with only the calls of `tools` (those offered now) and their results.

    A call of a tool this request does not offer was made by another agent on the same
    transcript (a router's `transfer_to_<name>` before its specialist answers) or with tools
    since taken away. The small model reads every call it is shown as its own: after a
    router's hand-over the 0.5B took the transfer's result for its results and answered
    "17 * 23 = 401" without the calculator it was given, and with no tools it wrote the
    transfer call again as its whole answer. An assistant message left with nothing is
    left out.
    """
    offered = {tool.name for tool in tools}
    foreign: set[str] = set()
    kept: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            calls = message.tool_calls
            foreign.update(call.id for call in calls if call.name not in offered)
            if all(call.name in offered for call in calls):
                kept.append(message)
                continue
            content = [
                block
                for block in message.content
                if not (isinstance(block, ToolCall) and block.name not in offered)
            ]
            if any(isinstance(block, TextContent | ToolCall) for block in content):
                kept.append(replace(message, content=content))
            continue
        if isinstance(message, ToolResultMessage) and message.tool_call_id in foreign:
            continue
        kept.append(message)
    return kept


def current_request(messages: Sequence[Message]) -> list[Message]:
    """The last user message of `messages` and what follows it (the request the next calls
    serve, and its results so far); all of `messages` when no user message is in it. User
    messages in a row, with no reply between them, are one request: "What time is it in
    London?" and then, steered in before the first reply, "Also, what is 365 * 24?" ask
    for the time and the product."""
    for i in range(len(messages) - 1, -1, -1):
        if isinstance(messages[i], UserMessage):
            while i > 0 and isinstance(messages[i - 1], UserMessage):
                i -= 1
            return list(messages[i:])
    return list(messages)


def steered_request(messages: Sequence[Message]) -> list[Message]:
    """`current_request`, and when its user message came right after tool results (steered
    in while the tools ran: no answer came between), the request it adds to before it,
    and so on back. "also Berlin please" after the calls for "What time is it in Paris and
    in Tokyo?" asks for the time too, though it names no tool by itself. The request's
    grounding reads these; which messages count as the request (`current_request`) does
    not change."""
    start = len(messages) - len(current_request(messages))
    while start > 0 and isinstance(messages[start - 1], ToolResultMessage):
        start -= len(current_request(messages[:start]))
    return list(messages[start:])


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def named_tools(tools: Sequence[AgentTool], request: Sequence[Message]) -> set[str]:
    """The tools the user message of `request` (`current_request`) names as written: the
    tool's name is a whole word of it, same case, and is a coined identifier no prose word
    is — it holds `_`, a digit or a capital after its first letter (`word_count`,
    `writeTool`, `get_time`; not `calculator`). Such a request asks for that tool:
    "Use the word_count tool on: the quick brown fox" — the 1.5B otherwise answered "4"
    itself."""
    written = set(_IDENTIFIER.findall(request_text(request)))
    return {t.name for t in tools if t.name in written and coined(t.name)}


def request_text(request: Sequence[Message]) -> str:
    """The text of the user messages of `request` (`current_request`), one a line."""
    return "\n".join(content_text(m.content) for m in request if isinstance(m, UserMessage))


def coined(name: str) -> bool:
    """Whether `name` is a coined identifier no prose word is: it holds `_`, a digit or a
    capital after its first letter (`word_count`, `writeTool`, `get_time`)."""
    inner = name.strip("_")
    return "_" in inner or any(c.isdigit() for c in name) or any(c.isupper() for c in inner[1:])


def last_results(messages: Sequence[Message]) -> int:
    """How many tool results end `messages` (the last round's; 0 when it ends otherwise)."""
    count = 0
    for message in reversed(messages):
        if not isinstance(message, ToolResultMessage):
            break
        count += 1
    return count


def results_text(messages: Sequence[Message]) -> str:
    """The text of the tool results that end `messages` (the last round's), a blank line
    apart, as `results_turn` shows them to the model."""
    last = messages[len(messages) - last_results(messages) :]
    return "\n\n".join(result_text(m) for m in last if isinstance(m, ToolResultMessage))


def result_text(message: ToolResultMessage) -> str:
    """One tool result as the model reads it: its text ("(no output)" when empty),
    "Error: " before it when the call failed."""
    text = content_text(message.content) or "(no output)"
    return f"Error: {text}" if message.is_error else text


def tool_rounds(messages: Sequence[Message]) -> int:
    """Assistant messages with tool calls after the last user message (the current prompt's
    tool rounds so far)."""
    rounds = 0
    for message in reversed(messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage) and message.tool_calls:
            rounds += 1
    return rounds


def content_text(content: Sequence[TextContent | ImageContent | DocumentContent]) -> str:
    """The text of `content`; the model reads no images or PDFs: a short note stands in."""
    parts = [
        block.text if isinstance(block, TextContent) else attachment_stand_in(block)
        for block in content
    ]
    return "\n".join(parts)


def _calls_json(calls: Sequence[ToolCall]) -> str:
    items = [{"name": call.name, "arguments": call.arguments} for call in calls]
    return json.dumps(items[0] if len(items) == 1 else items, ensure_ascii=False)


def _answer_json(text: str, answer: str) -> str:
    return json.dumps({"name": answer, ANSWER_TEXT: text}, ensure_ascii=False)


NAME_PREFIX = '{"name": "'
"""How every reply starts; the model's free choice of a name follows it."""
NO_TOOL = 'No tool does that (there is no "{name}"). Reply to my request without a tool.'


def no_tool_turns(name: str) -> list[dict[str, str]]:
    """The two turns that tell the model the tool it reached for, `name`, is not there:
    its reply as far as the name, then `NO_TOOL`. After them the 0.5B model says it
    cannot do it (docs/local-model.md), where with only the
    answer left it made up a forecast or said a file "has been deleted"."""
    reply = json.dumps({"name": name}, ensure_ascii=False)
    return [
        {"role": "assistant", "content": reply},
        {"role": "user", "content": NO_TOOL.format(name=name)},
    ]


NOT_GIVEN = (
    "None of the tools gives that, so you cannot know it. Reply to my request again, "
    "without making anything up."
)


def not_given_turns(text: str, answer: str = "answer") -> list[dict[str, str]]:
    """The two turns that refuse a made-up answer after the tool the model reached for was
    dropped: its answer `text` as it replied (`answer`: the answer item's name), then
    `NOT_GIVEN`. "What will the weather be in Berlin tomorrow?" got "…sunny, with a
    temperature of 24°C…" once `get_time` was dropped; told, the model says it cannot
    tell (docs/local-model.md)."""
    return [
        {"role": "assistant", "content": _answer_json(text, answer)},
        {"role": "user", "content": NOT_GIVEN},
    ]


AFTER_RESULTS = (
    "Those are the results of the calls you made for my request. "
    "Answer it now, using only these results."
)


COPY_WORDS = 6
"""How many first words of an answer `copies` compares with an instruction."""
_ANSWER_WORD = re.compile(r"[a-z0-9']+")


def copies(answer: str, instruction: str = AFTER_RESULTS) -> bool | None:
    """Whether `answer` copies `instruction` (one of the provider's own turns): its first
    `COPY_WORDS` words (lower-cased) match the instruction's at all but one place ("These
    are the results of the calls…" copies `AFTER_RESULTS`). None while the answer has fewer
    whole words and they match so far (it may still turn into a copy); False once it
    cannot. An answer that ends before `COPY_WORDS` words is not a copy."""
    said = _ANSWER_WORD.findall(answer.lower())
    own = _ANSWER_WORD.findall(instruction.lower())[:COPY_WORDS]
    growing = bool(said) and (answer[-1].isalnum() or answer[-1] == "'")
    whole = said[:-1] if growing else said
    misses = sum(a != b for a, b in zip(whole, own, strict=False))
    if growing and len(said) <= len(own) and not own[len(said) - 1].startswith(said[-1]):
        misses += 1
    if misses > 1:
        return False
    return True if len(whole) >= len(own) else None


def results_turn(results: Sequence[str]) -> str:
    """The user turn that hands one round's tool results back: the results, a blank line
    apart, in one `<tool_response>` block (the Qwen chat template's tags; one block, because
    the 0.5B answers by copying the last block), then `AFTER_RESULTS`.

    The request is not restated: quoted after the results, "Read notes.md and tell me the
    title." was copied as the answer or read again (measured in docs/local-model.md).

    Args:
        results: Each result's text, in the order of the calls.
    """
    body = "\n\n".join(results)
    return f"<tool_response>\n{body}\n</tool_response>\n{AFTER_RESULTS}"


def chat_messages(
    system: str, messages: Sequence[Message], answer: str = "answer"
) -> list[dict[str, str]]:
    """The chat-completions messages for the runtime.

    Earlier replies are shown as the JSON the model produces (a call, a list of calls, or the
    answer object named `answer`), so the model keeps to its format and a turn's prefix stays
    identical across turns. The tool results of one round are one user turn
    (`results_turn`: one block of results, then `AFTER_RESULTS`). A user message steered in
    right after results that no answer reported carries them into the next round's block:
    the 0.5B answers from the last block, and the request it is answering still wants them
    ("What time is it in London?", then "Also, what is 365 * 24?"). Images are
    replaced by a note (the models read text only); thinking is left out. With `system`
    empty, earlier answers are plain text.
    """
    out: list[dict[str, str]] = [{"role": "system", "content": system}] if system else []
    as_json = bool(answer)
    pending: list[str] = []
    shown: list[str] = []  # the last block's results, until an answer reports them
    carried: list[str] = []  # the results a steered message carries to the next block

    def flush() -> None:
        if pending:
            block = [*carried, *pending]
            out.append({"role": "user", "content": results_turn(block)})
            shown[:], pending[:], carried[:] = pending, [], []

    for message in messages:
        if isinstance(message, ToolResultMessage):
            pending.append(result_text(message))
            continue
        steered = bool(pending)
        flush()
        if isinstance(message, UserMessage):
            carried[:] = shown if steered else []
            out.append({"role": "user", "content": content_text(message.content)})
        elif isinstance(message, AssistantMessage):
            text = "\n".join(
                b.text for b in message.content if isinstance(b, TextContent) and b.text
            )
            if message.tool_calls:
                content = _calls_json(message.tool_calls)
            else:
                shown.clear()  # reported (or given up on): nothing to carry
                carried.clear()
                content = _answer_json(text, answer) if text and as_json else text
            if content:
                out.append({"role": "assistant", "content": content})
    flush()
    return out
