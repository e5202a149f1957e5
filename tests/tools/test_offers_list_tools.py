"""`offers_list_tools`: the embedded model is not offered `listTools` (it calls the meta-tool
instead of the tool it needs, `docs/local-model.md`); any other model is. An agent file's
tool folder follows the same rule as the CLI's."""

from __future__ import annotations

from pathlib import Path

from yiemagent import load_agent
from yiemagent.ai.providers.faux import FauxModel
from yiemagent.tools import offers_list_tools
from yiemagent.types import Model

TOOL = '''
from yiemagent import tool


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


get_tool = lambda: add  # noqa: E731
'''


def test_the_embedded_model_is_not_offered_list_tools_any_other_is() -> None:
    local = Model("qwen2.5-0.5b", "local", "local")
    assert offers_list_tools(None) is False and offers_list_tools(local) is False
    assert offers_list_tools(Model("gpt-4o-mini", "openai", "openai-completions")) is True
    assert offers_list_tools(FauxModel(["hi"]).model) is True


def test_an_agent_files_tools_follow_the_rule(tmp_path: Path) -> None:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "add.py").write_text(TOOL)
    path = tmp_path / "a.toml"
    path.write_text('[agents.math]\ntools = ["tools"]\n')
    on_faux = load_agent(path, model=FauxModel(["hi"]).model)
    assert set(on_faux.tool_store.tools) == {"add", "listTools"}
    on_local = load_agent(path, model=Model("qwen2.5-0.5b", "local", "local"))
    assert set(on_local.tool_store.tools) == {"add"}
