"""Agent files, any content (DESIGN §8): `load_agent` builds the agents or raises one
`ConfigError` whose one line names the file and the table; nothing else escapes."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings, strategies as st

from yiemagent import Agent, ConfigError, load_agent
from yiemagent.teams._file import AGENT_KEYS

KEYS = [k for k in AGENT_KEYS if k != "mcp"] + ["top_p", "tool"]
"""Every key but `mcp` (its values would start processes), and two unknown ones."""

scalars = st.one_of(
    st.integers(-3, 30),
    st.floats(),  # inf and nan too: TOML writes them
    st.booleans(),
    st.sampled_from(["", "x", "router", "math", "a:b", "os:getcwd", "nowhere/none", "."]),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["agent", "max_total_tokens", "type"]), inner, max_size=2),
    ),
    max_leaves=6,
)


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + " }"


@settings(max_examples=60)
@given(
    st.dictionaries(
        st.sampled_from(["router", "math", "two words"]),
        st.dictionaries(st.sampled_from(KEYS), values, max_size=4),
        min_size=1,
        max_size=3,
    )
)
def test_any_agent_file_builds_or_is_one_config_error(tables: dict[str, dict[str, Any]]) -> None:
    text = "".join(
        f'[agents."{name}"]\n' + "".join(f"{k} = {toml_value(v)}\n" for k, v in spec.items())
        for name, spec in tables.items()
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "team.toml"
        path.write_text(text)
        try:
            agent = load_agent(path)
        except ConfigError as exc:
            message = str(exc)
            assert message.startswith(f"{path}: ") and "\n" not in message
            assert "[agents." in message or "TOML" in message
        else:
            assert isinstance(agent, Agent) and agent.name == next(iter(tables))
