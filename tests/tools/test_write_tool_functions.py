"""DESIGN R-4.15, seed 000 §15: a writeTool code part that is a whole function definition
(what small models write: `def execute(tool_call_id, args, signal, on_update): ...`) is kept
and called, with each parameter given what it names; one it cannot fill is a readable error
and nothing is written."""

from __future__ import annotations

import inspect
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from yiemagent import ToolStore, validate_arguments_against_schema, write_tool_tool
from yiemagent.tools import WriteToolError, function_source

from ._kit import run_tool, text_of

TEXT_SCHEMA = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "sep": {"type": "string"}},
    "required": ["text"],
}


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def write(folder: Path, **overrides: Any) -> ToolStore:
    store = ToolStore("agent")
    writer = store.register(write_tool_tool(store, folder, isolation="thread"))
    args = {
        "name": "word_count",
        "label": "Word count",
        "description": "Counts the words of text",
        "inputSchema": TEXT_SCHEMA,
        "executeCode": "return str(len(args['text'].split()))",
        **overrides,
    }
    checked = validate_arguments_against_schema(writer.input_schema, args, tool_name="writeTool")
    await run_tool(writer, checked)
    return store


# What the 1.5B wrote in `yiem chat --write-tools` (session 4), and its relatives.
WHOLE_FUNCTIONS = {
    "execute, as the 1.5B wrote it": (
        "def execute(tool_call_id, args, signal, on_update):\n"
        "    text = args['text']\n"
        "    word_count = len(text.split())\n"
        "    return str(word_count)"
    ),
    "annotated, with a docstring and an import": (
        '"""Count words."""\nimport re\n\n'
        "def execute(tool_call_id: str, args: dict, signal, on_update) -> str:\n"
        "    return str(len(re.findall(r'\\S+', args['text'])))"
    ),
    "named for the tool, parameters named for the schema (the 0.5B's shape)": (
        "def word_count(text, sep=None):\n    return len(text.split(sep))"
    ),
    "a helper, then the tool's function": (
        "def _words(text):\n    return text.split()\n\n"
        "def word_count(text):\n    return len(_words(text))"
    ),
    "a single function of another name": "def count(text):\n    return len(text.split())",
    "async": (
        "import asyncio\n\nasync def execute(tool_call_id, args, signal, on_update):\n"
        "    await asyncio.sleep(0)\n    return str(len(args['text'].split()))"
    ),
    "a body reading its argument by name (the 1.5B's celsius_to_fahrenheit)": (
        "return str(len(text.split()))"
    ),
    "keyword-only and **kwargs": (
        "def execute(*, signal, **kwargs):\n    return str(len(kwargs['text'].split()))"
    ),
}


@pytest.mark.parametrize("code", WHOLE_FUNCTIONS.values(), ids=WHOLE_FUNCTIONS.keys())
async def test_r4_15_an_execute_code_that_defines_the_function_is_called(
    tmp_path: Path, code: str
) -> None:
    store = await write(tmp_path, executeCode=code)
    tool = store.tools["word_count"]
    assert text_of(await run_tool(tool, {"text": "the quick brown fox jumps"})) == "5"
    # the file alone loads and works too
    fresh = ToolStore("fresh")
    fresh.load_dir(tmp_path)
    assert text_of(await run_tool(fresh.tools["word_count"], {"text": "a b"})) == "2"


async def test_r4_15_validate_and_prepare_code_as_whole_functions(tmp_path: Path) -> None:
    store = await write(
        tmp_path,
        validateCode=(
            "def validate_arguments(args):\n    if not args['text'].strip():\n"
            "        return 'text is empty'\n    return None"
        ),
        prepareCode="def prepare_arguments(args):\n    return {'text': args.get('words', '')}",
    )
    tool = store.tools["word_count"]
    assert tool.validate_arguments is not None and tool.prepare_arguments is not None
    assert tool.validate_arguments({"text": "  "}) == "text is empty"
    assert tool.validate_arguments({"text": "a"}) is None
    assert tool.prepare_arguments({"words": "a b"}) == {"text": "a b"}


async def test_r4_15_a_function_whose_parameter_names_nothing_is_refused_readably(
    tmp_path: Path,
) -> None:
    with pytest.raises(WriteToolError) as caught:
        await write(tmp_path, executeCode="def word_count(s):\n    return len(s.split())")
    message = str(caught.value)
    assert "'s' is neither an inputSchema property (text, sep)" in message
    assert "execute(tool_call_id, args, signal, on_update)" in message
    assert listing(tmp_path) == []
    with pytest.raises(WriteToolError, match="cannot use await"):
        await write(tmp_path, validateCode="async def check(args):\n    return None")
    assert listing(tmp_path) == []


def test_function_source_shows_the_function_as_it_is_written() -> None:
    shown = function_source("executeCode", "def word_count(text):\n    return 1", TEXT_SCHEMA)
    assert shown.splitlines() == [
        "def execute(tool_call_id, args, signal, on_update):",
        "    def word_count(text):",
        "        return 1",
        "    return word_count(text=args['text'])",
    ]
    assert function_source("validateCode", "return None").splitlines() == [
        "def validate_arguments(args):",
        "    return None",
    ]
    # a body that does more than define functions is a body, as before
    body = "def helper(t):\n    return t\nreturn helper(args['text'])"
    assert function_source("executeCode", body).endswith("    return helper(args['text'])")


_names = st.sampled_from(["alpha", "beta", "gamma", "delta", "tool_call_id", "signal"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=st.lists(_names, unique=True, max_size=4),
    required=st.sets(_names),
    with_default=st.sets(_names),
    given_args=st.dictionaries(_names, st.integers(-5, 5)),
)
async def test_each_parameter_gets_the_argument_it_names(
    params: list[str], required: set[str], with_default: set[str], given_args: dict[str, int]
) -> None:
    """Property: a defined function's parameter gets the schema property of its name (the
    caller's value, else its default), else the part's own argument of that name, else its
    default; when none applies the write is refused and nothing is written."""
    properties = [p for p in ("alpha", "beta", "gamma") if p in params or p in given_args]
    schema = {
        "type": "object",
        "properties": {p: {"type": "integer"} for p in properties},
        "required": sorted(required & set(properties)),
    }
    args = {k: v for k, v in given_args.items() if k in properties}
    for name in schema["required"]:
        args.setdefault(name, 0)
    # parameters with defaults after those without (Python's rule)
    ordered = [p for p in params if p not in with_default] + [
        p for p in params if p in with_default
    ]
    signature = ", ".join(f"{p}=100" if p in with_default else p for p in ordered)
    shown = ", ".join(f"{p!r}: repr({p})" for p in ordered)
    code = f"def probe({signature}):\n    return json.dumps({{{shown}}})"
    own = {"tool_call_id": "call-1", "signal": None}
    fillable = all(p in properties or p in own or p in with_default for p in ordered)
    with tempfile.TemporaryDirectory() as folder:
        if not fillable:
            with pytest.raises(WriteToolError, match="neither an inputSchema property"):
                await write(
                    Path(folder),
                    name="probe",
                    inputSchema=schema,
                    executeCode=code,
                    imports="import json",
                )
            assert listing(Path(folder)) == []
            return
        store = await write(
            Path(folder), name="probe", inputSchema=schema, executeCode=code, imports="import json"
        )
        got = json.loads(text_of(await run_tool(store.tools["probe"], args)))
    for p in ordered:
        if p in properties:
            expected = repr(args.get(p, 100 if p in with_default else None))
        elif p == "tool_call_id":
            expected = repr("call-1")
        elif p == "signal":
            assert got[p].startswith("<") or "AbortSignal" in got[p]
            continue
        else:
            expected = repr(100)
        assert got[p] == expected, (p, code, args)
    assert inspect.isfunction(store.tools["probe"].execute)
