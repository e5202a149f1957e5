"""Transcript repair (DESIGN R-5.10) on the cases of pi-mono's transform-messages tests and
bug reports of other frameworks: errored/aborted turns with their orphaned results, a user
interjecting before a result, retried turns reusing ids, ids from other providers."""

from __future__ import annotations

from yiemagent import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from yiemagent.ai import Model
from yiemagent.ai.providers.openai_completions import openai_tool_call_id
from yiemagent.ai.transform import NO_RESULT_TEXT, anthropic_tool_call_id, transform_messages

CLAUDE = Model(id="claude-sonnet-4", provider="anthropic", api="anthropic-messages")


def assistant(*content: object, stop_reason: str = "toolUse", **kw: str) -> AssistantMessage:
    fields = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4"}
    return AssistantMessage(content=list(content), stop_reason=stop_reason, **{**fields, **kw})  # type: ignore[arg-type]


def result(id: str, text: str = "ok", is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage(id, "bash", [TextContent(text)], is_error=is_error)


def roles(messages: list[Message]) -> list[str]:
    return [m.role for m in messages]


def test_errored_and_aborted_turns_go_with_their_results() -> None:
    """pi-mono errored-assistant-orphaned-tool-results / transform-messages-orphaned-results."""
    messages: list[Message] = [
        UserMessage("First question"),
        assistant(ToolCall("toolu_valid_1", "search", {"q": "t"})),
        result("toolu_valid_1", "Found results"),
        UserMessage("Second question"),
        assistant(
            TextContent("Error occurred"),
            ToolCall("toolu_err", "exec", {}),
            stop_reason="error",
        ),
        result("toolu_err", "[synthetic] error", is_error=True),
        assistant(
            ToolCall("toolu_ab_1", "edit", {"path": "/f"}, partial_json='{"path": "/f", "old'),
            ToolCall("toolu_ab_2", "edit", {}),
            stop_reason="aborted",
        ),
        result("toolu_ab_1", "[ tool interrupted ]", is_error=True),
        result("toolu_ab_2", "output2"),
        UserMessage("Third question"),
    ]
    out = transform_messages(messages, CLAUDE)
    assert roles(out) == ["user", "assistant", "toolResult", "user", "user"]
    assert [m.tool_call_id for m in out if isinstance(m, ToolResultMessage)] == ["toolu_valid_1"]


def test_a_retried_turn_reusing_the_errored_turns_id() -> None:
    messages: list[Message] = [
        UserMessage("run a command"),
        assistant(ToolCall("call_1", "bash", {"c": "ls"}), stop_reason="error"),
        result("call_1", "synthetic", is_error=True),
        assistant(ToolCall("call_1", "bash", {"c": "ls"})),
        result("call_1", "file1.txt"),
    ]
    out = transform_messages(messages, CLAUDE)
    assert roles(out) == ["user", "assistant", "toolResult"]
    assert out[1].tool_calls[0].id == "call_1"  # type: ignore[union-attr]
    assert out[2].tool_call_id == "call_1" and out[2].content[0].text == "file1.txt"  # type: ignore[union-attr]


def test_user_interjects_and_the_result_never_comes() -> None:
    """pi-mono tool-call-without-result: "Never mind, just tell me what is 2+2?"."""
    messages: list[Message] = [
        UserMessage("Please calculate 25 * 18 using the calculate tool."),
        assistant(ToolCall("toolu_1", "calculate", {"expression": "25 * 18"})),
        UserMessage("Never mind, just tell me what is 2+2?"),
    ]
    out = transform_messages(messages, CLAUDE)
    assert roles(out) == ["user", "assistant", "toolResult", "user"]
    synthetic = out[2]
    assert isinstance(synthetic, ToolResultMessage)
    assert synthetic.tool_call_id == "toolu_1" and synthetic.tool_name == "calculate"
    assert synthetic.is_error and synthetic.content == [TextContent(NO_RESULT_TEXT)]
    assert out[3] is messages[2]


def test_results_out_of_order_and_one_missing_among_parallel_calls() -> None:
    messages: list[Message] = [
        UserMessage("go"),
        assistant(ToolCall("a", "bash", {}), ToolCall("b", "bash", {}), ToolCall("c", "bash", {})),
        result("c", "C"),
        result("a", "A"),
        UserMessage("steer"),
    ]
    out = transform_messages(messages, CLAUDE)
    assert [
        (m.tool_call_id, m.content[0].text) for m in out if isinstance(m, ToolResultMessage)
    ] == [  # type: ignore[union-attr]
        ("a", "A"),
        ("b", NO_RESULT_TEXT),
        ("c", "C"),
    ]
    assert roles(out)[-1] == "user"


def test_kimi_and_openai_responses_ids_are_normalised_for_each_provider() -> None:
    """Kimi/Moonshot ids like `functions.Bash:0`, OpenAI Responses `call_x|fc_...` ids."""
    ids = ["functions.Bash:0", "functions.Bash:1", "call_abc|fc_" + "Zz+/=" * 100]
    messages: list[Message] = [
        UserMessage("go"),
        assistant(*(ToolCall(i, "bash", {}) for i in ids), provider="moonshot", model="kimi-k2"),
        *(result(i, str(n)) for n, i in enumerate(ids)),
    ]
    for normalize, limit in ((anthropic_tool_call_id, 64), (openai_tool_call_id, 40)):
        out = transform_messages(messages, CLAUDE, normalize_tool_call_id=normalize)
        new = [c.id for c in out[1].tool_calls]  # type: ignore[union-attr]
        assert len(set(new)) == 3
        assert all(0 < len(i) <= limit and normalize(i) == i for i in new)
        assert [(m.tool_call_id, m.content[0].text) for m in out[2:]] == list(  # type: ignore[union-attr]
            zip(new, ["0", "1", "2"], strict=True)
        )


def test_thinking_rules_for_same_and_other_models() -> None:
    """pi-mono transform-messages: same model keeps thinking (also redacted and empty);
    another model's thinking becomes text, its redacted and empty thinking is dropped."""
    same = assistant(
        ThinkingContent("", signature="s0"),
        ThinkingContent("deep", signature="s1"),
        ThinkingContent("", signature="opaque", redacted=True),
        TextContent("answer"),
        stop_reason="stop",
    )
    other = assistant(
        ThinkingContent("  "),
        ThinkingContent("plan", signature="x"),
        ThinkingContent("", signature="opaque", redacted=True),
        TextContent("answer"),
        stop_reason="stop",
        provider="openai",
        model="gpt-5",
    )
    only_foreign_redacted = assistant(
        ThinkingContent("", signature="opaque", redacted=True),
        stop_reason="stop",
        provider="openai",
        model="gpt-5",
    )
    out = transform_messages([UserMessage("q"), same, other, only_foreign_redacted], CLAUDE)
    assert out[1] is same
    assert out[2].content == [TextContent("plan"), TextContent("answer")]  # type: ignore[union-attr]
    assert len(out) == 3  # an assistant message left empty is dropped
