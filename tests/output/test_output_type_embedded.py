"""`output_type` on the embedded model (DESIGN §14): the output schema is the answer
branch, so constrained decoding gives a valid value; an extraction task answered correctly
(Qwen2.5-Coder-0.5B, greedy)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from yiemagent import Agent
from yiemagent.types import OutputMessage

pytestmark = [pytest.mark.local_model, pytest.mark.timeout(900)]


class Person(BaseModel):
    name: str
    age: int
    city: str


async def test_extraction_and_an_int_on_the_embedded_model() -> None:
    agent = Agent(output_type=Person)  # no model: the embedded one, native mode
    reply = await agent.prompt("Maria Lopez is 34 years old and lives in Madrid.")
    assert isinstance(reply, OutputMessage)
    assert reply.output == Person(name="Maria Lopez", age=34, city="Madrid")
    count = await agent.prompt("How many legs does a spider have?", output_type=int)
    assert count.output == 8
