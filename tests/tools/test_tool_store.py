"""DESIGN R-4.12: one ToolStore per agent; names unique unless `replace=True`."""

from __future__ import annotations

from typing import Any

import pytest

from yiemagent import AgentTool, ConfigError, ToolStore


def make_tool(name: str, text: str = "ok", schema: dict[str, Any] | None = None) -> AgentTool:
    return AgentTool(
        name=name,
        label=name.title(),
        description=f"The {name} tool",
        input_schema=schema or {"type": "object", "properties": {}},
        execute=lambda tool_call_id, args, signal, on_update: text,
    )


def test_r4_12_register_keeps_order_and_rejects_duplicates() -> None:
    store = ToolStore("agent")
    a, b = make_tool("a"), make_tool("b")
    assert store.register(a) is a
    store.register(b)
    assert list(store.tools) == ["a", "b"]
    assert store.get("a") is a and store.get("zzz") is None
    assert "a" in store and len(store) == 2 and list(store) == ["a", "b"]
    with pytest.raises(ConfigError, match=r"already registered.*replace=True"):
        store.register(make_tool("a"))
    assert store.tools["a"] is a


def test_r4_12_replace_keeps_position() -> None:
    store = ToolStore()
    store.register(make_tool("a"))
    store.register(make_tool("b"))
    newer = make_tool("a", "new")
    store.register(newer, replace=True)
    assert list(store.tools) == ["a", "b"]
    assert store.tools["a"] is newer


def test_r4_12_stores_are_isolated() -> None:
    first, second = ToolStore("one"), ToolStore("two")
    first.register(make_tool("a"))
    second.register(make_tool("b"))
    assert list(first.tools) == ["a"] and list(second.tools) == ["b"]
    first.clear()
    assert len(first) == 0 and list(second.tools) == ["b"]


def test_r4_12_unregister() -> None:
    store = ToolStore()
    tool = store.register(make_tool("a"))
    assert store.unregister("a") is tool
    assert store.unregister("a") is None
    assert len(store) == 0


def test_r4_12_tools_is_a_read_only_snapshot() -> None:
    store = ToolStore()
    store.register(make_tool("a"))
    snapshot = store.tools
    with pytest.raises(TypeError):
        snapshot["b"] = make_tool("b")  # type: ignore[index]
    store.register(make_tool("b"))
    assert list(snapshot) == ["a"]  # a reader's snapshot never changes under it
    assert list(store.tools) == ["a", "b"]


def test_r4_12_register_checks_name_and_schema() -> None:
    store = ToolStore()
    tool = make_tool("fine")
    tool.name = "../escape"
    with pytest.raises(ConfigError, match="invalid tool name"):
        store.register(tool)
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        store.register(make_tool("bad", schema={"type": "object", "required": "x"}))
    with pytest.raises(ConfigError, match="not a tool"):
        store.register("not a tool")  # type: ignore[arg-type]
    assert len(store) == 0


@pytest.mark.parametrize("kind", ["string", "array", ["string", "null"]])
def test_register_refuses_a_schema_no_arguments_object_can_meet(kind: object) -> None:
    # A call's arguments are one JSON object; OpenAI-style APIs refuse every request
    # that lists a tool whose parameters are of another type.
    store = ToolStore()
    with pytest.raises(ConfigError, match=r'must describe the arguments object .*"type": '):
        store.register(make_tool("bad", schema={"type": kind}))
    store.register(make_tool("untyped", schema={}))
    store.register(make_tool("nullable", schema={"type": ["object", "null"]}))
    assert list(store) == ["untyped", "nullable"]


def test_r4_15_register_with_its_module_drops_the_module_when_the_tool_goes() -> None:
    """The public way a tool file's loader (writeTool) hands the store its module."""
    import sys
    import types

    store = ToolStore("agent")
    for round_ in range(2):
        name = f"yiem_test_tool_module_{round_}"
        sys.modules[name] = types.ModuleType(name)
        store.register(make_tool("t", f"v{round_}"), replace=True, module=name)
    assert "yiem_test_tool_module_0" not in sys.modules  # replaced: its module is gone
    assert "yiem_test_tool_module_1" in sys.modules
    store.unregister("t")
    assert "yiem_test_tool_module_1" not in sys.modules
