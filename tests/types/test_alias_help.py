"""`help()` on a public type alias (DESIGN §8's "one clear message" for a reader at the
REPL) says what the alias is, not what a `typing` union or literal object is; the alias
still acts as the type it names."""

from __future__ import annotations

import importlib
import pkgutil
import pydoc
import typing
from typing import Any

import pytest

import yiemagent
from yiemagent import AgentEvent, AgentMessage, Message, StopReason, TextContent, UserMessage
from yiemagent.types import AgentEndReason, UserContent


def _public_aliases() -> list[tuple[str, str, Any]]:
    """Every public name of every package's public list (`__all__` of an `__init__`) that
    is a type alias (a `typing` union, literal or callable)."""
    packages = [yiemagent.__name__] + [
        info.name
        for info in pkgutil.walk_packages(yiemagent.__path__, "yiemagent.")
        if info.ispkg
        and not any(part.startswith("_") for part in info.name.split("."))
        and ".cli" not in info.name
        and ".providers" not in info.name
    ]
    found = []
    for package in packages:
        module = importlib.import_module(package)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if typing.get_origin(value) is not None and not isinstance(value, type):
                found.append((package, name, value))
    return found


ALIASES = _public_aliases()


def test_the_aliases_are_found() -> None:
    names = {name for _, name, _ in ALIASES}
    wanted = {"AgentEvent", "AgentMessage", "Message", "StopReason", "Backend", "TaskStatus"}
    assert wanted | {"Workers", "ThinkingLevel", "Guardrail"} <= names


@pytest.mark.parametrize(("package", "name", "alias"), ALIASES, ids=lambda x: str(x)[:40])
def test_help_on_a_public_type_alias_says_what_it_is(package: str, name: str, alias: Any) -> None:
    # help(yiemagent.AgentEvent) printed "Represent a PEP 604 union type", and a Literal
    # alias (StopReason, batch.TaskStatus) printed nothing of its own
    shown = pydoc.render_doc(alias, "Help on %s:", renderer=pydoc.plaintext)
    assert f"{name}, a type alias." in shown, shown
    assert "Represent a PEP 604 union type" not in shown
    text = shown.split(f"{name}, a type alias.", 1)[1]
    assert len(text.split()) >= 4, shown  # a sentence, not a word


def test_an_alias_acts_as_the_type_it_names() -> None:
    message = UserMessage(content="hi")
    assert isinstance(message, Message) and isinstance(message, AgentMessage)
    assert not isinstance(TextContent("x"), AgentMessage)
    assert isinstance(TextContent("x"), UserContent)
    assert "toolUse" in typing.get_args(StopReason)
    assert typing.get_args(AgentEndReason)[0] == "stop"
    assert typing.Union[tuple(typing.get_args(AgentEvent))] == AgentEvent  # noqa: UP007


def test_the_text_reaches_no_other_alias_with_the_same_members() -> None:
    # `typing` caches `Literal[...]`: the docstring is the alias's own copy's
    same = typing.Literal[typing.get_args(StopReason)]  # type: ignore[valid-type]
    assert same == StopReason
    assert "StopReason" not in (same.__doc__ or "")
