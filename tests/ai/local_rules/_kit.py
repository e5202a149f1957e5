"""Helpers of the rule tests: neutral tools, the scene and turn a rule reads, and one run
of the provider with a scripted runtime (`tests.ai._local_kit.FakeRuntime`) and a policy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from yiemagent import AgentTool
from yiemagent.ai import Context, stream
from yiemagent.ai.providers.local import local_model
from yiemagent.ai.providers.local.choice import ChainStep, vocabulary
from yiemagent.ai.providers.local.grounding import Grounding
from yiemagent.ai.providers.local.prompt import answered_calls, current_request, tool_rounds
from yiemagent.ai.providers.local.rules import (
    DEFAULT_POLICY,
    DETAILS_KEY,
    CallScene,
    LocalPolicy,
    Offer,
    Turn,
)
from yiemagent.types.messages import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def tool(name: str, properties: dict[str, Any], required: Sequence[str] = ()) -> AgentTool:
    """A tool that is never run, with `properties` and `required`."""
    return AgentTool(
        name=name,
        label=name,
        description=f"The {name.replace('_', ' ')} tool.",
        input_schema={
            "type": "object",
            "properties": properties,
            "required": list(required or properties),
        },
        execute=lambda *a: "unused",
    )


TEXT = {"type": "string", "description": "x"}
GET_TIME = tool("get_time", {"place": TEXT})
GET_WEATHER = tool("get_weather", {"city": TEXT})
CALCULATOR = tool("calculator", {"expression": {"type": "string", "description": "x"}})
READ_FILE = tool("read_file", {"path": TEXT})
FIND_HOTELS = tool(
    "find_hotels", {"city": TEXT, "stars": {"type": "integer", "description": "x"}}, ["city"]
)
LOAN_PAYMENT = tool(
    "loan_payment",
    {"amount": {"type": "number", "description": "x"}, "rate": {"type": "number"}},
)


def conversation(user: str, *rounds: tuple[str, dict[str, Any], str]) -> list[Message]:
    """`user`, then one round per (tool name, arguments, result)."""
    messages: list[Message] = [UserMessage(user)]
    for i, (name, arguments, result) in enumerate(rounds):
        call = ToolCall(id=f"c{i}", name=name, arguments=arguments)
        messages.append(AssistantMessage(content=[call], stop_reason="toolUse"))
        messages.append(ToolResultMessage(f"c{i}", name, [TextContent(result)]))
    return messages


def scene(messages: Sequence[Message], tools: Sequence[AgentTool]) -> CallScene:
    """The scene the decoder gives call rules for the reply to `messages`."""
    request = current_request(messages)
    return CallScene(
        tools={t.name: t for t in tools},
        known=Grounding.of(messages),
        request=Grounding.of(request),
        answered=answered_calls(messages),
        chain=ChainStep.after(messages, tools),
        vocabulary=vocabulary(tools),
    )


def turn(
    messages: Sequence[Message],
    tools: Sequence[AgentTool],
    *,
    probe: str | None = None,
    max_tool_rounds: int = 4,
) -> Turn:
    """The turn the provider gives offer rules; the free-name probe answers `probe`."""
    request = current_request(messages)

    async def answer_probe() -> str | None:
        return probe

    return Turn(
        tools=tools,
        messages=messages,
        request=Grounding.of(request),
        request_messages=request,
        rounds=tool_rounds(messages),
        max_tool_rounds=max_tool_rounds,
        chain=ChainStep.after(messages, tools),
        output_tools=frozenset(),
        answer="answer",
        probe=answer_probe,
    )


def offer() -> Offer:
    """An offer of everything (what the empty policy leaves)."""
    return Offer(chat=[{"role": "user", "content": "x"}])


def reply(*calls: tuple[str, dict[str, Any]]) -> str:
    """A model reply: one call as an object, several as a list."""
    items = [{"name": name, "arguments": args} for name, args in calls]
    return json.dumps(items[0] if len(items) == 1 else items)


def answer(text: str) -> str:
    """A model reply that answers."""
    return json.dumps({"name": "answer", "text": text})


async def run(
    messages: Sequence[Message],
    tools: Sequence[AgentTool],
    policy: LocalPolicy = DEFAULT_POLICY,
) -> AssistantMessage:
    """The message the embedded provider makes (with the `fake` runtime installed)."""
    model = local_model(policy=policy)
    return await stream(model, Context("", list(messages), list(tools))).result()


def notes(message: AssistantMessage, rule: str) -> list[dict[str, str]]:
    """The steps `rule` took, as the message's details record them."""
    return [n for n in message.details.get(DETAILS_KEY, []) if n["rule"] == rule]
