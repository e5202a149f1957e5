"""DESIGN §9: argument validation takes a small part of the 30 µs a tool call may cost.

Validates an empty object against an empty schema and the order object of
tests/tools/test_validation.py, 2000 times each, best of 5 rounds.
Run: .venv/bin/python bench/validation.py
"""

from __future__ import annotations

import time

from yiemagent.tools.schema import validate_arguments_against_schema

EMPTY: dict[str, object] = {"type": "object", "properties": {}}
ORDER: dict[str, object] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "urgent": {"type": "boolean"},
        "note": {"type": ["string", "null"]},
        "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "items": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"qty": {"type": "integer"}, "sku": {"type": "string"}},
                "required": ["qty"],
            },
        },
        "address": {
            "type": "object",
            "properties": {"zip": {"type": "integer"}, "street": {"type": "string"}},
        },
    },
    "required": ["city"],
    "additionalProperties": False,
}
ARGS = {"city": "Oslo", "count": 2, "items": [{"qty": 1}]}


def main() -> None:
    validate_arguments_against_schema(EMPTY, {}, tool_name="t")
    validate_arguments_against_schema(ORDER, ARGS, tool_name="t")
    n = 2000
    rounds = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            validate_arguments_against_schema(EMPTY, {}, tool_name="t")
            validate_arguments_against_schema(ORDER, ARGS, tool_name="t")
        rounds.append((time.perf_counter() - start) / n * 1e6)
    print(f"validation, empty + small object: best {min(rounds):.1f} µs per pair (budget < 20 µs)")


if __name__ == "__main__":
    main()
