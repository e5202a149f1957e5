"""Each package's `__init__.py` is its one public list (DESIGN §22): its docstring names every
name it exports, and no module reaches into another package's private (`_`) module, so what
one layer offers another is on that list, not only behind a private path."""

from __future__ import annotations

import ast
from pathlib import Path

import yiemagent

SRC = Path(yiemagent.__file__).parent

NAMED_BY_MODULE = {
    "yiemagent.types": "re-exports every type of its modules, each documented where defined",
    "yiemagent.ai.providers.local": "names its entry points; the runtime's names are its own",
    "yiemagent.ai.providers.local.rules": "names the pipeline; each rule is its own module",
}
"""Packages whose docstring names its modules or entry points instead of every name, and why."""


def module_of(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def exported(tree: ast.Module) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__all__" for target in node.targets
        ):
            try:
                names = ast.literal_eval(node.value)
            except ValueError:  # built from other lists: checked where those are written
                return []
            return [name for name in names if isinstance(name, str)]
    return []


def test_the_packages_are_where_this_test_looks() -> None:
    assert (SRC / "agent" / "__init__.py").is_file()


def test_every_package_docstring_names_what_it_exports() -> None:
    wrong: list[str] = []
    for init in sorted(SRC.rglob("__init__.py")):
        package = module_of(init)
        tree = ast.parse(init.read_text(encoding="utf-8"))
        docstring = ast.get_docstring(tree) or ""
        if not docstring:
            wrong.append(f"{package}: no docstring")
            continue
        if package in NAMED_BY_MODULE:
            continue
        unnamed = [name for name in exported(tree) if f"`{name}" not in docstring]
        if unnamed:
            wrong.append(f"{package}: exports {', '.join(unnamed)} without naming them")
    assert not wrong, "package docstrings that do not say what is public:\n" + "\n".join(wrong)


def test_no_module_imports_another_packages_private_module() -> None:
    wrong: list[str] = []
    for path in sorted(SRC.rglob("*.py")):
        here = module_of(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module]
            elif isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                continue
            for target in targets:
                parts = target.split(".")
                if parts[0] != "yiemagent":
                    continue
                private = next((i for i, p in enumerate(parts) if p.startswith("_")), None)
                if private is None:
                    continue
                owner = ".".join(parts[:private])  # the package the private module belongs to
                if not (here == owner or here.startswith(owner + ".")):
                    wrong.append(f"{path.relative_to(SRC)}:{node.lineno} imports {target}")
    assert not wrong, "imports of another package's private module:\n" + "\n".join(wrong)


def test_structured_output_is_built_from_top_level_names() -> None:
    """`OutputSpec(T, name=...)` is what a clash with the output tool's name tells the user
    to pass, and `OutputMessage[T]` what `prompt` returns; both come from `yiemagent`, as
    `Agent` does (DESIGN §14)."""
    from yiemagent.types import OutputMessage, OutputSpec

    assert yiemagent.OutputSpec is OutputSpec
    assert yiemagent.OutputMessage is OutputMessage
    assert {"OutputSpec", "OutputMessage"} <= set(yiemagent.__all__)


HOME_OF_ERROR = {
    "AgentBusyError": "yiemagent.agent",
    "ApprovalPendingError": "yiemagent.agent",
    "BatchError": "yiemagent.batch",
    "MCPConnectionError": "yiemagent.mcp",
    "ProviderError": "yiemagent.ai",
    "SessionBusyError": "yiemagent.sessions",
    "SessionCorruptError": "yiemagent.sessions",
    "SessionStoreClosedError": "yiemagent.sessions",
    "ToolLoadError": "yiemagent.tools",
}
"""The package whose concept each exception of `yiemagent.errors` belongs to. The exceptions
live in `errors.py` so that lower layers can raise them; a reader still finds each on its
package's list. Not here: `YiemAgentError` and `ConfigError` (every layer's), and
`MessageInputError` (`yiemagent.types` re-exports only its own modules' types)."""


def test_every_error_is_on_its_packages_list() -> None:
    import importlib
    import inspect

    from yiemagent import errors

    classes = {
        name
        for name in errors.__all__
        if inspect.isclass(getattr(errors, name))
        and name not in {"YiemAgentError", "ConfigError", "MessageInputError"}
    }
    assert classes == set(HOME_OF_ERROR), "an exception of errors.py without a home package"
    missing = []
    for name, package in sorted(HOME_OF_ERROR.items()):
        module = importlib.import_module(package)
        if name not in module.__all__ or getattr(module, name) is not getattr(errors, name):
            missing.append(f"{package} lacks {name}")
    assert not missing, "\n".join(missing)
