"""Typed output on the embedded model (docs/output.md): extract a record from free text.

Run: .venv/bin/python examples/output_extract.py
"""

from __future__ import annotations

import asyncio

from pydantic import BaseModel

from yiemagent import Agent


class Person(BaseModel):
    name: str
    age: int
    city: str


async def main() -> None:
    agent = Agent(output_type=Person)  # Agent[Person]; model=None: the embedded model
    reply = await agent.prompt("Maria Lopez is 34 years old and lives in Madrid.")
    person: Person = reply.output  # validated: a Person, not text
    print(person)
    count = await agent.prompt("How many legs does a spider have?", output_type=int)
    print(count.output + 0)  # an int


if __name__ == "__main__":
    asyncio.run(main())
