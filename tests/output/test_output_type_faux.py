"""`output_type` through the Agent on the faux model (DESIGN §14): pydantic, dataclass,
TypedDict, JSON Schema and int; valid on the first try, invalid then fixed (the model sees
the errors), invalid until the retries run out; tool mode (`final_result`) and native mode
(the answer text is the JSON value)."""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from yiemagent import (
    Agent,
    AgentEndEvent,
    AgentRunError,
    AgentTool,
    ConfigError,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import OutputMessage, OutputSpec, text_of

from ._kit import CASES, Case, Person

ids = [case.id for case in CASES]


def tool_reply(data: dict[str, Any]) -> Any:
    return faux_message(faux_tool_call("final_result", data))


def agent_for(fm: FauxModel, **kwargs: Any) -> Agent[Any]:
    ends: list[AgentEndEvent] = []
    agent: Agent[Any] = Agent(model=fm.model, stream_fn=fm.stream_fn, **kwargs)
    agent.subscribe(lambda e, _s: ends.append(e) if isinstance(e, AgentEndEvent) else None)
    agent.ends = ends  # type: ignore[attr-defined]
    return agent


def last_seen_by_model(fm: FauxModel) -> str:
    """The text of the last message the model received in its last call."""
    last = fm.contexts[-1].messages[-1]
    return text_of(last.content)


# ── tool mode: the final_result tool ───────────────────────────────────────


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_tool_mode_valid_first_try(case: Case) -> None:
    fm = FauxModel([tool_reply(case.valid)])
    agent = agent_for(fm, output_type=case.type_)
    reply = await agent.prompt("extract it")
    assert isinstance(reply, OutputMessage)
    assert reply.output == case.expected
    assert fm.call_count == 1
    offered = fm.contexts[0].tools
    assert [t.name for t in offered] == ["final_result"]
    assert offered[0].input_schema == OutputSpec(case.type_).schema
    end = agent.ends[-1]  # type: ignore[attr-defined]
    assert end.reason == "stop" and end.output == case.expected
    # the call is answered in the transcript, so the next prompt is valid
    result = agent.state.messages[-1]
    assert isinstance(result, ToolResultMessage) and not result.is_error


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_tool_mode_invalid_then_fixed_the_model_sees_the_errors(case: Case) -> None:
    fm = FauxModel([tool_reply(case.invalid), tool_reply(case.valid)])
    agent = agent_for(fm, output_type=case.type_)
    reply = await agent.prompt("extract it")
    assert reply.output == case.expected
    assert fm.call_count == 2
    seen = fm.contexts[1].messages[-1]
    assert isinstance(seen, ToolResultMessage) and seen.is_error
    assert case.problem in text_of(seen.content)


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_tool_mode_invalid_until_the_retries_run_out(case: Case) -> None:
    fm = FauxModel([tool_reply(case.invalid)] * 3 + ["never reached"])
    agent = agent_for(fm, output_type=case.type_)
    with pytest.raises(AgentRunError) as caught:
        await agent.prompt("extract it")
    assert fm.call_count == 3  # the first try and output_retries=2
    text = str(caught.value)
    assert "no valid" in text and "after 2 retries" in text and case.problem in text
    assert caught.value.message.stop_reason == "error"
    assert agent.ends[-1].reason == "error"  # type: ignore[attr-defined]
    # the agent stays usable
    fm2_reply = FauxModel(["plain answer"])
    agent2 = agent_for(fm2_reply)
    assert (await agent2.prompt("hi")).text == "plain answer"


async def test_invalid_outputs_of_one_reply_use_one_retry_and_each_is_answered() -> None:
    # Three invalid final_result calls in one reply are one retry, not three: the retries
    # count the model's replies, so parallel calls cannot exhaust them in a single turn.
    bad = faux_message(*(faux_tool_call("final_result", {"name": n}) for n in "abc"))
    fm = FauxModel(
        [bad, tool_reply({"name": "Ann", "age": "old"}), tool_reply({"name": "Ann", "age": 31})]
    )
    agent = agent_for(fm, output_type=Person)
    reply = await agent.prompt("extract it")
    assert reply.output == Person(name="Ann", age=31) and fm.call_count == 3
    first_results = fm.contexts[1].messages[-3:]
    assert all(isinstance(m, ToolResultMessage) and m.is_error for m in first_results)


async def test_tool_turns_between_invalid_outputs_do_not_reset_the_retries() -> None:
    # pydantic-ai#6581: a retry budget kept per step was rebuilt from the last step only, so
    # a turn that called another tool gave the failing one its whole budget back.
    def look(tool_call_id: str, args: Any, signal: Any, on_update: Any) -> str:
        return "looked"

    looker = AgentTool("look", "look", "look", {"type": "object", "properties": {}}, look)
    bad = tool_reply({"name": "Ann", "age": "old"})
    between = faux_message(faux_tool_call("look", {}))
    fm = FauxModel([bad, between, bad, between, bad, tool_reply({"name": "Ann", "age": 31})])
    agent = agent_for(fm, output_type=Person, tools=[looker], output_retries=2)
    with pytest.raises(AgentRunError, match="after 2 retries"):
        await agent.prompt("extract it")
    assert fm.call_count == 5  # the third invalid value ended it; the valid one never came


# ── native mode: the answer text is the JSON value ─────────────────────────


@pytest.mark.parametrize("case", CASES, ids=ids)
async def test_native_mode_valid_invalid_fixed_and_exhausted(case: Case) -> None:
    spec = OutputSpec(case.type_, mode="native")
    fm = FauxModel([json.dumps(case.valid)])
    agent = agent_for(fm)
    reply = await agent.prompt("extract it", output_type=spec)
    assert reply.output == case.expected
    assert fm.contexts[0].tools == []  # no output tool in native mode

    fm = FauxModel([json.dumps(case.invalid), f"```json\n{json.dumps(case.valid)}\n```"])
    agent = agent_for(fm)
    reply = await agent.prompt("extract it", output_type=spec)
    assert reply.output == case.expected
    retry = fm.contexts[1].messages[-1]
    assert isinstance(retry, UserMessage)
    assert case.problem in text_of(retry.content) and "Reply again" in text_of(retry.content)

    fm = FauxModel([json.dumps(case.invalid)] * 2)
    agent = agent_for(fm, output_retries=1)
    with pytest.raises(AgentRunError, match=r"after 1 retry"):
        await agent.prompt("extract it", output_type=spec)
    assert fm.call_count == 2


@pytest.mark.parametrize("mode", ["native", "tool"])
async def test_each_call_hands_the_provider_the_schema_only_in_native_mode(mode: str) -> None:
    """Native mode asks the provider to constrain the answer (`StreamOptions.output_schema`,
    e.g. OpenAI's `response_format`); tool mode offers the output tool and no schema."""
    spec = OutputSpec(Person, mode=mode)  # type: ignore[arg-type]
    reply = '{"name": "Ann", "age": 31}'
    fm = FauxModel([reply if mode == "native" else tool_reply({"name": "Ann", "age": 31})])
    seen: list[Any] = []

    def stream_fn(model: Any, context: Any, options: Any) -> Any:
        seen.append(options.output_schema)
        return fm.stream_fn(model, context, options)

    agent: Agent[Any] = Agent(model=fm.model, stream_fn=stream_fn)
    answer = await agent.prompt("extract it", output_type=spec)
    assert answer.output == Person(name="Ann", age=31)
    assert seen == [spec.schema if mode == "native" else None]


async def test_tool_mode_text_answer_is_asked_again_then_accepted_as_json() -> None:
    """A model that answers in prose instead of calling final_result is told to call it."""
    fm = FauxModel(["Ann is 31.", '{"name": "Ann", "age": 31}'])
    agent = agent_for(fm, output_type=Person)
    reply = await agent.prompt("who?")
    assert reply.output == Person(name="Ann", age=31)
    retry = text_of(fm.contexts[1].messages[-1].content)
    assert "final_result" in retry and "not JSON" in retry


@pytest.mark.parametrize(
    ("type_", "answer", "expected"),
    [
        (str, "Ann is 31.", "Ann is 31."),
        (str, "42", "42"),
        (int, "42", 42),
        (bool, " true\n", True),
        (list[int], "```json\n[1, 2]\n```", [1, 2]),
        (Literal["yes", "no"], "yes", "yes"),
        (Person | str, "no one by that name", "no one by that name"),
    ],
)
async def test_a_text_answer_that_is_the_bare_value_of_a_wrapped_type_is_accepted(
    type_: Any, answer: str, expected: Any
) -> None:
    # pydantic-ai and openai-agents take the answer text as a `str` output; a type whose
    # value travels as {"result": ...} accepts the bare value too, not only the wrapper
    fm = FauxModel([answer])
    reply = await agent_for(fm).prompt("n?", output_type=type_)
    assert reply.output == expected and fm.call_count == 1


async def test_a_text_answer_that_is_no_value_of_the_type_is_still_asked_again() -> None:
    fm = FauxModel(["The answer is 42.", "", '{"result": 42}'])
    reply = await agent_for(fm).prompt("n?", output_type=int)
    assert reply.output == 42 and fm.call_count == 3
    assert "not JSON" in text_of(fm.contexts[1].messages[-1].content)


async def test_tools_first_then_output() -> None:
    """Tools and an output type work together: the model may call tools first."""
    looked_up: list[str] = []

    async def lookup(_id: str, args: dict[str, Any], *_: Any) -> str:
        looked_up.append(args["name"])
        return "Ann is 31"

    tool = AgentTool(
        "lookup",
        "lookup",
        "look a person up",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
        lookup,
    )
    fm = FauxModel(
        [
            faux_message(faux_tool_call("lookup", {"name": "Ann"})),
            tool_reply({"name": "Ann", "age": 31}),
        ]
    )
    agent = agent_for(fm, tools=[tool], output_type=Person)
    reply = await agent.prompt("how old is Ann?")
    assert looked_up == ["Ann"]
    assert reply.output == Person(name="Ann", age=31)
    assert [t.name for t in fm.contexts[0].tools] == ["lookup", "final_result"]


async def test_two_outputs_in_one_reply_the_first_valid_is_kept_and_the_other_told_so() -> None:
    """The model gives its output twice in one reply: the first valid one is the run's
    output, and the transcript does not tell the model the other one was accepted too."""
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("final_result", {"name": "Ann"}),  # invalid: no age
                faux_tool_call("final_result", {"name": "Bob", "age": 40}),
                faux_tool_call("final_result", {"name": "Cy", "age": 50}),
            )
        ]
    )
    agent = agent_for(fm, output_type=Person)
    reply = await agent.prompt("who?")
    assert reply.output == Person(name="Bob", age=40)
    assert fm.call_count == 1
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    texts = [text_of(r.content) for r in results]
    assert [r.is_error for r in results] == [True, False, False]
    assert texts[1] == "Final result accepted."
    assert "accepted" not in texts[2] and "already" in texts[2]


async def test_an_output_beside_another_tool_call_lets_that_call_run() -> None:
    """A reply that gives its output first and calls a tool after it: the tool still
    runs and is answered (R-4.1), then the run ends with the output."""
    ran: list[str] = []

    async def note(_id: str, args: dict[str, Any], *_: Any) -> str:
        ran.append(args["text"])
        return "noted"

    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tool = AgentTool("note", "note", "take a note", schema, note)
    fm = FauxModel(
        [
            faux_message(
                faux_tool_call("final_result", {"name": "Ann", "age": 31}),
                faux_tool_call("note", {"text": "Ann asked"}),
            )
        ]
    )
    agent = agent_for(fm, tools=[tool], output_type=Person)
    reply = await agent.prompt("who?")
    assert reply.output == Person(name="Ann", age=31) and fm.call_count == 1
    assert ran == ["Ann asked"]
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_name, r.is_error) for r in results] == [
        ("final_result", False),
        ("note", False),
    ]


async def test_prompt_output_type_overrides_the_agents_and_plain_prompts_stay_text() -> None:
    fm = FauxModel([tool_reply({"result": 7}), "hello"])
    agent = agent_for(fm)
    reply = await agent.prompt("n?", output_type=int)
    assert reply.output == 7
    plain = await agent.prompt("hi")
    assert not isinstance(plain, OutputMessage) and plain.text == "hello"
    assert fm.contexts[1].tools == []


async def test_list_of_str_and_run_that_ends_without_output_raises() -> None:
    fm = FauxModel([tool_reply({"result": ["a", "b"]})])
    agent = agent_for(fm)
    assert (await agent.prompt("list", output_type=list[str])).output == ["a", "b"]

    broken = FauxModel([faux_message(faux_tool_call("nope", {}))])
    agent = agent_for(broken, max_turns=1, output_type=int)
    with pytest.raises(AgentRunError, match="max_turns"):
        await agent.prompt("n?")


def test_bad_output_types_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="not a type pydantic can validate"):
        OutputSpec(object())  # type: ignore[call-overload]
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        OutputSpec({"type": 5})
    with pytest.raises(ConfigError, match="output mode"):
        OutputSpec(int, mode="json")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="output_retries"):
        Agent(stream_fn=FauxModel([]).stream_fn, output_retries=-1)


def test_a_tool_named_like_the_agents_output_tool_is_refused_when_made() -> None:
    # pydantic-ai's test_tool_return_conflict refuses it at the run; the agent knows sooner
    clash = AgentTool(
        "final_result", "x", "x", {"type": "object", "properties": {}}, lambda *a: "x"
    )
    fm = FauxModel([tool_reply({"result": 1})])
    with pytest.raises(ConfigError, match=r"rename the tool or pass OutputSpec\(T, name=\.\.\.\)"):
        agent_for(fm, tools=[clash], output_type=int)
    agent_for(fm, tools=[clash], output_type=OutputSpec(int, name="answer"))  # renamed: fine
    agent_for(fm, tools=[clash], output_type=OutputSpec(int, mode="native"))  # no tool: fine


@pytest.mark.parametrize("when", ["registered-later", "prompt-output-type"])
async def test_a_tool_named_like_the_output_tool_ends_the_run_clearly(when: str) -> None:
    clash = AgentTool(
        "final_result", "x", "x", {"type": "object", "properties": {}}, lambda *a: "x"
    )
    fm = FauxModel([tool_reply({"result": 1})])
    if when == "registered-later":
        agent = agent_for(fm, output_type=int)
        agent.tool_store.register(clash)
        run = agent.prompt("n?")
    else:
        agent = agent_for(fm, tools=[clash])
        run = agent.prompt("n?", output_type=int)
    with pytest.raises(AgentRunError, match="OutputSpec"):
        await run


def test_specs_are_built_once_per_type() -> None:
    """Building a pydantic validator costs milliseconds: `prompt(output_type=T)` on every
    run reuses one spec per type (and per JSON Schema text)."""
    from yiemagent.types.output import output_spec

    assert output_spec(Person) is output_spec(Person)
    assert output_spec(list[str]) is output_spec(list[str])
    assert output_spec({"type": "integer"}) is output_spec({"type": "integer"})
    assert output_spec({"type": "integer"}) is not output_spec({"type": "string"})


def test_prompt_sync_takes_an_output_type() -> None:
    fm = FauxModel([tool_reply({"result": 3})])
    agent = agent_for(fm)
    assert agent.prompt_sync("n?", output_type=int).output == 3


class Node(BaseModel):
    name: str
    children: list[Node] = []


TREE_SCHEMA: dict[str, Any] = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["name"],
        }
    },
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
}


@pytest.mark.parametrize("mode", ["tool", "native"])
async def test_a_recursive_output_type_is_an_object_validated_at_every_depth(mode: str) -> None:
    # A self-referencing model's own schema is only a $ref into its $defs: it is offered as
    # the object it is (not wrapped in {"result": ...}), and a value nested three deep is
    # validated throughout, as it is for a JSON Schema whose $defs refer to themselves.
    tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    bad = {"name": "a", "children": [{"name": "b", "children": [{"nom": "c"}]}]}

    def reply(data: dict[str, Any]) -> Any:
        return tool_reply(data) if mode == "tool" else json.dumps(data)

    spec = OutputSpec(Node, mode=mode)  # type: ignore[arg-type]
    assert spec.schema["type"] == "object" and "result" not in spec.schema["properties"]
    fm = FauxModel([reply(bad), reply(tree)])
    out = await agent_for(fm, output_type=spec).prompt("the tree")
    assert out.output == Node.model_validate(tree)
    assert "$.children[0].children[0]" in last_seen_by_model(fm)

    fm = FauxModel([reply({"root": bad}), reply({"root": tree})])
    schema_spec = OutputSpec(TREE_SCHEMA, mode=mode)  # type: ignore[arg-type]
    out = await agent_for(fm, output_type=schema_spec).prompt("the tree")
    assert out.output == {"root": tree}
    assert "$.root.children[0].children[0]" in last_seen_by_model(fm)


@pytest.mark.parametrize(
    "answer",
    [
        '<think>\nThe user wants Ann, who is "31".\n</think>\n\n{"name": "Ann", "age": 31}',
        'Ann is named, {age} is 31.\n</think>\n\n```json\n{"name": "Ann", "age": 31}\n```',
    ],
    ids=["think_tags", "template_opened_the_tag"],
)
async def test_reasoning_written_before_the_json_answer_is_left_out(answer: str) -> None:
    """DeepSeek-R1 and Qwen3 served without a reasoning parser (Ollama, vLLM or llama.cpp
    without one) write their reasoning into the answer text first; the JSON after it is
    the output, not an invalid answer to send back."""
    fm = FauxModel([answer])
    agent = agent_for(fm, output_type=OutputSpec(Person, mode="native"))
    reply = await agent.prompt("who is Ann?")
    assert reply.output == Person(name="Ann", age=31)
    assert fm.call_count == 1
