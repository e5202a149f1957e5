"""Who spent what, read from a team's trace (DESIGN §13, §17): each `chat` span names the
agent that made the model call (`gen_ai.agent.name`), so the tokens of the chat spans
summed per agent are what each agent spent, and summed over the trace the run's total."""

from __future__ import annotations

from collections import Counter

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from yiemagent.types import Usage, transcript_usage

from ._kit import answer, calls, scripted


async def test_each_chat_span_names_the_agent_that_made_the_call() -> None:
    """After a handoff the target's model calls ran under the entry's `invoke_agent
    router` span with nothing naming billing: a trace said router spent billing's tokens
    (Honeycomb's agent timeline, for one, groups spans by `gen_ai.agent.name`)."""
    provider = TracerProvider()
    memory = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    helper, _ = scripted("helper", [answer("found", Usage(input=7, output=1))])
    billing, _ = scripted(
        "billing",
        [
            calls(("helper", {"input": "look it up"}), usage=Usage(input=20, output=3)),
            answer("billed", Usage(input=30, output=4)),
        ],
        tools=[helper.as_tool()],
    )
    router, _ = scripted(
        "router",
        [calls(("transfer_to_billing", {}), usage=Usage(input=100, output=5))],
        handoffs=[billing],
        tracer_provider=provider,
    )

    await router.prompt("bill me")

    spent: Counter[str] = Counter()
    for span in memory.get_finished_spans():
        attributes = span.attributes or {}
        if attributes.get("gen_ai.operation.name") == "chat":
            name = str(attributes["gen_ai.agent.name"])
            spent[name] += int(attributes["gen_ai.usage.input_tokens"])  # type: ignore[arg-type]
    assert spent == {"router": 100, "billing": 50, "helper": 7}
    assert sum(spent.values()) == transcript_usage(router.state.messages).input == 157
