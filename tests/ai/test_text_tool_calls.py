"""Tool calls written as text (DESIGN §21): each format, text around calls kept, and the
parse independent of how the stream is chunked (hypothesis)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings, strategies as st

from yiemagent.ai._text_tool_calls import (
    TextPiece,
    TextToolCallParser,
    ToolCallPiece,
    join_text,
)

Pieces = list[TextPiece | ToolCallPiece]


def parse(text: str, names: list[str] | None = None) -> Pieces:
    parser = TextToolCallParser(names)
    return join_text([*parser.feed(text), *parser.finish()])


def parse_chunked(chunks: list[str], names: list[str] | None = None) -> Pieces:
    parser = TextToolCallParser(names)
    out: Pieces = []
    for chunk in chunks:
        out.extend(parser.feed(chunk))
    out.extend(parser.finish())
    return join_text(out)


def call(name: str, **arguments: Any) -> ToolCallPiece:
    return ToolCallPiece(name, json.dumps(arguments))


def test_hermes_tags_with_text_around() -> None:
    text = (
        "Let me check.\n<tool_call>\n"
        '{"name": "get_time", "arguments": {"place": "London"}}\n</tool_call>\n'
        '<tool_call>{"name": "calculator", "arguments": {"expression": "365 * 24"}}'
        "</tool_call> Done."
    )
    assert parse(text) == [
        TextPiece("Let me check.\n"),
        call("get_time", place="London"),
        TextPiece("\n"),
        call("calculator", expression="365 * 24"),
        TextPiece(" Done."),
    ]


def test_hermes_tag_left_open_at_the_end_and_two_objects_in_one_tag() -> None:
    text = '<tool_call>\n{"name": "a", "arguments": {}}\n{"name": "b", "arguments": {"x": 1}}'
    assert parse(text) == [call("a"), call("b", x=1)]


def test_llama3_json_reply_and_python_tag() -> None:
    assert parse('{"name": "get_time", "parameters": {"place": "Paris"}}', ["get_time"]) == [
        call("get_time", place="Paris")
    ]
    assert parse('<|python_tag|>{"name": "f", "parameters": {"a": 1}}') == [call("f", a=1)]


def test_llama_calls_on_one_line_separated_by_semicolons() -> None:
    """Llama 3.2 writes parallel calls as `{...}; {...}`: only the first was a call, the
    rest came out as text (ai-dynamo/dynamo#8732, fixed by its PR #9536)."""
    text = '{"name": "f", "parameters": {"a": 1}}; {"name": "g", "parameters": {}}'
    assert parse(text, ["f", "g"]) == [call("f", a=1), call("g")]
    assert parse_chunked([text[:38], text[38:40], text[40:]], ["f", "g"]) == parse(text, ["f", "g"])
    # what follows the semicolon is not a call: the call, then text as before
    assert parse('{"name": "f", "parameters": {}}; done', ["f"]) == [
        call("f"),
        TextPiece("; done"),
    ]


def test_llama4_python_start_and_end_tokens() -> None:
    """Llama 4 wraps its JSON call in `<|python_start|>` ... `<|python_end|>`, which a
    server without its parser leaves in the content."""
    text = 'Let me search.<|python_start|>{"name": "f", "parameters": {"q": "news"}}<|python_end|>'
    assert parse(text, ["f"]) == [TextPiece("Let me search."), call("f", q="news")]
    assert parse('<|python_start|>{"name": "f", "parameters": {}}', ["f"]) == [call("f")]


def test_llama_python_calls_on_a_line() -> None:
    """Llama 3.2 answers with its calls as a Python list: `[f(x=1), g(y="a")]`; each must
    name a known tool and give keyword arguments that are literals, else the line is text."""
    text = (
        "Checking both.\n"
        "[get_time(place='Oslo', offset=-1), calculator(expression=\"[1, 2]\", exact=True)]\n"
        "Done."
    )
    assert parse(text, ["get_time", "calculator"]) == [
        TextPiece("Checking both.\n"),
        call("get_time", place="Oslo", offset=-1),
        call("calculator", expression="[1, 2]", exact=True),
        TextPiece("\nDone."),
    ]
    for prose in (
        "[unknown_tool(x=1)]",  # not a tool
        "[get_time('Oslo')]",  # positional: its parameter is not named
        "[get_time(place=open('/etc/passwd').read())]",  # not a literal: nothing runs
        "[link](https://example.com) is prose",
        "[1, 2, 3] are numbers",
    ):
        assert parse(prose, ["get_time"]) == [TextPiece(prose)], prose


def test_gemma_python_calls_in_a_tool_code_block() -> None:
    """Gemma writes its calls as Python in a `tool_code` block, one a line, at times inside
    `print(...)` and named through `default_api.`; code that is not calls of known tools
    stays the code block it is."""
    text = (
        "Let me look.\n```tool_code\nprint(default_api.get_time(place='Oslo'))\n"
        'calculator(expression="2 * 21")\n```\nOne moment.'
    )
    assert parse(text, ["get_time", "calculator"]) == [
        TextPiece("Let me look.\n"),
        call("get_time", place="Oslo"),
        call("calculator", expression="2 * 21"),
        TextPiece("\nOne moment."),
    ]
    code = '```tool_code\nimport os\nos.remove("notes.txt")\n```'
    assert parse(code, ["get_time"]) == [TextPiece(code)]


def test_mistral_list_and_args_forms() -> None:
    text = '[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]'
    assert parse(text) == [call("f", a=1), call("g")]
    assert parse('[TOOL_CALLS]f[ARGS]{"a": 2}[TOOL_CALLS]g[CALL_ID]abc123def[ARGS]{}') == [
        call("f", a=2),
        call("g"),
    ]


def test_fenced_json_call_and_a_code_block_that_is_not_one() -> None:
    text = 'Sure:\n```json\n{"name": "f", "arguments": {"a": [1, 2]}}\n```\nok'
    assert parse(text, ["f"]) == [TextPiece("Sure:\n"), call("f", a=[1, 2]), TextPiece("\nok")]
    code = 'Here:\n```python\nprint({"name": "f", "arguments": {}})\n```\n'
    assert parse(code, ["f"]) == [TextPiece(code)]
    data = '```json\n{"name": "Ada", "age": 36}\n```'
    assert parse(data, ["f"]) == [TextPiece(data)]


def test_a_fence_inside_a_fenced_calls_string_value_does_not_close_it() -> None:
    """Only a ``` that opens a line closes the block (found by the chunking property)."""
    text = '```json\n{"name": "f", "arguments": {"a": "x```y"}}\n```'
    assert parse(text, ["f"]) == [call("f", a="x```y")]


def test_json_that_is_not_a_call_stays_text() -> None:
    for text in (
        'The answer is {"name": "f", "arguments": {}} inline.',  # not at a line start
        '{"name": "unknown_tool", "arguments": {}}',  # names no tool
        '{"city": "Paris"}',
        "{x} and { } are sets",
        '{"name": "f", "arguments": {"a": 1}',  # never closed
    ):
        assert parse(text, ["f"]) == [TextPiece(text)], text


def test_a_broken_tagged_call_keeps_its_name_and_raw_arguments() -> None:
    # (a trailing comma, `{"a": 1,}`, is read since Python-literal calls are: its meaning
    # is plain)
    [piece] = parse('<tool_call>{"name": "f", "arguments": {"a": 1, "b": }}</tool_call>')
    assert isinstance(piece, ToolCallPiece) and piece.name == "f"
    assert piece.arguments.startswith('{"a": 1, "b": ')  # the pipeline reports it


def test_a_tagged_call_closed_once_too_often_is_still_the_call() -> None:
    # langchain-qwq#30: Qwen models served by llama.cpp or Ollama write an extra closing
    # brace after the call; the whole <tool_call> block was shown to the user as text and
    # the call never ran. The stray closers after a complete call are dropped.
    text = (
        'Checking.<tool_call>\n{"name": "get_time", "arguments": {"place": "Oslo"}}}\n'
        '</tool_call><tool_call>{"name": "a", "arguments": {}}}]\n{"name": "b", '
        '"arguments": {"x": 1}}</tool_call>'
    )
    assert parse(text) == [
        TextPiece("Checking."),
        call("get_time", place="Oslo"),
        call("a"),
        call("b", x=1),
    ]


def test_a_closing_tag_inside_a_string_value_does_not_end_the_call() -> None:
    """vllm#45167: the first literal </tool_call> cut a call whose arguments mention the
    tag (a file being written, a document quoted) and its rest became text."""
    text = (
        '<tool_call>{"name": "write", "arguments": {"text": "end with </tool_call> \\" ok"}}'
        "</tool_call> done"
    )
    expected = [call("write", text='end with </tool_call> " ok'), TextPiece(" done")]
    assert parse(text) == expected
    assert parse_chunked([text[:30], text[30:60], text[60:]]) == expected
    # quotes out of balance: the call still ends at the first closing tag, as before
    broken = '<tool_call>{"name": "f", "arguments": {"a": "x}}</tool_call> after'
    [piece, rest] = parse(broken)
    assert isinstance(piece, ToolCallPiece) and piece.name == "f" and rest == TextPiece(" after")


def test_arguments_given_as_a_json_string_and_openai_shape() -> None:
    text = '<tool_call>{"name": "f", "arguments": "{\\"a\\": 1}"}</tool_call>'
    assert parse(text) == [call("f", a=1)]
    shaped = '<tool_call>{"type": "function", "function": {"name": "f", "arguments": {}}}'
    assert parse(shaped) == [call("f")]


def test_qwen3_coder_xml_in_a_tag_is_the_call() -> None:
    """Qwen3-Coder writes its calls as XML in the Hermes tags; a server that does not parse
    that format (llama.cpp without its parser, an old vLLM) leaves it in the content."""
    text = (
        'I will look.\n<tool_call>\n<function=search>\n<parameter=query>\nsay "hi" {ok}\n'
        "</parameter>\n<parameter=limit>\n5\n</parameter>\n</function>\n</tool_call>\nThen"
    )
    assert parse(text) == [
        TextPiece("I will look.\n"),
        ToolCallPiece("search", json.dumps({"query": 'say "hi" {ok}', "limit": "5"})),
        TextPiece("\nThen"),
    ]


def test_qwen3_coder_xml_with_closers_left_out_and_two_functions() -> None:
    text = (
        "<tool_call><function=a><parameter=x>1<parameter=y>two\nlines</function>"
        "<function=b></function></tool_call>"
        "<tool_call>\n<function=c>\n<parameter=z>\nend"  # cut off: no closers at all
    )
    assert parse(text) == [
        ToolCallPiece("a", json.dumps({"x": "1", "y": "two\nlines"})),
        ToolCallPiece("b", "{}"),
        ToolCallPiece("c", json.dumps({"z": "end"})),
    ]


def test_llama_function_tags_and_bare_qwen3_coder_xml() -> None:
    """Llama 3.1 writes a custom tool's call as `<function=f>{json}</function>`; Qwen3-Coder
    sometimes leaves out the `<tool_call>` around its XML."""
    text = (
        'Checking.\n<function=search>{"query": "oslo", "limit": 3}</function>\n'
        "<function=search>\n<parameter=query>\nbergen\n</parameter>\n</function> ok\n"
        "<function=search>{'query': 'literal'}</function>"
        "<function=search>{not json</function>"
    )
    assert parse(text) == [
        TextPiece("Checking.\n"),
        call("search", query="oslo", limit=3),
        TextPiece("\n"),
        call("search", query="bergen"),
        TextPiece(" ok\n"),
        call("search", query="literal"),
        ToolCallPiece("search", "{not json"),
    ]
    for prose in ("<function=two words>{}</function>", "<function=f> just words</function>"):
        assert parse(prose) == [TextPiece(prose)]


def test_xml_in_a_tag_that_is_no_function_stays_text() -> None:
    for text in (
        "<tool_call><note>not a call</note></tool_call>",
        "<tool_call><function=two words></function></tool_call>",
    ):
        assert parse(text) == [TextPiece(text)]


# ── properties ──────────────────────────────────────────────────────────────

_CALLS = [
    '<tool_call>{"name": "f", "arguments": {"a": "x}{"}}</tool_call>',
    '<tool_call>\n<function=g>\n<parameter=a>\n"x}{\n</parameter>\n</function>\n</tool_call>',
    '<function=f>{"a": "</function"}</function>',
    '{"name": "f", "parameters": {"a": 1}}',
    '{"name": "f", "parameters": {}}; {"name": "g", "parameters": {"e": ";"}}',
    '```json\n{"name": "g", "arguments": {}}\n```',
    '[TOOL_CALLS] [{"name": "f", "arguments": {"b": "\\""}}]',
    '[TOOL_CALLS]g[ARGS]{"c": [1, {"d": 2}]}',
    "<|python_tag|>",
]
_FRAGMENTS = [
    *_CALLS,
    "\n",
    " ",
    "word",
    "{",
    "}",
    '"',
    '<tool_call>{"name": "f", "arguments": {"t": "</tool_call>"}}',
    "`",
    "```",
    "```py\n",
    "<",
    "<tool_",
    "</tool_call>",
    "[TOOL",
    "[ARGS]",
    "<function=",
    "<func",
    "</function>",
    "<|python_start|>",
    "<|python_end|>",
    "<|python_",
    "[f(a=1)]",
    "[g(",
    "```tool_code\n",
    "g(b=2)",
    "[",
    ")]",
    '{"name": "f"',
    ', "arguments": {}}',
    "é€",
    ";",
    "; ",
    "<think>",
    "</think>",
    "<thi",
    "</thi",
]


@st.composite
def text_and_chunks(draw: st.DrawFn) -> tuple[str, list[str]]:
    text = "".join(draw(st.lists(st.sampled_from(_FRAGMENTS), max_size=12)))
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    chunks, last = [], 0
    for cut in [*cuts, len(text)]:
        chunks.append(text[last:cut])
        last = cut
    return text, chunks


@settings(max_examples=400, deadline=None)
@given(text_and_chunks(), st.sampled_from([None, ["f", "g"], ["g"]]))
def test_any_chunking_gives_the_same_pieces_as_one_chunk(
    case: tuple[str, list[str]], names: list[str] | None
) -> None:
    text, chunks = case
    assert parse_chunked(chunks, names) == parse(text, names)


@settings(max_examples=300, deadline=None)
@given(text_and_chunks())
def test_text_without_calls_comes_back_unchanged(case: tuple[str, list[str]]) -> None:
    """With no tool known, untagged JSON is never a call; the tags are left out here, so
    every character must come back as text, in order."""
    text = case[0]
    for tagged in ("<tool_call>", "[TOOL_CALLS]", "<|python_tag|>", "<function="):
        text = text.replace(tagged, "")
    specials = ("<|python_start|>", "<|python_end|>")  # special tokens, never text
    while any(special in text for special in specials):  # a removal may join another
        for special in specials:
            text = text.replace(special, "")
    half = len(text) // 2
    pieces = parse_chunked([text[:half], text[half:]], [])
    assert all(isinstance(p, TextPiece) for p in pieces)
    assert "".join(p.text for p in pieces if isinstance(p, TextPiece)) == text


_PROSE = st.text(st.sampled_from("ab .,!?\n"), max_size=12)
_ARGS = st.dictionaries(
    st.sampled_from(["a", "b", "path"]),
    st.one_of(st.integers(-5, 5), st.text(st.sampled_from('xy"}{ \\<>`'), max_size=6)),
    max_size=3,
)


@st.composite
def calls_in_prose(draw: st.DrawFn) -> tuple[str, Pieces]:
    """A reply of prose and calls in every format, and the pieces it must give."""
    text = ""
    expected: Pieces = []
    for _ in range(draw(st.integers(1, 4))):
        prose = draw(_PROSE)
        name = draw(st.sampled_from(["f", "g"]))
        arguments = draw(_ARGS)
        args = json.dumps(arguments)
        forms = [
            *("tag", "bare", "fence", "mistral", "mistral_args", "xml", "function", "python"),
            "tool_code",
        ]
        form = draw(st.sampled_from(forms))
        if form == "function" and "</function>" in args:
            form = "tag"  # a plain search finds the block's end
        if form == "xml":  # every value a string: XML has no other kind
            arguments = {key: str(value) for key, value in arguments.items()}
            args = json.dumps(arguments)
        if form in ("bare", "fence", "python", "tool_code") and prose and not prose.endswith("\n"):
            prose += "\n"  # untagged JSON is a call only at the start of a line
        written = {
            "tag": f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>',
            "bare": f'{{"name": "{name}", "parameters": {args}}}',
            "fence": f'```json\n{{"name": "{name}", "arguments": {args}}}\n```',
            "mistral": f'[TOOL_CALLS] [{{"name": "{name}", "arguments": {args}}}]',
            "mistral_args": f"[TOOL_CALLS]{name}[ARGS]{args}",
            "xml": f"<tool_call>\n<function={name}>\n"
            + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in arguments.items())
            + "</function>\n</tool_call>",
            "function": f"<function={name}>{args}</function>",
            "python": f"[{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})]",
            "tool_code": "```tool_code\n"
            + f"{name}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})\n```",
        }[form]
        text += prose + written
        expected += [TextPiece(prose), ToolCallPiece(name, args)]
    tail = draw(_PROSE)
    tail = "\n" + tail if tail else ""
    return text + tail, join_text([*expected, TextPiece(tail)])


@settings(max_examples=300, deadline=None)
@given(calls_in_prose(), st.data())
def test_calls_in_every_format_are_found_whatever_the_chunks(
    case: tuple[str, Pieces], data: st.DataObject
) -> None:
    text, expected = case
    cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
    chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    got = parse_chunked(chunks, ["f", "g"])
    normalised: Pieces = [
        ToolCallPiece(p.name, json.dumps(json.loads(p.arguments)))
        if isinstance(p, ToolCallPiece)
        else p
        for p in got
    ]
    assert normalised == expected


_TRICKY = st.lists(
    st.sampled_from(["</tool_call>", "</tool_", '"', "\\", '\\"', "{", "}", "[", "]", "x", " "]),
    max_size=6,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b"]), _TRICKY, max_size=2), st.data())
def test_a_tag_and_a_bare_line_read_the_same_call_whatever_its_strings_hold(
    arguments: dict[str, str], data: st.DataObject
) -> None:
    """The tag's end (the first `</tool_call>` outside a string) and a bare object's end
    (its closing brace outside a string) are found by one string-state scanner: the same
    arguments, holding closing tags, quotes, escapes and brackets in their strings, give
    the same call written either way, however the stream is cut."""
    args = json.dumps(arguments)
    expected = [ToolCallPiece("f", args), TextPiece("\ndone")]
    for text in (
        f'<tool_call>{{"name": "f", "arguments": {args}}}</tool_call>\ndone',
        f'{{"name": "f", "parameters": {args}}}\ndone',
    ):
        cuts = sorted(data.draw(st.lists(st.integers(0, len(text)), max_size=10)))
        chunks = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        assert parse_chunked(chunks, ["f"]) == expected, text


_literal_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=60, deadline=None)
@given(
    arguments=st.dictionaries(st.text(max_size=6), _literal_values, max_size=3),
    cuts=st.lists(st.integers(0, 400), max_size=4),
)
def test_a_tagged_call_written_as_a_python_literal_is_the_call(
    arguments: dict[str, Any], cuts: list[int]
) -> None:
    """A small model wrote `<tool_call>{'name': 'f', 'arguments': {'a': True}}</tool_call>`
    (single quotes, True/None): the tag was shown as text and no call was made. It is read
    with `ast.literal_eval` (literals only), whatever the chunks."""
    text = f"Sure. <tool_call>{ {'name': 'lookup', 'arguments': arguments}!r}</tool_call> ok"
    bounds = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[a:b] for a, b in zip([0, *bounds], [*bounds, len(text)], strict=True)]
    expected = [
        TextPiece("Sure. "),
        ToolCallPiece("lookup", json.dumps(arguments, ensure_ascii=False)),
        TextPiece(" ok"),
    ]
    assert parse_chunked([c for c in chunks if c]) == expected


def test_a_tagged_call_that_is_code_not_a_literal_stays_unread() -> None:
    text = "<tool_call>{'name': 'f', 'arguments': {'a': __import__('os').getcwd()}}</tool_call>"
    assert all(not isinstance(piece, ToolCallPiece) or piece.name != "f" or
               "getcwd" in piece.arguments for piece in parse(text))  # fmt: skip
