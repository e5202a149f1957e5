"""`@tool`: an `AgentTool` from a typed Python function (DESIGN R-4.3).

The JSON Schema comes from the type hints through a pydantic model built from the signature
(parameters with defaults are not required; `Annotated[T, Field(description=...)]` is honoured),
property descriptions from the docstring's parameters (Google `Args:` and `Keyword Args:`,
NumPy `Parameters` and `Other Parameters`, Sphinx `:param x:`, Epydoc `@param x:`), the tool
description from the docstring's summary and body, the label from the name (`get_time` → "Get
time").
Parameters named `tool_call_id`, `signal` and `on_update` are injected by the pipeline and left
out of the schema. A method decorated in its class body is, read from an instance, the tool of
that instance's bound method (`self` is no argument the model gives); a `@classmethod` so
decorated is the tool of the method bound to its class, a `@staticmethod` of its function.

The generated `execute(tool_call_id, args, signal, on_update)` converts the (already
schema-validated) arguments with the pydantic model, so a parameter typed as a model or a
dataclass receives an instance, then calls the function with keyword arguments. It is async when
the function is, plain otherwise (the pipeline runs plain tools on a worker thread).
Return values: an `AgentToolResult` as is, a `str` as is (the pipeline wraps it), an image's
bytes as that image, a list of blocks, strings and image bytes as that content, anything else
JSON-dumped into one text content.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import functools
import inspect
import itertools
import re
import sys
import types
import typing
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, overload

from yiemagent.errors import ConfigError
from yiemagent.tools.schema import ToolArgumentsError, argument_path
from yiemagent.types.callbacks import is_async_callable
from yiemagent.types.json_text import json_like
from yiemagent.types.messages import ImageContent, TextContent
from yiemagent.types.signal import AbortSignal
from yiemagent.types.tools import (
    AgentTool,
    AgentToolResult,
    OnUpdate,
    RequiresApproval,
    ToolExecute,
)

if TYPE_CHECKING:
    import pydantic
    from pydantic.json_schema import GenerateJsonSchema, JsonSchemaWarningKind

__all__ = ["INJECTED_PARAMETERS", "MAX_RETURNED_ITEMS", "clean_schema", "parse_docstring", "tool"]

INJECTED_PARAMETERS = frozenset({"tool_call_id", "signal", "on_update"})
"""Parameters the pipeline fills in; never part of the schema."""
MAX_RETURNED_ITEMS = 100_000
"""The most items read of an iterator or async generator a tool returns: one that yields
more (`itertools.count()`, endless, is read in C with the GIL held and would freeze every
thread) ends the call in an error."""

_SECTIONS = (
    r"Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|"
    r"Returns|Return|Yields|Receives|Raises|Examples?|Notes?|Attributes|Methods|Warnings?|"
    r"See Also|References|Todo"
)
_SECTION_RE = re.compile(rf"^({_SECTIONS}):\s*$")
"""A Google section heading (`Args:`)."""
_NUMPY_SECTION_RE = re.compile(rf"^({_SECTIONS})$")
"""A NumPy section heading, underlined with dashes on the next line."""
_UNDERLINE_RE = re.compile(r"^-{3,}$")
_PARAMETER_SECTIONS = frozenset(
    {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
    | {"Other Parameters"}
)
_NAMES = r"(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)"
"""One parameter name, or several sharing a description (`x, y`)."""
_TYPE = r"\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)"
"""A Google parameter's type in parentheses, which may hold parentheses of its own, two
deep (`x (list(int)): ...`, `y (str | list(tuple(int, int))): ...`)."""
_ARG_RE = re.compile(rf"^{_NAMES}\s*(?:{_TYPE})?\s*:\s*(.*)$")
_NUMPY_ARG_RE = re.compile(rf"^{_NAMES}\s*(?::.*)?$")
"""A NumPy parameter line: `name : type` or `x, y : type` (the description is on the lines
below)."""
_SPHINX_PARAM_RE = re.compile(
    r"^:(?:param|parameter|arg|argument|key|keyword)\s+(?:[^:]*\s)?\*{0,2}(\w+)\s*:\s*(.*)$"
)
_SPHINX_FIELD_RE = re.compile(r"^:\w[^:]*:")
"""Any Sphinx field (`:returns:`, `:type x:`, `:raises E:`)."""
_EPYDOC_PARAM_RE = re.compile(r"^@(?:param|keyword|kwarg|kwparam)\s+\*{0,2}(\w+)\s*:?\s*(.*)$")
_EPYDOC_FIELD_RE = re.compile(
    r"^@(?:param|keyword|kwarg|kwparam|type|return|returns|rtype|raise|raises)\b"
)
"""An Epydoc field (`@param x: ...`, `@return: ...`; the colon after the name optional, as
javadoc writes it)."""

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_VALUES = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
)


@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    parallel: bool = False,
    timeout_s: float | None = None,
    requires_approval: RequiresApproval = False,
) -> AgentTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    parallel: bool = False,
    timeout_s: float | None = None,
    requires_approval: RequiresApproval = False,
) -> Callable[[Callable[..., Any]], AgentTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    label: str | None = None,
    description: str | None = None,
    parallel: bool = False,
    timeout_s: float | None = None,
    requires_approval: RequiresApproval = False,
) -> AgentTool | Callable[[Callable[..., Any]], AgentTool]:
    """Turn a typed function (plain or async) into an `AgentTool`.

    Use as `@tool`, `@tool(name=..., label=..., parallel=..., timeout_s=...)`, or called on
    an existing callable with the same options, `tool(fn, name=...)`.

    Args:
        fn: the function; its parameters become the tool's arguments.
        name: the tool name (default: the function's name); 1 to 64 of `A-Za-z0-9_-`.
        label: a human-readable name (default: from the name, "get_time" → "Get time").
        description: the text the model sees (default: the docstring without its sections).
        parallel: may run beside other tools in a parallel batch.
        timeout_s: bound on one call, in seconds.
        requires_approval: `True`, or a function of the validated arguments returning a
            bool: hold each call until a person approves or rejects it.

    Returns:
        The `AgentTool` (or, without `fn`, a decorator producing it).

    Raises:
        ConfigError: an invalid name, `*args`/`**kwargs`/positional-only parameters, type
            hints pydantic cannot turn into a JSON Schema, or a method's function (first
            parameter `self`) made a tool outside its class body.
    """

    # `@tool` and `@tool(...)` are both called where the function is defined: its local
    # names resolve hints that name a class defined there (see `_arguments_model`).
    caller = inspect.currentframe()
    caller = caller.f_back if caller is not None else None
    local_names = dict(caller.f_locals) if caller is not None else {}
    del caller

    def build(func: Callable[..., Any]) -> AgentTool:
        options: dict[str, Any] = {
            "name": name,
            "label": label,
            "description": description,
            "parallel": parallel,
            "timeout_s": timeout_s,
            "requires_approval": requires_approval,
            "local_names": local_names,
        }
        if isinstance(func, classmethod):
            return _ClassMethodTool.of(func, options)
        if _method_of(func) and local_names.get("__qualname__") == _owner_name(func):
            return _MethodTool.of(func, options)  # decorated in its class body
        return _build_tool(func, **options)

    return build if fn is None else build(fn)


@dataclasses.dataclass(slots=True, eq=False)
class _ClassMethodTool(AgentTool):
    """`@tool` over `@classmethod` in a class body. Until the class exists its schema leaves
    `cls` out and a call says what to use; once it does (`__set_name__`), the class holds
    the tool of the method bound to it in its place (a subclass reads that same tool)."""

    method: Any = dataclasses.field(default=None, repr=False)
    options: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, method: Any, options: dict[str, Any]) -> _ClassMethodTool:
        func = method.__func__
        shape = _build_tool(functools.partial(func, None), **options)  # the schema sans cls

        def execute(
            tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
        ) -> str:
            raise ValueError(
                f"tool {shape.name!r} is a classmethod outside a class body: give the tool "
                f"of the bound method, tool(SomeClass.{func.__name__})"
            )

        fields = {f.name: getattr(shape, f.name) for f in dataclasses.fields(AgentTool)}
        return cls(**{**fields, "execute": execute}, method=method, options=options)

    def __set_name__(self, owner: type, name: str) -> None:
        setattr(owner, name, _build_tool(self.method.__get__(None, owner), **self.options))


def _owner_name(func: Callable[..., Any]) -> str:
    """The qualified name of the class (or function) `func` is defined in; "" at top level."""
    return getattr(func, "__qualname__", "").rpartition(".")[0]


def _method_of(func: Callable[..., Any]) -> bool:
    """Whether `func` is a method's function: defined in a class body (not in a function),
    its first parameter `self`."""
    if not inspect.isfunction(func) or _owner_name(func).endswith("<locals>"):
        return False
    first = next(iter(inspect.signature(func).parameters), None)
    return first == "self" and bool(_owner_name(func))


@dataclasses.dataclass(slots=True, eq=False)
class _MethodTool(AgentTool):
    """`@tool` on a method in its class body. Read from an instance (`account.deposit`) it
    is the tool of that instance's bound method, kept in the instance's `__dict__` (one per
    instance, gone with it); read from the class, its schema leaves `self` out and a call
    says to use an instance."""

    function: Callable[..., Any] | None = dataclasses.field(default=None, repr=False)
    options: dict[str, Any] = dataclasses.field(default_factory=dict, repr=False)
    attribute: str = dataclasses.field(default="", repr=False)
    """The name the class holds it under."""

    @classmethod
    def of(cls, func: Callable[..., Any], options: dict[str, Any]) -> _MethodTool:
        shape = _build_tool(functools.partial(func, None), **options)  # the schema sans self
        owner = _owner_name(func).rpartition(".")[2]

        def execute(
            tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
        ) -> str:
            raise ValueError(
                f"tool {shape.name!r} is a method of {owner}: give the tool of an instance "
                f"(instance.{func.__name__}), not the class's"
            )

        fields = {f.name: getattr(shape, f.name) for f in dataclasses.fields(AgentTool)}
        return cls(**{**fields, "execute": execute}, function=func, options=options)

    def __set_name__(self, owner: type, name: str) -> None:
        self.attribute = name

    def __get__(self, instance: object, owner: type | None = None) -> AgentTool:
        if instance is None or self.function is None:
            return self
        made = _build_tool(self.function.__get__(instance, owner), **self.options)
        held = getattr(instance, "__dict__", None)
        if isinstance(held, dict) and self.attribute:
            held[self.attribute] = made  # read from there from now on (no __set__ here)
        return made


def _build_tool(
    func: Callable[..., Any],
    *,
    name: str | None,
    label: str | None,
    description: str | None,
    parallel: bool,
    timeout_s: float | None,
    requires_approval: RequiresApproval = False,
    local_names: Mapping[str, Any] | None = None,
) -> AgentTool:
    target, bound = _unwrap_partial(func)
    tool_name = name or getattr(target, "__name__", "")
    if not tool_name:
        raise ConfigError(
            f"tool {func!r} has no __name__: name it with tool(obj, name=...) or @tool(name=...)"
        )
    if target is func and _method_of(func):
        raise ConfigError(
            f"tool {tool_name!r}: its first parameter 'self' is the instance of a method; "
            f"make the tool of a bound method, tool(obj.{func.__name__}), or decorate the "
            "method in its class"
        )
    # An object with a __call__ method: its hints and its parameters' docs are __call__'s.
    plain = inspect.isroutine(target) or inspect.isclass(target)
    method = target if plain else type(target).__call__
    summary, arg_docs = parse_docstring(inspect.getdoc(target) or inspect.getdoc(method) or "")
    if not arg_docs and method is not target:
        arg_docs = parse_docstring(inspect.getdoc(method) or "")[1]
    params, injected = _parameters(func, tool_name, bound)
    model = _arguments_model(method, tool_name, params, local_names or {})
    schema = clean_schema(model.model_json_schema(schema_generator=_tool_schema_generator()))
    schema.setdefault("properties", {})
    for prop, doc in arg_docs.items():
        sub = schema["properties"].get(prop)
        if isinstance(sub, dict) and doc and "description" not in sub:
            sub["description"] = doc
    execute = _make_execute(func, tool_name, model, [p.name for p in params], injected)
    return AgentTool(
        name=tool_name,
        label=label or _label_from_name(tool_name),
        description=description or summary or _label_from_name(tool_name),
        input_schema=schema,
        execute=execute,
        parallel=parallel,
        timeout_s=timeout_s,
        requires_approval=requires_approval,
    )


def _unwrap_partial(func: Callable[..., Any]) -> tuple[Callable[..., Any], frozenset[str]]:
    """The function a `functools.partial` wraps (its name, docstring and type hints are the
    tool's), and the keywords the partial binds (the model never sets those)."""
    bound: set[str] = set()
    while isinstance(func, functools.partial):
        bound.update(func.keywords)
        func = func.func
    return func, frozenset(bound)


def _parameters(
    func: Callable[..., Any], tool_name: str, bound: frozenset[str] = frozenset()
) -> tuple[list[inspect.Parameter], frozenset[str]]:
    params: list[inspect.Parameter] = []
    injected: set[str] = set()
    for param in inspect.signature(func).parameters.values():
        if param.name in bound:
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ConfigError(
                f"tool {tool_name!r}: parameter {param.name!r} must be an ordinary or "
                "keyword-only parameter (no *args, **kwargs or positional-only)"
            )
        if param.name in INJECTED_PARAMETERS:
            injected.add(param.name)
        else:
            params.append(param)
    return params, frozenset(injected)


def _type_hints(func: Callable[..., Any], local_names: Mapping[str, Any]) -> dict[str, Any]:
    """`func`'s type hints, its module's names first, then `local_names` (those of the
    function that defined it): with postponed annotations (`from __future__ import
    annotations`) a hint naming a class defined in that function is only a string, which the
    module's names alone cannot resolve."""
    try:
        return typing.get_type_hints(func, include_extras=True)
    except NameError:
        if not local_names:
            raise
        return typing.get_type_hints(func, localns=dict(local_names), include_extras=True)


def _parameter_hints(
    func: Callable[..., Any], tool_name: str, error: Exception, local_names: Mapping[str, Any]
) -> dict[str, Any]:
    """The parameters' type hints alone, when the return annotation (which the schema does
    not use) cannot be resolved, e.g. a name imported under `TYPE_CHECKING`.

    Raises:
        ConfigError: a parameter's hint cannot be resolved either.
    """
    annotations = {k: v for k, v in getattr(func, "__annotations__", {}).items() if k != "return"}
    holder = types.SimpleNamespace(__annotations__=annotations)
    unwrapped = inspect.unwrap(func)
    try:
        return typing.get_type_hints(
            holder,
            globalns=getattr(unwrapped, "__globals__", {}),
            localns=dict(local_names),
            include_extras=True,
        )
    except Exception:
        raise ConfigError(f"tool {tool_name!r}: cannot resolve type hints: {error}") from error


def _arguments_model(
    func: Callable[..., Any],
    tool_name: str,
    params: list[inspect.Parameter],
    local_names: Mapping[str, Any],
) -> type[pydantic.BaseModel]:
    try:
        hints = _type_hints(func, local_names)
    except Exception as exc:
        hints = _parameter_hints(func, tool_name, exc, local_names)
    import pydantic  # lazily: `import yiemagent.tools` stays light
    import pydantic_core

    fields: dict[str, Any] = {}
    for index, param in enumerate(params):
        annotation = _pydantic_ready(hints.get(param.name, Any))
        # No default of the function's own: a `Field(default=...)` in the hint may give one
        # (`...` would override it and make the parameter required).
        no_default = pydantic_core.PydanticUndefined
        default = no_default if param.default is inspect.Parameter.empty else param.default
        # The parameter's name is the field's alias (unless the hint gives its own): as a
        # field name, one like `model_config`, `model_extra` or `_id` is taken by pydantic
        # (the function got the model's config, a property's value, or nothing).
        if typing.get_origin(annotation) is typing.Annotated:
            base, *metadata = typing.get_args(annotation)
            # `Annotated[int, "First number"]`, as LangChain's tools write a description;
            # a Field's own description after it still wins
            said = next((m for m in metadata if isinstance(m, str) and m.strip()), None)
            alias = pydantic.Field(alias=param.name, description=said)
            annotation = typing.Annotated[(base, alias, *metadata)]
        else:
            annotation = typing.Annotated[annotation, pydantic.Field(alias=param.name)]
        fields[_field_name(index)] = (annotation, default)
    try:
        model = pydantic.create_model(
            f"{tool_name}_arguments",
            __config__=pydantic.ConfigDict(extra="ignore", protected_namespaces=()),
            **fields,
        )
        model.model_json_schema(schema_generator=_tool_schema_generator())
    except (pydantic.PydanticUserError, pydantic_core.SchemaError, TypeError, NameError) as exc:
        # pydantic's text runs on for lines of advice about its own config; keep the first
        # line and name the parameter to change.
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        reason = reason.split(" Set `arbitrary_types_allowed", 1)[0]  # not the tool's to set
        culprit = ""
        for param in params:
            try:
                pydantic.TypeAdapter(hints.get(param.name, Any)).json_schema(
                    schema_generator=_tool_schema_generator()
                )
            except Exception:
                culprit = (
                    f"parameter {param.name!r} has a type with no JSON Schema (use a basic type, "
                    "a pydantic model, a dataclass or a TypedDict): "
                )
                break
        raise ConfigError(
            f"tool {tool_name!r}: cannot build a JSON Schema: {culprit}{reason}"
        ) from exc
    return typing.cast("type[pydantic.BaseModel]", model)


@functools.cache
def _tool_schema_generator() -> type[GenerateJsonSchema]:
    """pydantic's JSON Schema generator, silent about a default with no JSON form.

    A parameter whose default is no JSON value (a sentinel `object()`, a set of objects,
    `math.inf` or `nan`, which strict JSON has no number for and an HTTP client refuses to
    send) is optional in the schema and has no `default` there; when the model leaves it
    out the function gets its own default, a value the model could not have sent anyway.
    pydantic leaves such a default out as well (though it writes `inf` as is), but warns at
    each schema built, which a program running with warnings as errors would get as an
    exception from `@tool`.
    """
    import pydantic_core
    from pydantic.json_schema import GenerateJsonSchema

    class ToolSchemaGenerator(GenerateJsonSchema):
        def encode_default(self, dft: Any) -> Any:
            encoded = super().encode_default(dft)
            if not json_like(encoded):
                raise pydantic_core.PydanticSerializationError(f"{dft!r} has no strict JSON form")
            return encoded

        def render_warning_message(self, kind: JsonSchemaWarningKind, detail: str) -> str | None:
            if kind == "non-serializable-default":
                return None
            return super().render_warning_message(kind, detail)

    return ToolSchemaGenerator


def _pydantic_ready(hint: Any) -> Any:
    """`hint` with each `typing.TypedDict` in it, which pydantic refuses before Python 3.12
    ("use typing_extensions.TypedDict"), made the same `typing_extensions.TypedDict`; on
    later Pythons, and for hints holding none, `hint` itself."""
    if sys.version_info >= (3, 12):
        return hint
    if isinstance(hint, type) and typing.is_typeddict(hint) and type(hint).__module__ == "typing":
        return _extensions_typed_dict(hint)
    args = typing.get_args(hint)
    origin = typing.get_origin(hint)
    if not args or origin in (None, typing.Literal) or isinstance(args[0], list):
        return hint  # a Callable's parameter list: no JSON Schema either way
    ready = tuple(_pydantic_ready(arg) for arg in args)
    if ready == args:
        return hint
    if origin is typing.Annotated:
        return typing.Annotated[(ready[0], *hint.__metadata__)]
    if origin in (typing.Union, types.UnionType):
        return typing.Union[ready]  # noqa: UP007 - built from a tuple of members
    with contextlib.suppress(AttributeError):
        return hint.copy_with(ready)  # a `typing` alias (List[...], NotRequired[...])
    return origin[ready]  # a builtin's (list[...], dict[...])


@functools.cache
def _extensions_typed_dict(typed_dict: type) -> Any:
    """`typed_dict` (a `typing.TypedDict`) as a `typing_extensions.TypedDict` of the same
    name, docstring, fields and required keys."""
    import typing_extensions

    fields: dict[str, Any] = {}
    for key, hint in typing.get_type_hints(typed_dict, include_extras=True).items():
        # `__required_keys__` misses a NotRequired written as text (postponed annotations)
        required = key in typed_dict.__required_keys__  # type: ignore[attr-defined]
        while typing.get_origin(hint) in (typing.NotRequired, typing.Required):
            required = typing.get_origin(hint) is typing.Required
            hint = typing.get_args(hint)[0]
        hint = _pydantic_ready(hint)
        fields[key] = hint if required else typing_extensions.NotRequired[hint]
    factory: Any = typing_extensions.TypedDict
    made = factory(typed_dict.__name__, fields)
    made.__doc__, made.__module__ = typed_dict.__doc__, typed_dict.__module__
    made.__qualname__ = typed_dict.__qualname__
    return made


def _field_name(index: int) -> str:
    """The arguments model's name for the function's `index`th parameter (its alias is the
    parameter's name)."""
    return f"arg{index}"


def _make_execute(
    func: Callable[..., Any],
    tool_name: str,
    model: type[pydantic.BaseModel],
    names: list[str],
    injected: frozenset[str],
) -> ToolExecute:
    import pydantic

    def call_kwargs(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if names:
            try:
                parsed = model.model_validate(args)
            except pydantic.ValidationError as exc:
                # what the schema cannot say (a date's format, a validator's rule), said as
                # a schema failure is: each path and problem, and the arguments received
                problems = [
                    (argument_path(error["loc"]), error["msg"])
                    for error in exc.errors(include_url=False)
                ]
                raise ToolArgumentsError(tool_name, problems, args) from None
            kwargs = {n: getattr(parsed, _field_name(i)) for i, n in enumerate(names)}
        if "tool_call_id" in injected:
            kwargs["tool_call_id"] = tool_call_id
        if "signal" in injected:
            kwargs["signal"] = signal
        if "on_update" in injected:
            kwargs["on_update"] = on_update
        return kwargs

    if is_async_callable(func) or inspect.isasyncgenfunction(func):

        async def execute_async(
            tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
        ) -> AgentToolResult | str:
            return await _settled(func(**call_kwargs(tool_call_id, args, signal, on_update)))

        execute_async.__wrapped__ = func  # type: ignore[attr-defined]  # where it came from
        return execute_async

    def execute(
        tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult | str | Awaitable[AgentToolResult | str]:
        value = func(**call_kwargs(tool_call_id, args, signal, on_update))
        if inspect.isawaitable(value) or inspect.isasyncgen(value):
            # a plain function handing back async work (a sync decorator around an async
            # one): the pipeline awaits what this returns, on the event loop
            return _settled(value)
        return to_tool_return(value)

    execute.__wrapped__ = func  # type: ignore[attr-defined]  # where it came from (a clash text)
    return execute


async def _settled(value: object) -> AgentToolResult | str:
    """The tool return of what an async tool function gave: an awaitable's value (awaited
    again while it is one: an async function that returned async work it forgot to await),
    or the items an async generator yields as a list (as a generator's are)."""
    while inspect.isawaitable(value):
        value = await value
    if inspect.isasyncgen(value):
        items: list[object] = []
        try:
            async for item in value:
                items.append(item)
                if len(items) > MAX_RETURNED_ITEMS:
                    raise ValueError(_too_many_items())
        finally:
            await value.aclose()
        return to_tool_return(items)
    return to_tool_return(value)


def _too_many_items() -> str:
    return (
        f"the tool returned an iterator of more than {MAX_RETURNED_ITEMS:,} items "
        "(an endless one?); return a list, or fewer items"
    )


def _read_items(items: Iterator[object]) -> list[object]:
    """At most `MAX_RETURNED_ITEMS` of `items`, the iterator closed after (its cleanup runs).

    Raises:
        ValueError: `items` has more.
    """
    try:
        read = list(itertools.islice(items, MAX_RETURNED_ITEMS + 1))
    finally:
        close = getattr(items, "close", None)
        if callable(close):
            close()
    if len(read) > MAX_RETURNED_ITEMS:
        raise ValueError(_too_many_items())
    return read


def to_tool_return(value: object) -> AgentToolResult | str:
    """An `AgentToolResult` or `str` as is; a content block (`TextContent`, `ImageContent`)
    as the result's content; the bytes of a PNG, JPEG, GIF or WebP image as that image; a
    list or tuple of blocks, strings and image bytes with at least one block or image as the
    result's content (a screenshot stays an image, a string beside it a text); anything else
    as its JSON text, where bytes are their UTF-8 text or, when some are not UTF-8, their
    URL-safe base64. A value with no JSON form is its `str()`, unquoted (one nested in a
    list or a model is a JSON string there)."""
    if isinstance(value, AgentToolResult | str):
        return value
    if isinstance(value, TextContent | ImageContent):
        return AgentToolResult([value])
    if isinstance(value, list | tuple) and value:
        blocks = [_content_block(item) for item in value]
        content = [TextContent(b) if isinstance(b, str) else b for b in blocks if b is not None]
        if len(content) == len(blocks) and not all(isinstance(b, str) for b in blocks):
            return AgentToolResult(content)
    image = _image_content(value)
    if image is not None:
        return AgentToolResult([image])
    import pydantic_core

    if isinstance(value, Iterator):  # a generator: read once, here, so what it raises is
        value = _read_items(value)  # the call's error and a second serialisation sees its items
    own_text: list[str] = []

    def as_text(item: object) -> str:
        text = str(item)
        if item is value:
            own_text.append(text)
        return text

    try:
        text = pydantic_core.to_json(value, fallback=as_text)
    except pydantic_core.PydanticSerializationError as exc:
        if "utf-8" not in str(exc):  # a cycle, a depth, a fallback that raised: the error
            raise
        # Bytes that are no UTF-8 (a zip, a PDF) are no JSON text: the value's bytes go as
        # base64 (pydantic's URL-safe alphabet) rather than failing a call that succeeded.
        text = pydantic_core.to_json(value, fallback=as_text, bytes_mode="base64")
    if own_text:  # the value itself has no JSON form: its text, not that text in quotes
        return AgentToolResult.text(own_text[0])
    return AgentToolResult.text(text.decode())


def _image_content(value: object) -> ImageContent | None:
    """`value` as an image when it is the bytes of a PNG, JPEG, GIF or WebP image."""
    if not isinstance(value, bytes | bytearray):
        return None
    from yiemagent.ai.attachments import sniff_mime_type  # only for returned bytes

    mime_type = sniff_mime_type(bytes(value[:16]))
    if mime_type is None or not mime_type.startswith("image/"):
        return None
    return ImageContent(base64.b64encode(value).decode(), mime_type)


def _content_block(item: object) -> TextContent | ImageContent | str | None:
    """An item of a returned list as content: a block or a string as is, image bytes as
    that image; `None` for anything else (the list is then one JSON value)."""
    if isinstance(item, TextContent | ImageContent | str):
        return item
    return _image_content(item)


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into the description and the parameters' descriptions.

    Parameters are read from Google sections (`Args:`, `Keyword Args:`, `Other
    Parameters:`...), NumPy sections (`Parameters` underlined with dashes), Sphinx fields
    (`:param x:`, `:param int x:`) and Epydoc fields (`@param x:`, also without the colon);
    continuation lines of a parameter are joined with spaces,
    and parameters named together (`x, y : int`) share their description.

    Returns:
        `(description, {parameter: description})`; the description is the text before the
        first section heading, Sphinx or Epydoc field.
    """
    description: list[str] = []
    args: dict[str, str] = {}
    section: str | None = None
    numpy = False  # the section is NumPy's: parameter lines at the heading's indent
    current: list[str] = []  # the parameters the lines being read describe
    arg_indent = -1
    lines = doc.splitlines()
    for number, line in enumerate(lines):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        following = lines[number + 1].strip() if number + 1 < len(lines) else ""
        if indent == 0 and _UNDERLINE_RE.match(stripped) and section is not None and numpy:
            continue  # the underline of the heading just read
        heading = _SECTION_RE.match(stripped) if indent == 0 else None
        if heading is None and indent == 0 and _UNDERLINE_RE.match(following):
            heading = _NUMPY_SECTION_RE.match(stripped)
            numpy = heading is not None
        elif heading is not None:
            numpy = False
        if heading is not None:
            section, current, arg_indent = heading.group(1), [], -1
            continue
        field = indent == 0 and (
            _SPHINX_FIELD_RE.match(stripped) or _EPYDOC_FIELD_RE.match(stripped)
        )
        if field:
            section, numpy, current = "sphinx", False, []
            param = _SPHINX_PARAM_RE.match(stripped) or _EPYDOC_PARAM_RE.match(stripped)
            if param is not None:
                current = [param.group(1)]
                args[param.group(1)] = param.group(2).strip()
            continue
        if section is None:
            description.append(line)
            continue
        if not stripped:
            continue
        if section == "sphinx":
            if indent > 0:
                for name in current:
                    args[name] = f"{args[name]} {stripped}".strip()
            continue
        if section not in _PARAMETER_SECTIONS:
            continue
        match = (_NUMPY_ARG_RE if numpy else _ARG_RE).match(stripped)
        if match and (arg_indent < 0 or indent <= arg_indent):
            arg_indent = indent
            current = [name.strip().lstrip("*") for name in match.group(1).split(",")]
            for name in current:
                args[name] = "" if numpy else match.group(2).strip()
        else:
            for name in current:
                args[name] = f"{args[name]} {stripped}".strip()
    return "\n".join(description).strip(), args


def clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop pydantic's `title` annotations (noise for small models), in place; return it."""
    schema.pop("title", None)
    for key in _SCHEMA_MAPS:
        sub = schema.get(key)
        if isinstance(sub, dict):
            for value in sub.values():
                if isinstance(value, dict):
                    clean_schema(value)
    for key in _SCHEMA_LISTS:
        sub = schema.get(key)
        if isinstance(sub, list):
            for value in sub:
                if isinstance(value, dict):
                    clean_schema(value)
    for key in _SCHEMA_VALUES:
        sub = schema.get(key)
        if isinstance(sub, dict):
            clean_schema(sub)
    return schema


def _label_from_name(name: str) -> str:
    """`get_time` / `getTime` / `get-time` → "Get time"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    words = spaced.split()
    if not words:
        return name
    text = " ".join(words).lower()
    return text[0].upper() + text[1:]
