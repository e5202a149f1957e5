"""`@tool` on a method in its class body (DESIGN R-4.3): read from an instance it is the tool
of that instance's bound method, its schema without `self`; read from the class, and a
method's function made a tool outside its class, are refused in words."""

from __future__ import annotations

import gc
import weakref

import pytest

from yiemagent import Agent, AgentTool, ConfigError, ToolResultMessage, tool
from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import text_of

from ._kit import run_tool


class Account:
    def __init__(self, owner: str, balance: int) -> None:
        self.owner = owner
        self.balance = balance

    @tool
    def deposit(self, amount: int) -> str:
        """Put money in the account.

        Args:
            amount: How much, in cents.
        """
        self.balance += amount
        return f"{self.owner}: {self.balance}"

    @tool(name="peek", parallel=True)
    async def look(self, note: str = "") -> str:
        """Show the balance."""
        return f"{self.owner} has {self.balance}{note}"


async def test_a_method_tool_read_from_an_instance_works_on_that_instance() -> None:
    ann, bob = Account("ann", 10), Account("bob", 0)
    schema = ann.deposit.input_schema
    assert schema["properties"] == {
        "amount": {"type": "integer", "description": "How much, in cents."}
    }
    assert schema["required"] == ["amount"]
    assert ann.deposit.description == "Put money in the account."
    assert await run_tool(ann.deposit, {"amount": 5}) == "ann: 15"
    assert await run_tool(bob.look, {}) == "bob has 0"
    assert ann.look.name == "peek" and ann.look.parallel
    assert ann.deposit is ann.deposit  # one tool per instance

    fm = FauxModel(
        [faux_message(faux_tool_call("deposit", {"amount": 7}), faux_tool_call("peek", {})), "ok"]
    )
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[bob.deposit, bob.look])
    await agent.prompt("pay bob")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [text_of(r.content) for r in results] == ["bob: 7", "bob has 7"]
    assert not any(r.is_error for r in results) and ann.balance == 15


async def test_a_method_tool_read_from_its_class_says_to_use_an_instance() -> None:
    unbound = Account.deposit
    assert isinstance(unbound, AgentTool) and "self" not in unbound.input_schema["properties"]
    with pytest.raises(ValueError, match=r"method of Account: give the tool of an instance"):
        await run_tool(unbound, {"amount": 1})


def test_a_method_s_function_made_a_tool_outside_its_class_is_refused() -> None:
    class Ledger:
        def total(self, year: int) -> int:
            return year

    with pytest.raises(ConfigError, match=r"'total'.*'self'.*tool\(obj\.total\)"):
        tool(Ledger.total)
    assert tool(Ledger().total).input_schema["required"] == ["year"]


def test_an_instance_s_method_tool_goes_with_the_instance() -> None:
    gone = Account("gone", 1)
    assert gone.deposit.input_schema["required"] == ["amount"]  # the instance's tool, made
    ref = weakref.ref(gone)
    del gone
    gc.collect()
    assert ref() is None


class Rates:
    base = 100

    @tool
    @classmethod
    def convert(cls, amount: int) -> str:
        """Convert an amount at the class's base rate."""
        return f"{cls.__name__}: {amount * cls.base}"

    @tool
    @staticmethod
    def round_up(amount: float) -> int:
        """Round an amount up."""
        return -int(-amount // 1)


async def test_class_and_static_methods_decorated_in_their_class_body_are_tools() -> None:
    """`@tool` over `@classmethod` raised a bare TypeError ("<classmethod ...> is not a
    callable object"); the class now holds the tool of the method bound to it."""
    instance_read = Rates().convert
    assert isinstance(Rates.convert, AgentTool) and Rates.convert is instance_read
    assert Rates.convert.input_schema["required"] == ["amount"]
    assert "cls" not in Rates.convert.input_schema["properties"]
    calls = [faux_tool_call("convert", {"amount": 3}), faux_tool_call("round_up", {"amount": 2.5})]
    fm = FauxModel([faux_message(*calls), "ok"])
    agent = Agent(model=fm.model, stream_fn=fm.stream_fn, tools=[Rates.convert, Rates.round_up])
    await agent.prompt("convert")
    results = [m for m in agent.state.messages if isinstance(m, ToolResultMessage)]
    assert [(r.is_error, text_of(r.content)) for r in results] == [
        (False, "Rates: 300"),
        (False, "3"),
    ]
