"""Coercing what a model sends as tool arguments to the tool's JSON Schema (DESIGN §4).

Small models often send `"3"` for an integer, `"true"` for a boolean, `null` for an optional
property they mean to leave out, nothing for a required one that may be `null` (a schema written
for strict function calling: every property required, the optional ones nullable), or a nested
object as a JSON string. `coerce_value` walks the
arguments beside the schema and fixes exactly those, returning new containers (the input is never
mutated). It never raises: anything it cannot repair is left for validation to report.

Followed keywords: `type`, `properties`, `required`, `additionalProperties`, `items`,
`prefixItems`, `anyOf`, `oneOf`, `allOf`, `enum`, `const` and local `$ref`s (`#/...`, as pydantic
emits for nested models).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal, TypeAlias

__all__ = ["MAX_DEPTH", "allows_null", "coerce_value"]

MAX_DEPTH = 64
"""How many levels of a schema (and the value beside it) tools walk on their own: coercion
leaves deeper values as they are and the fast check does not compile deeper schemas;
`jsonschema` still validates every level."""

_MAX_REF_HOPS = 16

_INT_RE = re.compile(r"\s*[-+]?\d+\s*")
_NUMBER_RE = re.compile(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*")
_NULL_WORDS = frozenset({"null", "none", ""})


def coerce_value(value: Any, schema: Any, root: Mapping[str, Any], depth: int = 0) -> Any:
    """Return `value` with the coercions applied where `schema` asks for them.

    Args:
        value: a JSON-like value (dict, list, str, int, float, bool, None).
        schema: the (sub)schema `value` must satisfy; a dict or a boolean schema.
        root: the whole schema, for resolving local `$ref`s.
        depth: nesting depth so far; past `MAX_DEPTH` levels the value is returned unchanged.

    Returns:
        The repaired value: new dicts/lists where something inside changed, scalars coerced
        (`"3"` → 3 for `integer`, `"2.5"` → 2.5 for `number`, `"true"` → True for `boolean`,
        `"null"` → None for `null`, a JSON string → object/array, the JSON text of a
        non-string `enum` or `const` member → that member), optional properties sent as
        `null` dropped when their schema does not allow null, and required properties left
        out set to `null` when their schema names null as a value.
    """
    if depth > MAX_DEPTH or not isinstance(schema, dict):
        return value
    schema = _resolve(schema, root)
    for sub in _list(schema.get("allOf")):
        value = coerce_value(value, sub, root, depth + 1)
    types = _types(schema)
    branches = _list(schema.get("anyOf")) + _list(schema.get("oneOf"))
    if isinstance(value, str):
        if branches and types is None:
            types = _branch_types(branches, root)
        value = _coerce_string(value, types)
        if isinstance(value, str):
            value = _enum_member(value, schema, branches, root)
    if isinstance(value, dict):
        target = schema if _describes(schema, "object") else _pick(branches, root, "object")
        if target is not None:
            value = _repair_object(value, target, root, depth)
    elif isinstance(value, list):
        target = schema if _describes(schema, "array") else _pick(branches, root, "array")
        if target is not None:
            value = _repair_array(value, target, root, depth)
    return value


def allows_null(schema: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether `null` may satisfy `schema` (conservative: unknown shapes count as allowing it)."""
    if isinstance(schema, bool):
        return schema
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return True
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return any(item is None for item in _list(schema["enum"]))
    types = _types(schema)
    if types is not None and "null" not in types:
        return False
    if not all(allows_null(sub, root, depth + 1) for sub in _list(schema.get("allOf"))):
        return False
    branches = _list(schema.get("anyOf")) + _list(schema.get("oneOf"))
    if branches:
        return any(allows_null(sub, root, depth + 1) for sub in branches)
    return True


# ── helpers ──────────────────────────────────────────────────────────────


def _repair_object(
    value: dict[str, Any], schema: Mapping[str, Any], root: Mapping[str, Any], depth: int
) -> dict[str, Any]:
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    required_names = set(required) if isinstance(required, list) else set()
    extra = schema.get("additionalProperties")
    extra_schema = extra if isinstance(extra, dict) else None
    out: dict[str, Any] = {}
    for key, item in value.items():
        sub = props.get(key, extra_schema)
        if sub is None:
            out[key] = item
        elif item is None and key not in required_names and not allows_null(sub, root):
            continue  # an optional property sent as null: the model meant "leave it out"
        else:
            out[key] = coerce_value(item, sub, root, depth + 1)
    for key in _list(required):
        sub = props.get(key) if isinstance(key, str) and key not in value else None
        if sub is not None and _names_null(sub, root):
            out[key] = None  # a nullable property left out: the model meant null
    return out


def _names_null(schema: Any, root: Mapping[str, Any], depth: int = 0) -> bool:
    """Whether `schema` names null as a value (`"type": ["string", "null"]`, a null branch
    of `anyOf`/`oneOf`, null in `enum` or `const`), unlike `allows_null`, which also lets
    shapes it does not know through."""
    if not isinstance(schema, dict) or depth > MAX_DEPTH:
        return False
    schema = _resolve(schema, root)
    if "const" in schema:
        return schema["const"] is None
    if "enum" in schema:
        return any(item is None for item in _list(schema["enum"]))
    types = _types(schema)
    if types is not None and "null" in types:
        return True
    branches = _list(schema.get("anyOf")) + _list(schema.get("oneOf"))
    return any(_names_null(sub, root, depth + 1) for sub in branches)


def _repair_array(
    value: list[Any], schema: Mapping[str, Any], root: Mapping[str, Any], depth: int
) -> list[Any]:
    prefix = _list(schema.get("prefixItems"))
    items = schema.get("items")
    out: list[Any] = []
    for index, item in enumerate(value):
        sub = prefix[index] if index < len(prefix) else items
        out.append(coerce_value(item, sub, root, depth + 1))
    return out


def _coerce_string(value: str, types: frozenset[str] | None) -> Any:
    """Coerce a string to the first type the schema asks for, unless it allows strings."""
    if types is None or "string" in types:
        return value
    # An integer literal stays an int under "number" too: it is the JSON number the model
    # spelled, and a float would lose digits past 2**53.
    if ("integer" in types or "number" in types) and _INT_RE.fullmatch(value):
        try:
            return int(value)
        except ValueError:  # more digits than Python converts
            return value
    if ("number" in types or "integer" in types) and _NUMBER_RE.fullmatch(value):
        number = float(value)
        if math.isfinite(number):
            if "number" in types:
                return number
            if number.is_integer():
                return int(number)
    if "boolean" in types:
        lowered = value.strip().lower()
        if lowered in ("true", "false"):
            return lowered == "true"
    if "null" in types and value.strip().lower() in _NULL_WORDS:
        return None
    if "object" in types or "array" in types:
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return value
        if ("object" in types and isinstance(parsed, dict)) or (
            "array" in types and isinstance(parsed, list)
        ):
            return parsed
    return value


def _enum_member(
    value: str, schema: Mapping[str, Any], branches: list[Any], root: Mapping[str, Any]
) -> Any:
    """The non-string `enum` or `const` member that `value` is the JSON text of (`"2"` → 2,
    `"true"` → True, `"null"` → None), else `value`.

    A schema may list its choices without a `type` (pydantic's `Literal["auto", 1]`, many
    MCP servers' `{"enum": [1, 2, 3]}`), so the type-directed coercion above has nothing to
    go by; the members themselves say what the string stands for.
    """
    members: list[Any] = []
    for sub in [schema, *(_resolve(b, root) for b in branches if isinstance(b, dict))]:
        members += _list(sub.get("enum"))
        if "const" in sub:
            members.append(sub["const"])
    if not members or value in members:
        return value
    text = value.strip()
    for member in members:
        if member is None or isinstance(member, bool | int | float):
            written = json.dumps(member)
            if written in (text, text.lower()):
                return member
    return value


def _resolve(schema: dict[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    """Follow local `$ref`s (`#/$defs/X`); sibling keywords are kept beside the target's."""
    for _ in range(_MAX_REF_HOPS):
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not ref.startswith("#"):
            return schema
        target: Any = root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(target, dict) and part in target:
                target = target[part]
            elif isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            else:
                return schema
        if not isinstance(target, dict):
            return schema
        siblings = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**target, **siblings}
    return schema


def _types(schema: Mapping[str, Any]) -> frozenset[str] | None:
    """The `type` keyword as a set, or None when the schema does not constrain the type."""
    kind = schema.get("type")
    if isinstance(kind, str):
        return frozenset((kind,))
    if isinstance(kind, list):
        return frozenset(k for k in kind if isinstance(k, str))
    return None


def _branch_types(branches: list[Any], root: Mapping[str, Any]) -> frozenset[str] | None:
    """The union of the branches' types; None when any branch leaves the type open."""
    found: set[str] = set()
    for branch in branches:
        if not isinstance(branch, dict):
            return None
        types = _types(_resolve(branch, root))
        if types is None:
            return None
        found |= types
    return frozenset(found)


_Container: TypeAlias = Literal["object", "array"]
_SHAPE_KEYWORDS: dict[str, tuple[str, str]] = {
    "object": ("properties", "additionalProperties"),
    "array": ("items", "prefixItems"),
}


def _pick(branches: list[Any], root: Mapping[str, Any], kind: _Container) -> dict[str, Any] | None:
    """The first union branch describing an object (or array), resolved."""
    for branch in branches:
        if isinstance(branch, dict):
            resolved = _resolve(branch, root)
            if _describes(resolved, kind):
                return resolved
    return None


def _describes(schema: Mapping[str, Any], kind: _Container) -> bool:
    """Whether `schema` describes a `kind` value: its `type` includes it, or, with no
    `type`, it has that kind's keywords (an object's properties, an array's items)."""
    types = _types(schema)
    if types is not None:
        return kind in types
    first, second = _SHAPE_KEYWORDS[kind]
    return first in schema or second in schema


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
