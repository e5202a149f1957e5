"""Output types shared by the output tests: each case has a type, a valid model object, an
invalid one, and the value the valid one validates to (DESIGN §14)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field
from typing_extensions import TypedDict

Short = Annotated[str, Field(max_length=16)]
"""Bounded strings keep a small model's constrained answer from running on (maxLength)."""


class Person(BaseModel):
    name: Short
    age: int


@dataclass
class Point:
    x: int
    y: int


class Order(TypedDict):
    item: Short
    qty: int


ORDER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "sku": {"type": "string", "maxLength": 8},
        "count": {"type": "integer", "minimum": 1},
    },
    "required": ["sku", "count"],
    "additionalProperties": False,
}


@dataclass
class Case:
    id: str
    type_: Any
    valid: dict[str, Any]
    """What the model sends (the object the output schema describes)."""
    invalid: dict[str, Any]
    expected: Any
    problem: str
    """A path that the validation errors name for `invalid`."""


CASES = [
    Case("pydantic", Person, {"name": "Ann", "age": 31}, {"name": "Ann", "age": "old"},
         Person(name="Ann", age=31), "$.age"),
    Case("dataclass", Point, {"x": 1, "y": 2}, {"x": 1, "y": "two"}, Point(1, 2), "$.y"),
    Case("typeddict", Order, {"item": "pen", "qty": 3}, {"item": "pen", "qty": [3]},
         {"item": "pen", "qty": 3}, "$.qty"),
    Case("json_schema", ORDER_SCHEMA, {"sku": "A1", "count": 2}, {"sku": "A1", "count": 0},
         {"sku": "A1", "count": 2}, "$.count"),
    Case("int", int, {"result": 42}, {"result": "forty-two"}, 42, "$.result"),
]  # fmt: skip
