"""Docstrings for type aliases that `help()` shows.

A type alias is an object of `typing` (`A | B`, `Literal[...]`, `Callable[...]`), so
`help(StopReason)` printed the text of its class ("Represent a PEP 604 union type"), and a
string after the alias reaches only source readers. On Python 3.11 to 3.13 the objects of
`typing.Union[...]`, `typing.Literal[...]` and `typing.Callable[...]` take a `__doc__` of
their own, which `help()` prints under the alias's value; `types.UnionType` (`A | B`) and
`collections.abc.Callable[...]` take none. `typing` caches those objects, one for every
alias with the same members: each alias gets a copy of its own, so its text reaches no
other alias. Where the running Python gives an alias no `__doc__` of its own (3.14 makes
`typing.Union[...]` a `types.UnionType`) it stays as it is.
"""

from __future__ import annotations

import collections.abc
import sys
import types
import typing
from typing import Any

__all__ = ["describe_alias"]

_CALLABLE: Any = collections.abc.Callable


def describe_alias(module: str, name: str, doc: str) -> None:
    """Give the type alias `name` of the module named `module` the docstring `doc`, which
    `help()` shows: the module's `name` becomes an equal copy that carries it (`==`,
    `isinstance` and `typing.get_args` answer as for the alias). Call it right after the
    alias, before another module imports it."""
    namespace = vars(sys.modules[module])
    namespace[name] = _with_doc(namespace[name], f"{name}, a type alias.\n\n{doc}")


def _with_doc(alias: Any, doc: str) -> Any:
    own = _own_copy(alias)
    if own is None:
        return alias
    try:
        own.__doc__ = doc
    except (AttributeError, TypeError):
        return alias
    return own


def _own_copy(alias: Any) -> Any:
    """A copy of `alias` that is no other alias's (`typing` caches them), as a `typing`
    object that takes a `__doc__`; `None` when the running Python has none."""
    try:
        if isinstance(alias, types.UnionType) or typing.get_origin(alias) is typing.Union:
            return (
                None if _TypeAliasUnion is None else _TypeAliasUnion(typing.Union, alias.__args__)
            )
        if isinstance(alias, types.GenericAlias) and typing.get_origin(alias) is _CALLABLE:
            *params, result = alias.__args__
            alias = typing.Callable[... if params[:1] == [Ellipsis] else params, result]
        generic = getattr(typing, "_GenericAlias", None)
        if generic is None or not isinstance(alias, generic):
            return None
        return generic.copy_with(alias, alias.__args__)  # a new object, where `typing` caches
    except Exception:  # a Python whose `typing` objects are made otherwise
        return None


def _union_with_checks() -> Any:
    """A `typing.Union[...]` object's class whose `isinstance` and `issubclass` ask each
    member as `A | B` does (`typing.Union`'s asks `issubclass`, which a protocol with data
    members refuses); `None` where `typing` has no such class to extend."""
    base: Any = getattr(typing, "_UnionGenericAlias", None)
    if not isinstance(base, type):
        return None
    try:

        class _TypeAliasUnion(base, _root=True):  # type: ignore[misc, call-arg]
            def __instancecheck__(self, obj: object) -> bool:
                return isinstance(obj, self.__args__)

            def __subclasscheck__(self, cls: type) -> bool:
                return issubclass(cls, self.__args__)

    except Exception:
        return None
    return _TypeAliasUnion


_TypeAliasUnion = _union_with_checks()
