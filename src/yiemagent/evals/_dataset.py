"""`Dataset`: the `Case`s an eval runs, built in code or read from a YAML or JSONL file.

A file holds cases: YAML `cases:` (a list), or JSONL with one case object a line. Each case
has `name`, `input`, optional `expected`, `metadata` and `checks`; a check item is a check
name (`no_tool_called`), `{name: argument}` (`contains: "391"`, `contains: [a, b]`), or
`{name: {keyword: value}}` when every key is one of the check's parameters
(`tool_called: {name: get_time, args: {place: Tokyo}}`). A name `FILE.py:FUNCTION` (the
file relative to the dataset's folder) or `MODULE:FUNCTION` is a plain function check; with
an argument, the function is called with it and returns the check. A YAML file may also give
`workdir:`, the folder (relative to it) its cases' tools work in.

Every problem raises one `DatasetError` naming the file, the case and the field.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from types import ModuleType
from typing import Any

from yiemagent.errors import ConfigError, install_hint
from yiemagent.evals._case import Case, Check, DatasetError
from yiemagent.evals._checks import (
    contains,
    equals,
    matches,
    max_cost,
    max_tool_calls,
    max_turns,
    no_tool_called,
    not_contains,
    output_is,
    tool_called,
)
from yiemagent.evals._judge import judge
from yiemagent.files import import_file, import_function

__all__ = ["CHECKS", "Dataset"]

CHECKS: dict[str, Callable[..., Check]] = {
    "contains": contains,
    "not_contains": not_contains,
    "equals": equals,
    "matches": matches,
    "tool_called": tool_called,
    "no_tool_called": no_tool_called,
    "max_tool_calls": max_tool_calls,
    "output_is": output_is,
    "max_turns": max_turns,
    "max_cost": max_cost,
    "judge": judge,
}
"""The checks a dataset file may name."""

_CASE_KEYS = ("name", "input", "expected", "metadata", "checks")
_TOP_KEYS = ("cases", "workdir")


@dataclass(slots=True)
class Dataset:
    """Cases in order, their names unique."""

    cases: list[Case]
    source: Path | None = None
    """The file it was read from, if any."""
    workdir: Path | None = None
    """The folder its cases' tools work in (`yiem eval` roots the example `read_file`
    there), if the file gave one; absolute."""

    def __init__(
        self,
        cases: Iterable[Case],
        *,
        source: Path | None = None,
        workdir: Path | None = None,
    ) -> None:
        self.cases = list(cases)
        self.source = source
        self.workdir = workdir
        seen: set[str] = set()
        where = f"{source}: " if source else ""
        for case in self.cases:
            if not isinstance(case, Case):
                raise DatasetError(f"{where}{case!r} is not a Case")
            if case.name in seen:
                raise DatasetError(f"{where}case {case.name!r}: name: used by another case")
            seen.add(case.name)
            for i, check in enumerate(case.checks):
                # `contains` for `contains(...)`: called with the run, it fails every run
                maker = next((name for name, m in CHECKS.items() if id(m) == id(check)), None)
                if maker is not None:
                    raise DatasetError(
                        f"{where}case {case.name!r}: checks[{i}]: {maker} makes a check: "
                        f"call it, {maker}(...)"
                    )
            _check_expected(f"{where}case {case.name!r}", case.checks, case.expected)
        if not self.cases:
            raise DatasetError(f"{where}cases: the dataset has no cases")

    def __len__(self) -> int:
        return len(self.cases)

    @classmethod
    def load(cls, path: str | PathLike[str]) -> Dataset:
        """Read a dataset file: YAML (`.yaml`, `.yml`) or JSONL (any other name).

        Raises:
            DatasetError: the file cannot be read, is not valid YAML/JSON, or a case is
                malformed; the text names the file, the case and the field.
        """
        file = Path(path)
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise DatasetError(f"{file}: cannot read it: {exc.strerror or exc}") from None
        try:
            # A UTF-8 BOM (Windows editors) is no case; NUL bytes are UTF-16 or UTF-32 text
            # (Windows' "Unicode"), which would decode as UTF-8 when it has no BOM.
            text = data.decode("utf-8-sig")
            if "\0" in text:
                raise UnicodeError
        except UnicodeError:
            raise DatasetError(f"{file}: not UTF-8 text: save it as UTF-8") from None
        if file.suffix.lower() in (".yaml", ".yml"):
            raw_cases, workdir = _yaml_cases(file, text)
        else:
            raw_cases, workdir = _jsonl_cases(file, text), None
        cases = [_case(file, index, raw) for index, raw in raw_cases]
        return cls(cases, source=file, workdir=workdir)


def _yaml_cases(file: Path, text: str) -> tuple[list[tuple[str, Any]], Path | None]:
    try:
        import yaml
    except ImportError:
        raise DatasetError(f"{file}: reading YAML needs pyyaml: {install_hint('evals')}") from None

    try:
        data = yaml.load(text, Loader=_yaml_1_2_loader())
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise DatasetError(f"{file}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, Mapping) or "cases" not in data:
        raise DatasetError(f"{file}: cases: missing (the file must hold a top-level 'cases:' list)")
    unknown = [str(key) for key in data if key not in _TOP_KEYS]
    if unknown:
        raise DatasetError(f"{file}: {unknown[0]}: unknown key (known: {', '.join(_TOP_KEYS)})")
    if not isinstance(data["cases"], list):
        raise DatasetError(f"{file}: cases: must be a list of cases")
    workdir = None
    if data.get("workdir") is not None:
        workdir = (file.parent / str(data["workdir"])).resolve()
        if not workdir.is_dir():
            raise DatasetError(f"{file}: workdir: {workdir} is not a folder")
    return [(f"#{i + 1}", raw) for i, raw in enumerate(data["cases"])], workdir


_YAML_1_2_SCALARS = {
    "tag:yaml.org,2002:bool": (r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    "tag:yaml.org,2002:int": (r"^[-+]?(?:0|[1-9][0-9]*)$", "-+0123456789"),
    "tag:yaml.org,2002:float": (
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*|[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+)"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
}
"""The YAML 1.2 core schema's booleans and numbers, except that an integer written with a
leading zero (`01234`, a code) stays the text it was written as."""


@functools.cache
def _yaml_1_2_loader() -> type[Any]:
    """A PyYAML `SafeLoader` resolving plain scalars as YAML 1.2 does, not YAML 1.1.

    YAML 1.1 made `NO`, `on` and `y`-like words booleans, `01234` an octal 668, `1:30` a
    sexagesimal 90 and `2024-01-02` a date; in a dataset they are answers and texts to find.
    Only `null`, `true`/`false` and decimal numbers are typed (`0.50` is 0.5, as in YAML
    1.2); everything else is text.
    """
    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag.endswith((":null", ":merge"))]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    for tag, (regexp, first) in _YAML_1_2_SCALARS.items():
        Loader.add_implicit_resolver(tag, re.compile(regexp), list(first))
    return Loader


def _jsonl_cases(file: Path, text: str) -> list[tuple[str, Any]]:
    cases: list[tuple[str, Any]] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            cases.append((f"on line {number}", json.loads(line)))
        except json.JSONDecodeError as exc:
            hint = "" if cases else _not_jsonl(text)
            raise DatasetError(f"{file}: line {number}: not JSON ({exc.msg}){hint}") from None
    return cases


def _not_jsonl(text: str) -> str:
    """What to add when a dataset read as JSONL fails at its first case: "line 1: not
    JSON" alone does not say that the file may be YAML under another name, or one
    pretty-printed JSON document."""
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return "; a dataset is YAML (a .yaml or .yml file) or JSONL (one case object a line)"
    return "; the file is one JSON document: a JSONL dataset has one case object a line"


def _case(file: Path, index: str, raw: Any) -> Case:
    """The case `raw` of the dataset `file` (`index`: where it is, for a case with no name
    yet): its fields checked, its checks made (`_check`), and its `expected` checked
    against the checks that compare with it (`_check_expected`).

    Raises:
        DatasetError: a missing, unknown or malformed field; the text names the file, the
            case and the field.
    """
    if not isinstance(raw, Mapping):
        raise DatasetError(f"{file}: case {index}: must be an object with name and input")
    name = raw.get("name")
    label = f"case {name!r}" if isinstance(name, str) and name else f"case {index}"
    where = f"{file}: {label}"
    for key, task_key in (("name", "id"), ("input", "prompt")):
        if key not in raw:
            hint = (
                f" (the case has {task_key!r}, as a yiem batch task does: an eval case names "
                "itself with 'name' and asks with 'input')"
                if task_key in raw
                else ""
            )
            raise DatasetError(f"{where}: {key}: missing{hint}")
    unknown = [str(key) for key in raw if key not in _CASE_KEYS]
    if unknown:
        raise DatasetError(f"{where}: {unknown[0]}: unknown field (known: {', '.join(_CASE_KEYS)})")
    if not isinstance(name, str) or not name.strip():
        raise DatasetError(f"{where}: name: must be a non-empty text")
    if not isinstance(raw["input"], str) or not raw["input"].strip():
        raise DatasetError(f"{where}: input: must be a non-empty text")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise DatasetError(f"{where}: metadata: must be an object")
    items = raw.get("checks") or []
    if not isinstance(items, list):
        raise DatasetError(f"{where}: checks: must be a list")
    checks = [_check(file, f"{where}: checks[{i}]", item) for i, item in enumerate(items)]
    _check_expected(where, checks, raw.get("expected"))
    try:
        return Case(name, raw["input"], checks, raw.get("expected"), dict(metadata))
    except DatasetError as exc:  # what only the Case checks (metadata that is not JSON)
        raise DatasetError(f"{file}: {exc}") from None


def _check_expected(where: str, checks: Iterable[Check], expected: Any) -> None:
    """Refuse now an `expected` that a check given without an argument would compare with
    and could not, missing or of the wrong kind: `contains`, `equals` and `output_is` (their
    `check_expected`). A case built in code is checked so too (`Dataset`), not at each run.

    Raises:
        DatasetError: naming the case (`where`) and the check by its place.
    """
    for i, check in enumerate(checks):
        check_expected = getattr(check, "check_expected", None)
        if check_expected is not None:
            try:
                check_expected(expected)
            except ConfigError as exc:
                raise DatasetError(f"{where}: checks[{i}]: {exc}") from None


def _check(file: Path, where: str, item: Any) -> Check:
    """The check a `checks:` item names (`where`: the case and the item's place): a name,
    `{name: argument}` or `{name: {keyword: value}}`, of `CHECKS` or a plain function
    (`FILE.py:FUNCTION`, `MODULE:FUNCTION`) called with its argument when it has one.

    Raises:
        DatasetError: an item that is no check, an unknown name, a function that cannot be
            imported, or an argument the check refuses.
    """
    if isinstance(item, str):
        name, argument, given = item, None, False
    elif isinstance(item, Mapping) and len(item) == 1:
        name, argument = next(iter(item.items()))
        given = argument is not None  # `- no_tool_called:` in YAML has a null argument
    else:
        raise DatasetError(f"{where}: a check is a name or {{name: argument}}, not {item!r}")
    if not isinstance(name, str):
        raise DatasetError(f"{where}: {name!r} is not a check name")
    factory: Callable[..., Any] | None = (
        _function_check(file, where, name) if ":" in name else CHECKS.get(name)
    )
    if factory is None:
        raise DatasetError(f"{where}: unknown check {name!r} (known: {', '.join(CHECKS)})")
    if ":" in name and not given:
        return factory
    keywords = isinstance(argument, Mapping) and _all_parameters(factory, argument)
    if isinstance(argument, Mapping) and not keywords and name in _KEYWORDS_ONLY_MAPPING:
        _refuse_unknown_keywords(where, name, factory, argument)
    try:
        if not given:
            made = factory()
        elif isinstance(argument, Mapping) and keywords:
            made = factory(**argument)
        else:
            made = factory(argument)
    except ConfigError as exc:
        said = str(exc)  # the check's own text may name it already: not "matches: matches:"
        named = said.startswith((f"{name}: ", f"{name} "))
        raise DatasetError(f"{where}: {said}" if named else f"{where}: {name}: {said}") from None
    except TypeError as exc:
        raise DatasetError(f"{where}: {name}: {_signature_problem(exc)}") from None
    if not callable(made):
        raise DatasetError(f"{where}: {name} did not give a check (got {made!r})")
    check: Check = made
    if ":" in name and not isinstance(getattr(made, "name", None), str):
        # the check a factory returns is often an inner `check`: name it for its call, as
        # the built-in checks are (`contains('391')`), so two of them read apart
        if isinstance(argument, Mapping) and keywords:
            shown = ", ".join(f"{k}={v!r}" for k, v in argument.items())
        else:
            shown = repr(argument)
        check = _NamedCheck(made, f"{name.rpartition(':')[2]}({shown})")
    return check


@dataclass(frozen=True, slots=True)
class _NamedCheck:
    """A check made by a `FILE.py:FUNCTION` factory, reported under `name`."""

    check: Callable[..., Any]
    name: str

    def __call__(self, run: Any) -> Any:
        return self.check(run)


def _all_parameters(factory: Callable[..., Any], argument: Mapping[Any, Any]) -> bool:
    try:
        names = set(inspect.signature(factory).parameters)
    except (TypeError, ValueError):
        return False
    return bool(argument) and all(isinstance(k, str) and k in names for k in argument)


_KEYWORDS_ONLY_MAPPING = frozenset(CHECKS) - {"equals", "output_is"}
"""The built-in checks whose argument is never a mapping (`equals` and `output_is` take a
JSON object or schema): a mapping given to one of them is its keywords."""


def _refuse_unknown_keywords(
    where: str, name: str, factory: Callable[..., Any], argument: Mapping[Any, Any]
) -> None:
    """Raise `DatasetError` naming the keys of `argument` that are none of `factory`'s
    parameters, when some are (a misspelt keyword beside right ones)."""
    names = list(inspect.signature(factory).parameters)
    unknown = [repr(k) for k in argument if k not in names]
    if unknown and len(unknown) < len(argument):
        raise DatasetError(
            f"{where}: {name}: unknown keyword {', '.join(unknown)} (known: {', '.join(names)})"
        )


def _signature_problem(exc: TypeError) -> str:
    text = str(exc)
    return text.split("() ", 1)[1] if "() " in text else text


def _function_check(file: Path, where: str, name: str) -> Callable[..., Any]:
    """The check `name` names: `file.py:function` (a path from the dataset's folder) or
    `module:function`."""

    def load(target: str) -> ModuleType:
        if not target.endswith(".py"):
            return importlib.import_module(target)
        path = file.parent / target
        return import_file(path, f"yiem_eval_checks_{abs(hash(str(path.resolve())))}")

    try:
        return import_function(name, load)
    except ImportError as exc:
        raise DatasetError(f"{where}: {exc}") from None
