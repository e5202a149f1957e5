"""Tool-argument validation against a JSON Schema 2020-12, with the usual coercions of what
a model sends (DESIGN §4).

`validate_arguments_against_schema` runs on every tool call, so it is built for the common
case: each schema is compiled once into a fast check (`compile_fast`), and arguments that
pass it are valid with no further work. Otherwise the arguments are coerced (`_coerce`) and
validated by `jsonschema`, which decides and explains. The compiled checks and validators are
cached, keyed on the schema object's identity, holding a reference to it, so an id is never
reused while its entry lives; a schema dict must therefore not be mutated after it was first
used for validation (build a new dict instead). `jsonschema` is imported on first use, not
at import time, so `import yiemagent` stays fast.

The fast check covers the simple schemas tools usually have: `compile_fast` turns such a
schema into nested closures. It is only a shortcut for the valid case: a `True` answer
guarantees that `jsonschema` accepts the value too (the checks are the same or stricter,
e.g. subclasses of `str` or `dict` are not accepted there). Supported keywords: `type`,
`properties`, `required`, `additionalProperties`, `items`, `enum` (of strings), `const`
(string), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `minLength`,
`maxLength`, `minItems`, `maxItems`, `anyOf`, `allOf`, local `$ref`, and annotations. Any
other keyword makes `compile_fast` return `None` (no shortcut for that schema).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from yiemagent.errors import ConfigError, YiemAgentError
from yiemagent.tools._coerce import MAX_DEPTH, coerce_value
from yiemagent.types.json_text import loads_finite
from yiemagent.types.output import check_schema_refs
from yiemagent.types.tools import provider_property_names

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "ToolArgumentsError",
    "argument_path",
    "check_schema",
    "compile_fast",
    "validate_arguments_against_schema",
]

logger = logging.getLogger(__name__)


RECEIVED_MAX_CHARS = 2000
"""The echoed arguments are cut after this many characters."""

MAX_ERROR_LINES = 20
"""At most this many `- path: problem` lines; the rest are counted."""

_PROBLEM_MAX_CHARS = 300
_CACHE_MAX = 1024


class ToolArgumentsError(YiemAgentError, ValueError):
    """Tool-call arguments that are not an object or do not satisfy the tool's schema.

    Its `str` is the full model-facing text::

        Invalid arguments for tool "x":
        - $.items[0].qty: 'a' is not of type 'integer'
        Received: {"items": [{"qty": "a"}]}

    Attributes:
        tool_name: the tool whose arguments failed.
        problems: `(path, problem)` pairs; a path is `root` or like `$.items[0].qty`.
        arguments: what was received, before any repair.
    """

    def __init__(self, tool_name: str, problems: list[tuple[str, str]], arguments: object) -> None:
        self.tool_name = tool_name
        self.problems = problems
        self.arguments = arguments
        super().__init__(format_arguments_error(tool_name, problems, arguments))


def format_arguments_error(
    tool_name: str, problems: list[tuple[str, str]], arguments: object
) -> str:
    """The text of a `ToolArgumentsError`: header, one line per problem, the received JSON."""
    lines = [f'Invalid arguments for tool "{tool_name}":']
    for path, problem in problems[:MAX_ERROR_LINES]:
        lines.append(f"- {path}: {_truncate(problem, _PROBLEM_MAX_CHARS)}")
    if len(problems) > MAX_ERROR_LINES:
        lines.append(f"- ... and {len(problems) - MAX_ERROR_LINES} more problems")
    lines.append(f"Received: {_truncate(_dump(arguments), RECEIVED_MAX_CHARS)}")
    return "\n".join(lines)


def validate_arguments_against_schema(
    schema: Mapping[str, Any], arguments: object, *, tool_name: str
) -> dict[str, Any]:
    """Coerce and validate tool-call arguments.

    Repairs, in order: `""`/`None`/`"null"` → `{}`; a JSON string holding an object → that
    object (also when double-encoded, a JSON string of that JSON string); a key a provider
    renamed a property to (`provider_property_names`) back to the property's name;
    then, only when the arguments do not already validate: numeric and boolean strings coerced
    where the schema asks (also inside nested objects, arrays and unions), nested JSON strings
    parsed where an object/array is asked, optional properties sent as `null` dropped when their
    schema does not allow null. Then JSON Schema 2020-12 validation (or the draft named by the
    schema's `$schema`). Arguments still invalid that a model wrapped once, in a key the schema
    does not declare (`{"arguments": {...}}`, or the schema's own shape `{"properties": {...}}`),
    are the wrapped object when that validates; arguments for a tool of one object parameter
    sent as that object's fields are put under the parameter's name when that validates.

    Args:
        schema: the tool's `input_schema`; not mutated, and must not be mutated later (cached
            by identity).
        arguments: what the model sent (normally a dict; a string, `None` or anything else is
            handled as above).
        tool_name: named in the error text.

    Returns:
        A new dict (top level copied, nested values may be shared with `arguments`) that is
        valid against `schema`.

    Raises:
        ToolArgumentsError: the arguments are not an object, or still invalid after repair;
            the text lists each `path: problem` and echoes the arguments received.
        ConfigError: `schema` itself is not a valid JSON Schema.
    """
    received = arguments
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        arguments = {}
    elif isinstance(arguments, str):
        arguments = _parse_object_string(arguments, tool_name)
    if not isinstance(arguments, dict):
        raise ToolArgumentsError(
            tool_name,
            [("root", f"arguments must be a JSON object, got {_json_kind(arguments)}")],
            received,
        )
    arguments = _under_declared_names(arguments, schema)
    fast, validator = _validator_for(schema)
    if fast is not None and fast(arguments):
        return dict(arguments)
    try:
        if fast is None and validator.is_valid(arguments):
            return dict(arguments)
        repaired = coerce_value(arguments, schema, schema)
        errors = list(validator.iter_errors(repaired))
    except RecursionError:
        raise ToolArgumentsError(
            tool_name, [("root", "arguments are nested too deeply")], received
        ) from None
    if not errors:
        if not isinstance(repaired, dict):  # pragma: no cover - repair keeps the kind
            raise ToolArgumentsError(tool_name, [("root", "arguments must be an object")], received)
        logger.debug("repaired arguments of tool %s", tool_name)
        return repaired
    for reshaped in (_wrapped(arguments, schema), _flattened(arguments, schema)):
        if reshaped is None:
            continue
        with contextlib.suppress(RecursionError):  # too deep: the call's own errors stand
            candidate = coerce_value(reshaped, schema, schema)
            if isinstance(candidate, dict) and validator.is_valid(candidate):
                logger.debug("reshaped the arguments of tool %s", tool_name)
                return candidate
    errors.sort(key=_error_sort_key)
    raise ToolArgumentsError(tool_name, [_describe(e) for e in errors], received)


def _under_declared_names(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """`arguments` with each key a provider renamed a property to
    (`provider_property_names`: Anthropic refuses `filter[id]`, so the model sees and sends
    `filter_id_`) under the property's own name again; `arguments` itself when none is."""
    declared = schema.get("properties")
    if not isinstance(declared, Mapping) or all(key in declared for key in arguments):
        return arguments
    back = {new: old for old, new in provider_property_names(declared).items()}
    if not any(key in back and key not in declared for key in arguments):
        return arguments
    return {
        back[key] if key in back and key not in declared and back[key] not in arguments else key: v
        for key, v in arguments.items()
    }


_WRAPPERS = frozenset({"arguments", "parameters", "args", "input", "properties"})
"""Keys a model wraps a call's arguments in: its own call's (`{"arguments": {...}}`), or
the schema's (`{"properties": {...}}`, the shape it was shown instead of an instance)."""
_SCHEMA_WORDS = frozenset({"type", "required", "additionalProperties", "$schema", "title"})
"""What else an echoed schema holds beside `properties`."""


def _wrapped(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The object inside a wrapper a model put around its arguments (a small model wrote
    `{"properties": {"city": "Paris"}}`), when the schema proves the wrapper is no argument:
    the wrapper key, and any schema keyword beside `properties`, is none of its properties.
    The caller keeps it only when it validates where the wrapped arguments did not."""
    declared = schema.get("properties")
    declared = declared if isinstance(declared, Mapping) else {}
    keys = [k for k in arguments if k in _WRAPPERS and k not in declared]
    if len(keys) != 1:
        return None
    others = set(arguments) - {keys[0]}
    if others and (keys[0] != "properties" or not others <= _SCHEMA_WORDS - set(declared)):
        return None
    inner = arguments[keys[0]]
    return inner if isinstance(inner, dict) else None


def _flattened(arguments: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The arguments of a tool whose one parameter is an object (a pydantic model), sent as
    that object's own fields (`{"x": 4}` for `f(point: Point)`), put under the parameter's
    name. The caller keeps it only when it validates where the sent arguments did not."""
    declared = schema.get("properties")
    if not isinstance(declared, Mapping) or len(declared) != 1 or not arguments:
        return None
    [name] = declared
    return None if name in arguments else {name: arguments}


def check_schema(schema: object, *, what: str = "inputSchema") -> None:
    """Check that `schema` is a valid JSON Schema (2020-12 meta-schema, or its `$schema`).

    Args:
        schema: the candidate schema.
        what: how to name it in the error text.

    Raises:
        ConfigError: not a dict, not valid against the meta-schema, or nested too deeply
            to check; the text says why.
    """
    if not isinstance(schema, dict):
        raise ConfigError(
            f"{what} must be a JSON object (a JSON Schema), got {type(schema).__name__}"
        )
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import SchemaError

    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(schema)
        check_schema_refs(schema, what=what)
    except SchemaError as exc:
        path = argument_path(exc.absolute_path)
        raise ConfigError(f"{what} is not a valid JSON Schema: {path}: {exc.message}") from None
    except RecursionError:
        # the meta-schema check takes several frames a level, so about a hundred levels of
        # nesting exhaust Python's stack; no tool's arguments need that many
        raise ConfigError(
            f"{what} nests too deeply to check; flatten it, or name repeated parts in $defs "
            "and point at them with $ref"
        ) from None


# ── the compiled-validator cache ─────────────────────────────────────────

_cache: dict[int, tuple[Mapping[str, Any], Check | None, Validator]] = {}
_cache_lock = threading.Lock()


def _validator_for(schema: Mapping[str, Any]) -> tuple[Check | None, Validator]:
    """The schema's compiled quick check (None when it has none) and its `jsonschema` validator."""
    entry = _cache.get(id(schema))
    if entry is not None and entry[0] is schema:
        return entry[1], entry[2]
    check_schema(schema, what="input_schema")
    from jsonschema import Draft202012Validator, validators

    cls = validators.validator_for(schema, default=Draft202012Validator)
    validator: Validator = cls(schema)
    fast = compile_fast(schema)
    with _cache_lock:
        if len(_cache) >= _CACHE_MAX:
            _cache.clear()  # rare: only programs that build thousands of schemas get here
        _cache[id(schema)] = (schema, fast, validator)
    return fast, validator


# ── helpers ──────────────────────────────────────────────────────────────


def _parse_object_string(text: str, tool_name: str) -> object:
    try:
        parsed = loads_finite(text)
    except (ValueError, RecursionError) as exc:
        raise ToolArgumentsError(
            tool_name, [("root", f"arguments are not valid JSON ({exc})")], text
        ) from None
    if parsed is None:  # the text "null": no arguments, as `None` itself
        return {}
    if isinstance(parsed, str) and text.lstrip().startswith('"'):
        # double-encoded: the argument object sent as a JSON string (some OpenAI-compatible
        # servers do this); one more decode, which must give an object
        if not parsed.strip():
            return {}
        with contextlib.suppress(ValueError, RecursionError):
            inner = loads_finite(parsed)
            if isinstance(inner, dict):
                return inner
    if not isinstance(parsed, dict):
        raise ToolArgumentsError(
            tool_name,
            [("root", f"arguments must be a JSON object, got {_json_kind(parsed)}")],
            text,
        )
    return parsed


def _json_kind(value: object) -> str:
    """`value`'s kind in JSON's words ("a JSON array", "a JSON number"), as the model knows
    them; a value JSON has no word for is named by its Python type."""
    kinds = ((bool, "boolean"), (int | float, "number"), (str, "string"), (list | tuple, "array"))
    for python, word in kinds:
        if isinstance(value, python):
            return f"a JSON {word}"
    return type(value).__name__


def _describe(error: ValidationError) -> tuple[str, str]:
    return argument_path(error.absolute_path), error.message


def argument_path(parts: Any) -> str:
    """Where in the arguments a problem is: `root`, or like `$.items[0].qty` for the parts
    `["items", 0, "qty"]` (a key that is no identifier is quoted: `$["a b"]`)."""
    if not parts:
        return "root"
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif isinstance(part, str) and part.isidentifier():
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def _error_sort_key(error: ValidationError) -> tuple[int, list[tuple[int, int, str]]]:
    """Shallow problems first, then in the arguments' order: item 2 before item 10 (a
    list of many bad items shows its first ones, not 0, 10, 100, 101...)."""
    path = list(error.absolute_path)
    parts = [(0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in path]
    return len(path), parts


def _dump(value: object) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=repr)
    except (ValueError, TypeError):
        return repr(value)
    except RecursionError:
        return "<too deeply nested to show>"


def _truncate(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


# ── the fast check ───────────────────────────────────────────────────────────

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
    if not isinstance(node, dict) or depth > MAX_DEPTH:
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
