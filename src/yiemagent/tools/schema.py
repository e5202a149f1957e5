"""Tool-argument validation against a JSON Schema 2020-12, with the LLM repairs (DESIGN R-4.4).

`validate_arguments_against_schema` is on the hot path of every tool call (DESIGN §9: the whole
call has a 30 µs budget), so each schema's validator is compiled once and cached, and arguments
that are already valid skip the repair walk. The cache is keyed on the schema object's identity
and holds a reference to it, so an id is never reused while its entry lives; a schema dict must
therefore not be mutated after it was first used for validation (build a new dict instead).

`jsonschema` is imported on first use, not at import time (DESIGN §2: `import yiemagent` stays
fast).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from yiemagent.errors import ConfigError, YiemAgentError
from yiemagent.tools.fastcheck import Check, compile_fast
from yiemagent.tools.repair import repair_value

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

__all__ = [
    "ToolArgumentsError",
    "check_schema",
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

    Its `str` is the full model-facing text (DESIGN R-4.4)::

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
    """Repair and validate tool-call arguments (DESIGN R-4.4; seed 000 §8.1 step 3).

    Repairs, in order: `""`/`None`/`"null"` → `{}`; a JSON string holding an object → that
    object (also when double-encoded, a JSON string of that JSON string);
    then, only when the arguments do not already validate: numeric and boolean strings coerced
    where the schema asks (also inside nested objects, arrays and unions), nested JSON strings
    parsed where an object/array is asked, optional properties sent as `null` dropped when their
    schema does not allow null. Then JSON Schema 2020-12 validation (or the draft named by the
    schema's `$schema`).

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
        kind = type(arguments).__name__
        raise ToolArgumentsError(
            tool_name, [("root", f"arguments must be a JSON object, got {kind}")], received
        )
    fast, validator = _validator_for(schema)
    if fast is not None and fast(arguments):
        return dict(arguments)
    try:
        if fast is None and validator.is_valid(arguments):
            return dict(arguments)
        repaired = repair_value(arguments, schema, schema)
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
    errors.sort(key=_error_sort_key)
    raise ToolArgumentsError(tool_name, [_describe(e) for e in errors], received)


def check_schema(schema: object, *, what: str = "inputSchema") -> None:
    """Check that `schema` is a valid JSON Schema (2020-12 meta-schema, or its `$schema`).

    Args:
        schema: the candidate schema.
        what: how to name it in the error text.

    Raises:
        ConfigError: not a dict, or not valid against the meta-schema; the text says why.
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
    except SchemaError as exc:
        path = _path(exc.absolute_path)
        raise ConfigError(f"{what} is not a valid JSON Schema: {path}: {exc.message}") from None


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
        parsed = json.loads(text)
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
            inner = json.loads(parsed)
            if isinstance(inner, dict):
                return inner
    if not isinstance(parsed, dict):
        kind = "array" if isinstance(parsed, list) else type(parsed).__name__
        raise ToolArgumentsError(
            tool_name, [("root", f"arguments must be a JSON object, got a JSON {kind}")], text
        )
    return parsed


def _describe(error: ValidationError) -> tuple[str, str]:
    return _path(error.absolute_path), error.message


def _path(parts: Any) -> str:
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


def _error_sort_key(error: ValidationError) -> tuple[int, str]:
    path = list(error.absolute_path)
    return len(path), json.dumps(path, default=str)


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
