"""A compiled "is this valid?" check for the simple schemas tools usually have (DESIGN §9).

`jsonschema` costs 10-20 µs to accept a small argument object; the whole tool call has a 30 µs
budget. Most tool schemas use only a handful of keywords, so `compile_fast` turns such a schema
into nested closures that answer in about a microsecond. It is only a shortcut for the common,
valid case: a `True` answer guarantees that `jsonschema` accepts the value too (the checks are
the same or stricter, e.g. subclasses of `str` or `dict` are not accepted here); on `False` the
caller runs the repairs and the full `jsonschema` validation, which decides and explains.

Supported keywords: `type`, `properties`, `required`, `additionalProperties`, `items`, `enum` (of
strings), `const` (string), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
`minLength`, `maxLength`, `minItems`, `maxItems`, `anyOf`, `allOf`, local `$ref`, and
annotations. Any other keyword makes `compile_fast` return `None` (no shortcut for that schema).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["compile_fast"]

Check = Callable[[Any], bool]

_DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
        "format",
    }
)  # `format` is an annotation in 2020-12 unless a format checker is enabled (it is not)
_SUPPORTED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "$ref",
        "anyOf",
        "allOf",
    }
)
_MAX_DEPTH = 32


class _Unsupported(Exception):
    pass


def compile_fast(schema: Mapping[str, Any]) -> Check | None:
    """Compile `schema` into a quick validity check, or return None if it uses other keywords.

    Args:
        schema: a JSON Schema for tool arguments (draft 2020-12).

    Returns:
        `check(value) -> bool`, where True means `jsonschema` accepts `value` too; or None.
    """
    if schema.get("$schema", _DRAFT_2020_12) != _DRAFT_2020_12:
        return None
    try:
        return _compile(schema, schema, 0, root_level=True)
    except (_Unsupported, RecursionError):
        return None


def _compile(node: Any, root: Mapping[str, Any], depth: int, *, root_level: bool = False) -> Check:
    if node is True:
        return _always
    if node is False:
        return _never
    if not isinstance(node, dict) or depth > _MAX_DEPTH:
        raise _Unsupported
    keys = set(node) - _ANNOTATIONS
    if root_level:
        keys -= {"$schema", "$defs"}
    if not keys <= _SUPPORTED:
        raise _Unsupported
    checks: list[Check] = []
    if "$ref" in node:
        checks.append(_compile(_lookup(node["$ref"], root), root, depth + 1))
    if "type" in node:
        checks.append(_type_check(node["type"]))
    for keyword in ("anyOf", "allOf"):
        if keyword in node:
            branches = node[keyword]
            if not isinstance(branches, list) or not branches:
                raise _Unsupported
            compiled = tuple(_compile(b, root, depth + 1) for b in branches)
            if keyword == "allOf":
                checks.extend(compiled)
            else:
                checks.append(_any_of(compiled))
    if keys & {"properties", "required", "additionalProperties"}:
        checks.append(_object_check(node, root, depth))
    if keys & {"items", "minItems", "maxItems"}:
        checks.append(_array_check(node, root, depth))
    if "enum" in node or "const" in node:
        checks.append(_enum_check(node))
    if keys & {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
        checks.append(_number_check(node))
    if keys & {"minLength", "maxLength"}:
        checks.append(_string_check(node))
    return _all_of(checks)


def _all_of(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    frozen = tuple(checks)

    def check(value: Any) -> bool:
        for c in frozen:  # noqa: SIM110 - a loop, not all(<genexpr>): it runs for every call
            if not c(value):
                return False
        return True

    return check


def _any_of(options: tuple[Check, ...]) -> Check:
    def check(value: Any) -> bool:
        return any(c(value) for c in options)

    return check


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _lookup(ref: Any, root: Mapping[str, Any]) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#/"):
        raise _Unsupported
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            raise _Unsupported
        target = target[part]
    return target


def _is_integer(value: Any) -> bool:
    kind = type(value)
    return kind is int or (kind is float and value.is_integer())


_TYPE_CHECKS: dict[str, Check] = {
    "string": lambda v: type(v) is str,
    "integer": _is_integer,
    "number": lambda v: type(v) is int or type(v) is float,
    "boolean": lambda v: v is True or v is False,
    "null": lambda v: v is None,
    "object": lambda v: type(v) is dict,
    "array": lambda v: type(v) is list,
}


def _type_check(kind: Any) -> Check:
    if isinstance(kind, str) and kind in _TYPE_CHECKS:
        return _TYPE_CHECKS[kind]
    if isinstance(kind, list) and kind and all(k in _TYPE_CHECKS for k in kind):
        options = tuple(_TYPE_CHECKS[k] for k in kind)
        return lambda v: any(c(v) for c in options)
    raise _Unsupported


def _object_check(node: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Check:
    props = node.get("properties", {})
    required = node.get("required", [])
    extra = node.get("additionalProperties", True)
    if not isinstance(props, dict) or not isinstance(required, list):
        raise _Unsupported
    if not all(isinstance(name, str) for name in required):
        raise _Unsupported
    prop_checks = {name: _compile(sub, root, depth + 1) for name, sub in props.items()}
    extra_check = None if extra is True else _compile(extra, root, depth + 1)
    needed = tuple(required)

    def check(value: Any) -> bool:
        if not isinstance(value, dict):
            return True  # these keywords only constrain objects
        for name in needed:
            if name not in value:
                return False
        for key, item in value.items():
            sub = prop_checks.get(key)
            if sub is None:
                if extra_check is not None and not extra_check(item):
                    return False
            elif not sub(item):
                return False
        return True

    return check


def _array_check(node: Mapping[str, Any], root: Mapping[str, Any], depth: int) -> Check:
    items = node.get("items", True)
    item_check = None if items is True else _compile(items, root, depth + 1)
    low = _count(node.get("minItems", 0)) or 0
    high = _count(node.get("maxItems"))

    def check(value: Any) -> bool:
        if not isinstance(value, list):
            return True
        if len(value) < low or (high is not None and len(value) > high):
            return False
        return item_check is None or all(item_check(item) for item in value)

    return check


def _enum_check(node: Mapping[str, Any]) -> Check:
    options = node["enum"] if "enum" in node else [node["const"]]
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise _Unsupported  # jsonschema's equality across int/float/bool is subtle: leave it
    allowed = frozenset(options)
    if "enum" in node and "const" in node:
        raise _Unsupported
    return lambda v: type(v) is str and v in allowed


def _number_check(node: Mapping[str, Any]) -> Check:
    bounds = {
        k: node[k]
        for k in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
        if k in node
    }
    if not all(type(b) in (int, float) for b in bounds.values()):
        raise _Unsupported
    low, high = bounds.get("minimum"), bounds.get("maximum")
    xlow, xhigh = bounds.get("exclusiveMinimum"), bounds.get("exclusiveMaximum")

    def check(value: Any) -> bool:
        if type(value) is not int and type(value) is not float:
            return isinstance(value, str | dict | list | bool) or value is None
        return not (
            (low is not None and value < low)
            or (high is not None and value > high)
            or (xlow is not None and value <= xlow)
            or (xhigh is not None and value >= xhigh)
            or value != value  # NaN: let jsonschema decide
        )

    return check


def _string_check(node: Mapping[str, Any]) -> Check:
    low = _count(node.get("minLength", 0)) or 0
    high = _count(node.get("maxLength"))

    def check(value: Any) -> bool:
        if type(value) is not str:
            return isinstance(value, int | float | dict | list | bool) or value is None
        return len(value) >= low and (high is None or len(value) <= high)

    return check


def _count(value: Any) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 0:
        raise _Unsupported
    return value
