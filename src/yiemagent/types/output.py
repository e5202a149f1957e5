"""The output type of a run: what a run must end with, and how it is checked (DESIGN §14).

`OutputSpec(T)` describes a typed result: `T` is a pydantic model, a dataclass, a TypedDict,
a plain type such as `int` or `list[str]` (validated by a pydantic `TypeAdapter`), or a JSON
Schema dict (validated by `jsonschema`; the value is the plain JSON data). The schema the
model sees is always a JSON object: a `T` whose schema is not an object (`int`, `list[str]`,
a union) is wrapped as `{"result": <T's schema>}` and unwrapped after validation.

How the model delivers the value (`mode`):
- `"tool"`: an output tool (`final_result`, its input schema is the object schema above);
- `"native"`: the final answer text is the JSON value, and the provider is asked to constrain
  it (OpenAI `response_format` json_schema; the embedded model's answer branch);
- `"auto"` (default): `"tool"` (the embedded model constrains the output tool's arguments
  by their schema like any tool's).

pydantic and jsonschema are imported when a spec is built, not when this module is.
"""

from __future__ import annotations

import inspect
import json
import re
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeAlias, TypeVar, cast

from yiemagent.errors import ConfigError, YiemAgentError, exception_text
from yiemagent.types.alias_doc import describe_alias
from yiemagent.types.callbacks import is_async_callable
from yiemagent.types.json_text import read_model_json
from yiemagent.types.messages import AssistantMessage

if TYPE_CHECKING:
    from pathlib import Path

    from yiemagent.types.model import Model

__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "OUTPUT_TOOL_NAME",
    "RESULT_KEY",
    "OutputMessage",
    "OutputMode",
    "OutputSpec",
    "OutputType",
    "OutputValidationError",
    "check_schema_refs",
    "output_spec",
    "read_schema_file",
]

T = TypeVar("T")

OutputMode: TypeAlias = Literal["auto", "tool", "native"]
describe_alias(
    __name__,
    "OutputMode",
    """How a typed agent asks for its output: "tool" (an output tool), "native" (the provider's
structured output), "auto" (native where the model has it, else the tool).""",
)

OUTPUT_TOOL_NAME = "final_result"
"""The output tool's default name."""

RESULT_KEY = "result"
"""The property that holds a value whose own schema is not an object."""

DEFAULT_OUTPUT_RETRIES = 2
"""Invalid outputs sent back to the model before the run ends in error."""

_MAX_ERRORS = 12
_MAX_INPUT_CHARS = 120
_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)
_THINK_END = "</think>"
"""Where the reasoning DeepSeek-R1 and Qwen3 write into the content ends (Ollama, a
vLLM or llama.cpp server without a reasoning parser)."""


class OutputValidationError(YiemAgentError, ValueError):
    """A value that does not match the output type; its text is what the model reads.

    Attributes:
        problems: `(path, problem)` pairs, `path` like `$.items[0].qty` or `$`.
    """

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        lines = [f"- {path}: {problem}" for path, problem in problems[:_MAX_ERRORS]]
        if len(problems) > _MAX_ERRORS:
            lines.append(f"- ... and {len(problems) - _MAX_ERRORS} more problems")
        super().__init__("\n".join(lines) or "- $: invalid value")


OUTPUT_TOOL_LABEL = "Final result"
"""The label of the output tool offered in tool mode; a provider that constrains its replies
(the embedded model) leaves out its free-text answer while that tool is offered."""


NOT_STORED: Any = object()
"""`OutputSpec.stored_value` of a type whose value is validated from the call's arguments."""

_MAX_KEPT = 64
"""Most values `OutputSpec.validate_call` keeps for calls that have not run yet."""

_TEXT_ANSWER = "\x00answer text"
"""The key `OutputSpec` keeps a text answer's value under (no tool call id has a NUL)."""


class OutputSpec(Generic[T]):
    """A run's output type: its schema for the model and its validator.

    Args:
        type_: a pydantic model, dataclass, TypedDict, plain type (`int`, `list[str]`, ...),
            a plain function (its arguments are asked for, its return value is the output),
            or a JSON Schema dict (then the value is JSON data, `dict[str, Any]` when the
            schema is an object).
        mode: "auto", "tool" or "native" (see the module docstring).
        name: the output tool's name (tool mode), also the schema's name for native output.
        description: what the output tool's description says (default: a short instruction).

    Raises:
        ConfigError: a type pydantic cannot validate, an async function, an invalid JSON
            Schema, a bad mode or tool name.
    """

    __slots__ = (
        "_adapter",
        "_kept",
        "_validator",
        "description",
        "mode",
        "name",
        "schema",
        "type_",
        "wrapped",
    )

    def __init__(
        self,
        type_: type[T] | Mapping[str, Any],
        *,
        mode: OutputMode = "auto",
        name: str = OUTPUT_TOOL_NAME,
        description: str | None = None,
    ) -> None:
        from yiemagent.types.tools import check_tool_name

        if mode not in ("auto", "tool", "native"):
            raise ConfigError(f"output mode must be 'auto', 'tool' or 'native', not {mode!r}")
        self.type_ = type_
        self.mode: OutputMode = mode
        self.name = check_tool_name(name)
        self.description = description or (
            "Give the final result of the request. Call this once, when you have the answer; "
            "its arguments are the result."
        )
        self._adapter: Any = None
        self._validator: Any = None
        self._kept: dict[str, tuple[Any, Any, OutputValidationError | None]] = {}
        """Output tool call id (or `_TEXT_ANSWER`) → (its arguments or text, its value, its
        error), validated before the call ran or the run read the answer."""
        if isinstance(type_, list | tuple):
            raise ConfigError(_several_types(type_))
        if isinstance(type_, Mapping):
            inner = _checked_schema(type_)
            self._validator = _schema_validator(inner)
        else:
            inner = _adapter_schema(self, type_)
        self.wrapped = inner.get("type") != "object"
        """Whether the value travels as `{"result": value}` (its schema is not an object)."""
        self.schema: dict[str, Any] = _wrap(inner) if self.wrapped else inner
        """The JSON Schema (an object) the model's output must match."""

    def __repr__(self) -> str:
        what = "JSON Schema" if isinstance(self.type_, Mapping) else _type_name(self.type_)
        return f"OutputSpec({what}, mode={self.mode!r})"

    @property
    def type_name(self) -> str:
        """A short name of the type for messages ("Invoice", "int", "JSON Schema")."""
        return "JSON Schema" if isinstance(self.type_, Mapping) else _type_name(self.type_)

    def resolved_mode(self, model: Model | None) -> Literal["tool", "native"]:
        """`mode`, with "auto" decided for `model` (tool mode for every API today)."""
        if self.mode != "auto":
            return self.mode
        return "tool"

    def native_schema(self, model: Model | None) -> Mapping[str, Any] | None:
        """The schema a call to `model` hands the provider (`StreamOptions.output_schema`)
        in native mode; None in tool mode (the output tool carries it then)."""
        return self.schema if self.resolved_mode(model) == "native" else None

    def validate(self, data: Any) -> T:
        """The typed value from the model's object (`{"result": v}` when wrapped).

        Raises:
            OutputValidationError: the data does not match, the text listing each problem;
                or an output function raised, its error the one problem ("$").
        """
        if self.wrapped:
            if not isinstance(data, Mapping) or RESULT_KEY not in data:
                raise OutputValidationError(
                    [("$", f'expected an object {{"{RESULT_KEY}": ...}}, got {_short(data)}')]
                )
            data = data[RESULT_KEY]
        if self._validator is not None:
            problems = [
                (_json_path(error.absolute_path), error.message)
                for error in self._validator.iter_errors(data)
            ]
            if problems:
                raise OutputValidationError(problems)
            return cast(T, data)
        from pydantic import ValidationError

        try:
            return cast(T, self._adapter.validate_python(data))
        except ValidationError as exc:
            raise OutputValidationError(_pydantic_problems(exc, self.wrapped)) from None
        except Exception as exc:  # an output function's own error: the model reads it
            raise OutputValidationError([("$", exception_text(exc))]) from exc

    def validate_call(self, call_id: str, data: Any, *, keep: bool = False) -> T:
        """`validate(data)` for the output tool call `call_id`, so that an output function
        runs once per call: the output guardrails ask for a call's value before the call
        runs (`keep`: the value, or the error, waits for the call, or for `forget`), and the
        call then gets it back, unless its arguments differ by then (a `before_tool_call`
        hook).

        Raises:
            OutputValidationError: as `validate`.
        """
        return self._once(call_id, data, lambda: self.validate(data), keep)

    def _once(self, key: str, data: Any, validate: Callable[[], T], keep: bool) -> T:
        """`validate()`'s value or `OutputValidationError`, or the one kept under `key` when
        it was kept for the same `data` (then taken out); `keep` keeps it (again)."""
        kept = self._kept.pop(key, None)
        if kept is not None and kept[0] == data:
            _, value, error = kept
        else:
            value, error = None, None
            try:
                value = validate()
            except OutputValidationError as exc:
                error = exc
        if keep:
            while len(self._kept) >= _MAX_KEPT:  # calls that never ran (an abort)
                del self._kept[next(iter(self._kept))]
            self._kept[key] = (data, value, error)
        if error is not None:
            raise error
        return cast(T, value)

    def stored_value(self, data: Any) -> Any:
        """The value of an output function's call from `to_json` of it (what a transcript
        keeps), rebuilt by the function's return annotation (the JSON as is without one or
        when it does not fit), so that the value is read back without running the function
        again. Other types give `NOT_STORED`: their value is validated from the arguments."""
        if not inspect.isroutine(self.type_):
            return NOT_STORED
        from pydantic import TypeAdapter

        try:
            returns = typing.get_type_hints(self.type_).get("return", Any)
            return TypeAdapter(returns).validate_python(data)
        except Exception:  # no usable annotation: the JSON is the value
            return data

    def forget(self, call_id: str | None) -> None:
        """Drop the value kept for the output tool call `call_id` (`validate_call`), or for
        the answer text when None (`validate_text`): it will not be used."""
        self._kept.pop(_TEXT_ANSWER if call_id is None else call_id, None)

    def validate_text(self, text: str, *, keep: bool = False) -> T:
        """`_validate_text(text)`, once per answer as `validate_call` is once per call: the
        output guardrails ask for the answer's value first (`keep`), and the run then gets
        the value (or the error) they got, unless `forget(None)` dropped it.

        Raises:
            OutputValidationError: as `_validate_text`.
        """
        return self._once(_TEXT_ANSWER, text, lambda: self._validate_text(text), keep)

    def _validate_text(self, text: str) -> T:
        """The typed value from an answer text holding its JSON (a ```json fence is allowed,
        and so is the reasoning a model served without a reasoning parser writes first:
        `<think>...</think>`, or only its end when the chat template opened it). The JSON
        is read as tool-call arguments are (`read_model_json`: a trailing comma or a Python
        literal is read as meant; prose around it is not).

        A wrapped type also takes its bare value: `42` for an `int` as well as
        `{"result": 42}`, and a `str` (or a union with `str`) the answer text itself, as
        other frameworks take a text answer as a `str` output.

        Raises:
            OutputValidationError: the text is not JSON, or the value does not match (the
                problems of reading it as JSON, wrapper included).
        """
        body = text.strip()
        if body[:1] not in ("{", "[", '"', "`") and _THINK_END in body:
            body = body.split(_THINK_END, 1)[1].strip()
        fenced = _FENCE.match(body)
        if fenced:
            body = fenced.group(1).strip()
        if not body:  # not "not JSON (EOF while parsing ...)": there was nothing to parse
            raise OutputValidationError([("$", "the answer is empty")])
        try:
            data = read_model_json(body)
        except ValueError as exc:
            failure = OutputValidationError(
                [("$", f"the answer is not JSON ({exc.args[0]}): {_short(text)}")]
            )
            return self._bare_value(body, failure=failure)
        try:
            return self.validate(data)
        except OutputValidationError as exc:
            if isinstance(data, Mapping) and RESULT_KEY in data:
                raise
            bare = not isinstance(data, Mapping)
            return self._bare_value(data, body, failure=exc, bare_failure=bare)

    def _bare_value(
        self, *values: Any, failure: OutputValidationError, bare_failure: bool = False
    ) -> T:
        """The first of `values` that is a value of the wrapped type; else `failure` is
        raised (also when the type is not wrapped, or the answer is empty), or with
        `bare_failure` the first value's own problems: a bare `0` for a positive `int` is
        told it is not greater than 0, not that it lacks the `{"result": ...}` wrapper."""
        if self.wrapped:
            first: OutputValidationError | None = None
            for value in values:
                if value == "":
                    continue
                try:
                    return self.validate({RESULT_KEY: value})
                except OutputValidationError as exc:
                    first = first or exc
            if bare_failure and first is not None:
                raise first
        raise failure

    def to_json(self, value: Any) -> Any:
        """`value` (as `validate` returned it) as JSON-ready data."""
        from pydantic_core import to_jsonable_python

        return to_jsonable_python(value)

    def schema_text(self) -> str:
        """The schema as compact JSON (for prompts and error messages)."""
        return json.dumps(self.schema, separators=(",", ":"), ensure_ascii=False)


@dataclass(slots=True)
class OutputMessage(AssistantMessage, Generic[T]):
    """A run's answer with its validated output: the final assistant message's
    fields, and `output`, the value of the output type (`None` only while the run waits
    for an approval)."""

    output: T | None = None


OutputType: TypeAlias = "type[T] | Mapping[str, Any] | OutputSpec[T]"
"""What `output_type=` accepts."""


_SPECS: dict[Any, OutputSpec[Any]] = {}
_SPECS_MAX = 256


def output_spec(output_type: Any) -> OutputSpec[Any] | None:
    """`output_type` as an `OutputSpec` (`None` stays `None`; a spec is returned as it is).

    Specs are cached per type (and per JSON Schema text): building pydantic's validator
    costs ~10 ms, so `prompt(..., output_type=T)` on every run pays it once.

    Raises:
        ConfigError: see `OutputSpec`.
    """
    if output_type is None or isinstance(output_type, OutputSpec):
        return output_type
    try:
        key: Any = (
            ("schema", json.dumps(output_type, sort_keys=True, default=str))
            if isinstance(output_type, Mapping)
            else ("type", output_type)
        )
        spec = _SPECS.get(key)
    except TypeError:  # an unhashable type object: no cache
        return OutputSpec(output_type)
    if spec is None:
        spec = OutputSpec(output_type)
        if len(_SPECS) >= _SPECS_MAX:
            _SPECS.pop(next(iter(_SPECS)))
        _SPECS[key] = spec
    return spec


# ── helpers ────────────────────────────────────────────────────────────────


def _adapter_schema(spec: OutputSpec[Any], type_: Any) -> dict[str, Any]:
    from pydantic import PydanticSchemaGenerationError, TypeAdapter
    from pydantic.errors import PydanticUserError

    if not isinstance(type_, type) and is_async_callable(type_):
        # pydantic validates a function by calling it: an async one gives an unawaited
        # coroutine as the run's output (pydantic-ai awaits its async output functions)
        raise ConfigError(
            f"output_type {_type_name(type_)} is an async function, whose value would be a "
            "coroutine never awaited; use a plain function or a type"
        )
    try:
        spec._adapter = TypeAdapter(type_)
        schema: dict[str, Any] = spec._adapter.json_schema()
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        raise ConfigError(
            f"output_type {type_!r} is not a type pydantic can validate "
            f"({str(exc).splitlines()[0]}); use a "
            "pydantic model, a dataclass, a TypedDict, a plain type or a JSON Schema dict"
        ) from None
    return _inline_root_ref(schema)


def _inline_root_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """A recursive model's schema is only `{"$ref": "#/$defs/M", "$defs": ...}`: put `M`'s
    own schema at the root (the `$defs` stay for the refs inside it), so the model is an
    object like any other instead of a value wrapped in `{"result": ...}`."""
    ref, defs = schema.get("$ref"), schema.get("$defs")
    if set(schema) != {"$ref", "$defs"} or not isinstance(ref, str) or not isinstance(defs, dict):
        return schema
    target = defs.get(ref.removeprefix("#/$defs/")) if ref.startswith("#/$defs/") else None
    if not isinstance(target, dict) or target.get("type") != "object":
        return schema
    return {**target, "$defs": defs}


def _checked_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ConfigError(f"output_type is not a valid JSON Schema: {exc.message}") from None
    check_schema_refs(schema, what="output_type")
    return dict(schema)


def check_schema_refs(schema: Mapping[str, Any], *, what: str) -> None:
    """Refuse a schema with a `$ref` inside it ("#/$defs/x", "#name") that points nowhere.

    The meta-schema does not look where a `$ref` points, and a validator only follows it
    when it checks a value: a schema with a dangling one failed every check of a tool's
    arguments or a model's answer, after the model call was made, with a traceback. A
    schema holding an `$id` below its root (another base for its refs) is not checked.

    Raises:
        ConfigError: a `$ref` starting with "#" resolves to nothing; the text names it.
    """
    refs: list[str] = []
    nested_ids = False

    def walk(node: Any, root: bool) -> None:
        nonlocal nested_ids
        if isinstance(node, Mapping):
            if not root and isinstance(node.get("$id"), str):
                nested_ids = True
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                refs.append(ref)
            for value in node.values():
                walk(value, False)
        elif isinstance(node, list):
            for value in node:
                walk(value, False)

    walk(schema, True)
    if not refs or nested_ids:
        return
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012, specification_with

    try:
        spec = specification_with(str(schema.get("$schema", "")), default=DRAFT202012)
        resource = spec.create_resource(dict(schema))
    except Exception:  # an unknown $schema: the meta-schema check speaks for it
        return
    base = resource.id() or ""
    resolver = Registry().with_resource(base, resource).resolver(base_uri=base)
    targets: dict[str, Any] = {}
    for ref in refs:
        try:
            targets[ref] = resolver.lookup(ref).contents
        except Unresolvable:
            raise ConfigError(
                f"{what} is not a valid JSON Schema: $ref {ref!r} points to nothing in it"
            ) from None
    _check_no_ref_loop(schema, targets, what)


_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONES = ("not", "if", "then", "else")


def _in_place_refs(node: Any) -> list[str]:
    """The local `$ref`s that apply to the same value as `node` does: its own, and those of
    its `allOf`/`anyOf`/`oneOf`/`not`/`if`/`then`/`else` branches (not of its properties or
    items, which apply to a part of the value)."""
    if not isinstance(node, Mapping):
        return []
    found = []
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        found.append(ref)
    for key in _IN_PLACE_LISTS:
        branches = node.get(key)
        for branch in branches if isinstance(branches, list) else ():
            found += _in_place_refs(branch)
    for key in _IN_PLACE_ONES:
        found += _in_place_refs(node.get(key))
    return found


def _check_no_ref_loop(schema: Mapping[str, Any], targets: dict[str, Any], what: str) -> None:
    """Refuse `$ref`s that lead back to where they start without a property or an item
    between (`{"$ref": "#"}`, two definitions naming each other): checking any value would
    never end. A schema that recurses through a property (a tree) passes.

    Raises:
        ConfigError: such a loop; the text names a `$ref` of it.
    """
    done: set[int] = set()

    def visit(node: Any, path: list[int]) -> None:
        if id(node) in done:
            return
        for ref in _in_place_refs(node):
            target = targets.get(ref)
            if target is None:
                continue
            if id(target) in path or target is node:
                raise ConfigError(
                    f"{what} is not a valid JSON Schema: $ref {ref!r} leads back to itself "
                    "with no property or item between, so checking a value would never end"
                )
            visit(target, [*path, id(target)])
        done.add(id(node))

    visit(schema, [id(schema)])
    for target in targets.values():
        visit(target, [id(target)])


def _schema_validator(schema: dict[str, Any]) -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema)


def _wrap(inner: dict[str, Any]) -> dict[str, Any]:
    inner = dict(inner)
    defs = inner.pop("$defs", None)
    inner.pop("title", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {RESULT_KEY: inner},
        "required": [RESULT_KEY],
        "additionalProperties": False,
    }
    if defs is not None:  # refs point at the root ("#/$defs/..."): keep them there
        wrapped["$defs"] = defs
    return wrapped


def _pydantic_problems(exc: Any, wrapped: bool) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for error in exc.errors(include_url=False):
        loc = [RESULT_KEY, *error.get("loc", ())] if wrapped else list(error.get("loc", ()))
        problem = str(error.get("msg", "invalid"))
        if "input" in error and error.get("type") != "missing":
            problem += f" (got {_short(error['input'])})"
        problems.append((_json_path(loc), problem))
    return problems


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _MAX_INPUT_CHARS else text[: _MAX_INPUT_CHARS - 3] + "..."


def _several_types(several: list[Any] | tuple[Any, ...]) -> str:
    """Why a list of output types (pydantic-ai's shape for "one of these") is refused, and
    what says the same here: their union, or an output function alone."""
    kind = "list" if isinstance(several, list) else "tuple"
    functions = [_type_name(t) for t in several if callable(t) and not isinstance(t, type)]
    if functions:
        instead = f"give an output function ({', '.join(functions)}) alone"
    else:
        instead = "for a value of one of several types give their union " + (
            f"({' | '.join(_type_name(t) for t in several)})"
        )
    return f"output_type takes one type, not a {kind}: {instead}"


def _type_name(type_: Any) -> str:
    """A type as its code reads, without module paths: "Apple | Banana", "list[Item]",
    "Literal['a', 'b']" (the model reads it in retry messages)."""
    if type_ is type(None):
        return "None"
    origin, args = typing.get_origin(type_), typing.get_args(type_)
    if origin is typing.Annotated:  # its metadata is the schema's, not the type's name
        return _type_name(args[0])
    if origin is Literal:
        return f"Literal[{', '.join(repr(arg) for arg in args)}]"
    if origin is typing.Union or isinstance(type_, types.UnionType):
        return " | ".join(_type_name(arg) for arg in args)
    if origin is not None and args:
        return f"{_type_name(origin)}[{', '.join(_type_name(arg) for arg in args)}]"
    name = getattr(type_, "__name__", None)
    return str(type_) if name is None else str(name)


def read_schema_file(path: Path) -> dict[str, Any]:
    """The JSON Schema object in the UTF-8 JSON file at `path` (not yet checked against the
    meta-schema: `OutputSpec` does that).

    Raises:
        ConfigError: the file cannot be read, is not JSON, or holds no JSON object; the text
            starts with `path`, so a caller only puts where it was given in front.
    """
    try:
        schema = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{path}: not JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise ConfigError(f"{path}: a JSON Schema must be an object")
    return schema
