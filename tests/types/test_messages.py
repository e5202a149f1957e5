"""DESIGN §3: the message union round-trips through JSON losslessly; defaults as specified."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, strategies as st

from yiemagent import (
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
    message_from_dict,
    message_to_dict,
    messages_from_json,
    messages_to_json,
)
from yiemagent.errors import MessageInputError
from yiemagent.types.messages import now_ms

EVERY_MESSAGE = [
    UserMessage("What is 17 * 23?"),
    UserMessage([TextContent("look"), ImageContent("iVBORw0KGgo=", "image/png")], timestamp=5),
    AssistantMessage(
        [
            ThinkingContent("multiply", signature="sig-1"),
            TextContent("Let me compute."),
            ToolCall("call_1", "calculator", {"expression": "17 * 23", "nested": [1, {"a": None}]}),
        ],
        api="openai-completions",
        provider="openai",
        model="gpt-4o-mini",
        usage=Usage(10, 5, 2, 1, 18, Cost(0.1, 0.2, 0.01, 0.02, 0.33)),
        stop_reason="toolUse",
    ),
    AssistantMessage([], stop_reason="error", error_message="boom"),
    ToolResultMessage(
        "call_1",
        "calculator",
        [TextContent("391")],
        details={"steps": ["17*23"]},
        usage=Usage(1, 1),
        added_tool_names=["newTool"],
        is_error=False,
    ),
    ToolResultMessage("call_2", "x", [TextContent("bad")], is_error=True),
    BashExecutionMessage("ls", "a\nb", 0, cancelled=False, truncated=True),
    CompactionSummaryMessage("earlier we talked", tokens_before=1200),
    BranchSummaryMessage("another branch", from_id="m7"),
]


@pytest.mark.parametrize("message", EVERY_MESSAGE, ids=lambda m: m.role)
def test_every_message_type_round_trips_through_a_dict(message: object) -> None:
    data = message_to_dict(message)  # type: ignore[arg-type]
    assert json.loads(json.dumps(data)) == data
    assert message_from_dict(data) == message


def test_a_whole_transcript_round_trips_through_json() -> None:
    encoded = messages_to_json(EVERY_MESSAGE)  # type: ignore[arg-type]
    decoded = messages_from_json(encoded)
    assert decoded == EVERY_MESSAGE
    assert [type(m) for m in decoded] == [type(m) for m in EVERY_MESSAGE]


def test_defaults_are_as_designed() -> None:
    message = AssistantMessage([TextContent("hi")])
    assert message.stop_reason == "stop"
    assert message.usage == Usage()
    assert (message.api, message.provider, message.model) == ("", "", "")
    assert isinstance(message.timestamp, int) and message.timestamp > 1_600_000_000_000
    result = ToolResultMessage("id", "name")
    assert result.details == {} and result.is_error is False and result.role == "toolResult"


def test_user_message_text_is_stored_as_one_text_block() -> None:
    assert UserMessage("hello").content == [TextContent("hello")]


def test_text_given_as_an_answer_or_a_tool_result_is_stored_as_text_blocks() -> None:
    # as UserMessage: a `str` content (or a `str` in the list) was kept as it was, and every
    # provider then sent the result as "(no output)" and dropped the answer
    assert ToolResultMessage("c1", "echo", "echoed").content == [TextContent("echoed")]
    assert AssistantMessage("done").content == [TextContent("done")]
    mixed = AssistantMessage(["a", ToolCall("c1", "echo", {})])
    assert mixed.content == [TextContent("a"), ToolCall("c1", "echo", {})]
    result = ToolResultMessage("c1", "echo", ["one", ImageContent("aGk=", "image/png")])
    assert result.content == [TextContent("one"), ImageContent("aGk=", "image/png")]


def test_unknown_role_is_rejected_with_one_clear_error() -> None:
    with pytest.raises(MessageInputError, match=r"^not a message: .*'wizard'") as caught:
        message_from_dict({"role": "wizard", "content": []})
    assert "\n" not in str(caught.value)


def test_the_minimal_forms_the_constructors_take_are_read() -> None:
    # what `UserMessage("hi")` and `AssistantMessage("x")` accept, a dict may say too
    before = now_ms()
    hello = message_from_dict({"role": "user", "content": "hi"})
    assert isinstance(hello, UserMessage) and hello.content == [TextContent("hi")]
    assert before <= hello.timestamp <= now_ms()
    listed = message_from_dict({"role": "user", "content": ["a", {"type": "text", "text": "b"}]})
    assert isinstance(listed, UserMessage)
    assert listed.content == [TextContent("a"), TextContent("b")]
    stamped = message_from_dict({"role": "user", "content": "hi", "timestamp": 7})
    assert isinstance(stamped, UserMessage) and stamped.timestamp == 7
    said = message_from_dict({"role": "assistant", "content": "x"})
    assert isinstance(said, AssistantMessage) and said.content == [TextContent("x")]


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ({"role": "user"}, r"user\.content: Field required"),
        ({"role": "user", "content": "x", "timestamp": "soon"}, r"user\.timestamp"),
        ({"content": "x"}, r"no 'role'"),
        ({"role": "toolResult", "content": "ok"}, r"toolResult\.tool_call_id.*\(and 1 more\)"),
    ],
)
def test_a_bad_message_dict_is_one_line_naming_the_field(data: dict[str, Any], says: str) -> None:
    with pytest.raises(MessageInputError, match=says) as caught:
        message_from_dict(data)
    assert "\n" not in str(caught.value)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=10,
)


@given(
    role=st.sampled_from(["user", "assistant", "toolResult", "wizard"]) | json_values,
    rest=st.dictionaries(st.sampled_from(["content", "timestamp", "tool_call_id"]), json_values),
)
def test_any_dict_is_a_message_or_one_message_input_error(
    role: object, rest: dict[str, Any]
) -> None:
    data = {"role": role, **rest}
    try:
        message = message_from_dict(data)
    except MessageInputError as exc:
        assert str(exc) and "\n" not in str(exc)
    else:
        assert message.role == role


@given(
    text=st.text(),
    arguments=st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    call_id=st.text(max_size=12),
)
def test_arbitrary_content_round_trips(
    text: str, arguments: dict[str, object], call_id: str
) -> None:
    message = AssistantMessage([TextContent(text), ToolCall(call_id, "tool", arguments)])
    assert messages_from_json(messages_to_json([message])) == [message]


def test_api_keys_stay_out_of_reprs() -> None:
    from yiemagent import AgentLoopConfig, Model, StreamOptions

    secret = "sk-test-0123456789abcdef"
    model = Model(id="m", provider="p", api="faux")
    assert secret not in repr(StreamOptions(api_key=secret))
    assert secret not in repr(AgentLoopConfig(model=model, api_key=secret))


@pytest.mark.parametrize(
    ("blocks", "text"),
    [
        ([TextContent("Hello, "), TextContent("world")], "Hello, world"),
        ([TextContent("Let me check."), ToolCall("c1", "look", {}), TextContent("Done.")],
         "Let me check.\n\nDone."),
        ([TextContent("First."), ThinkingContent("hmm"), TextContent("Second.")],
         "First.\n\nSecond."),
        ([TextContent(""), ToolCall("c1", "look", {}), TextContent("Only this.")], "Only this."),
        ([ToolCall("c1", "look", {})], ""),
    ],
    ids=["pieces", "around-a-call", "around-thinking", "empty-before-a-call", "no-text"],
)  # fmt: skip
def test_an_answers_text_joins_pieces_and_separates_paragraphs(
    blocks: list[TextContent | ThinkingContent | ToolCall], text: str
) -> None:
    """Text blocks side by side are one text in pieces (Anthropic splits an answer at its
    citations; OpenAI's `output_text` joins its parts with nothing); blocks a call or a
    thought stands between are paragraphs (pydantic-ai's `ModelResponse.text`). Before,
    "Let me check." and "Done." around a call read "Let me check.Done."."""
    assert AssistantMessage(blocks).text == text


def test_the_details_docstring_names_every_key_the_code_writes() -> None:
    """Every key written into an `AssistantMessage.details` (`message.details[KEY] = ...` or
    `message.details = {**message.details, KEY: ...}`) is named in the field's docstring."""
    import ast
    import re
    from pathlib import Path

    import yiemagent

    src = Path(yiemagent.__file__).parent
    texts = {path: path.read_text(encoding="utf-8") for path in src.rglob("*.py")}
    constants = {
        name: value
        for text in texts.values()
        for name, value in re.findall(r'^([A-Z_]+) = "([a-z_]+)"$', text, flags=re.MULTILINE)
    }
    written: set[str] = set()
    for text in texts.values():
        for key in re.findall(r'message\.details\[("?\w+"?)\] =', text):
            written.add(key.strip('"') if key.startswith('"') else constants[key])
        for merged in re.findall(r"message\.details = \{\s*\*\*message\.details,\s*(\w+):", text):
            written.add(constants[merged])
    assert "local_rules" in written and len(written) >= 3  # the scan finds the writers

    tree = ast.parse(texts[src / "types" / "messages.py"])
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "AssistantMessage")
    body = cls.body
    at = next(
        i
        for i, node in enumerate(body)
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "details"
    )
    doc = body[at + 1]
    assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)
    unnamed = sorted(key for key in written if f'"{key}"' not in doc.value.value)
    assert not unnamed, f"AssistantMessage.details does not name {unnamed}"
