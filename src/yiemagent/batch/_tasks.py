"""Batch tasks: what one run of a batch is, and how a task list is read (DESIGN §16).

A task is `{"id", "prompt", optional "output_schema", "session", "metadata"}`, given as a
mapping, a `BatchTask`, or one line of a JSONL file. Every task is checked before anything
runs, so a bad line stops the batch at once with its line number and nothing is lost.

"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, TypeAlias

from yiemagent.errors import BatchError, ConfigError
from yiemagent.types.output import check_schema_refs

__all__ = ["BatchTask", "TaskSource", "load_tasks"]

_KEYS = frozenset({"id", "prompt", "output_schema", "session", "metadata"})


@dataclass(slots=True, frozen=True)
class BatchTask:
    """One task of a batch: one prompt run on its own fresh Agent."""

    id: str
    """Unique in the batch; the key of its line in the results file."""
    prompt: str
    """The user prompt."""
    output_schema: dict[str, Any] | None = None
    """A JSON Schema the final answer must match (the answer is parsed as JSON)."""
    session: str | None = None
    """A session id: given to `make_agent(task)`, or set as the Agent's `session_id`."""
    metadata: dict[str, Any] = field(default_factory=dict)
    """Free-form data copied into the task's result line."""

    def to_json(self) -> dict[str, Any]:
        """The task as a JSON object (the shape `load_tasks` reads)."""
        out: dict[str, Any] = {"id": self.id, "prompt": self.prompt}
        if self.output_schema is not None:
            out["output_schema"] = self.output_schema
        if self.session is not None:
            out["session"] = self.session
        if self.metadata:
            out["metadata"] = self.metadata
        return out

    @classmethod
    def from_json(cls, raw: Any) -> BatchTask:
        """Check and build a task from a JSON object (or check a `BatchTask`: the same
        checks, an integer id made a string).

        Raises:
            ValueError: `raw` is not a task; the message names the field and what is wrong.
        """
        if isinstance(raw, BatchTask):  # built in Python: checked as a line would be
            raw = {
                "id": raw.id,
                "prompt": raw.prompt,
                "output_schema": raw.output_schema,
                "session": raw.session,
                "metadata": raw.metadata,
            }
        if not isinstance(raw, Mapping):
            raise ValueError(f"a task is a JSON object, not {type(raw).__name__}")
        unknown = sorted(set(raw) - _KEYS)
        if unknown:
            raise ValueError(
                f"unknown field(s) {', '.join(map(repr, unknown))}; a task has "
                "id, prompt and optionally output_schema, session, metadata"
            )
        task_id = raw.get("id")
        if isinstance(task_id, bool) or not isinstance(task_id, (str, int)):
            raise ValueError("'id' must be a string or an integer")
        task_id = str(task_id)
        if not task_id.strip():
            raise ValueError("'id' is empty")
        prompt = raw.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"task {task_id!r}: 'prompt' must be a non-empty string")
        schema = raw.get("output_schema")
        if schema is not None:
            schema = _check_schema(task_id, schema)
        session = raw.get("session")
        if session is not None:
            from yiemagent.sessions import check_session_id

            try:
                check_session_id(session)
            except ConfigError as exc:
                raise ValueError(f"task {task_id!r}: 'session': {exc}") from None
        metadata = raw.get("metadata") or {}
        if not isinstance(metadata, Mapping):
            raise ValueError(f"task {task_id!r}: 'metadata' must be an object")
        metadata = dict(metadata)
        for name, value in (("id", task_id), ("prompt", prompt), ("metadata", metadata)):
            if value and not (isinstance(value, str) and value.isascii()):
                _check_utf8(task_id, name, value)
        return cls(task_id, prompt, schema, session, metadata)


def _check_utf8(task_id: str, name: str, value: Any) -> None:
    """Refuse a task field holding a lone surrogate (a `\\ud800` escape in a JSON line with
    no pair): its result line, which repeats the id and metadata, could not be written as
    UTF-8, so the task would stop the batch every time it ran.

    Raises:
        ValueError: naming the field.
    """
    from yiemagent.ai import sanitize_surrogates

    if sanitize_surrogates(value) is not value:
        raise ValueError(
            f"task {task_id!r}: {name!r} holds a lone surrogate (a \\ud800-\\udfff escape "
            "with no pair), which is no UTF-8 text"
        )


def _check_schema(task_id: str, raw: Any) -> dict[str, Any]:
    from jsonschema import SchemaError, validators

    if not isinstance(raw, Mapping):
        raise ValueError(f"task {task_id!r}: 'output_schema' must be a JSON Schema object")
    schema = dict(raw)
    try:
        validators.validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"task {task_id!r}: 'output_schema' is not valid: {exc.message}") from None
    try:
        check_schema_refs(schema, what="'output_schema'")
    except ConfigError as exc:
        raise ValueError(f"task {task_id!r}: {exc}") from None
    return schema


TaskSource: TypeAlias = "str | PathLike[str] | Iterable[BatchTask | Mapping[str, Any]]"
"""A JSONL file path, or an iterable of tasks (mappings or `BatchTask`s)."""


def load_tasks(source: TaskSource) -> list[BatchTask]:
    """Read and check every task of `source`, in order.

    Args:
        source: a JSONL file (one task object per line; blank lines are skipped), or an
            iterable of task mappings / `BatchTask`s.

    Returns:
        The tasks, ids unique.

    Raises:
        BatchError: a task is malformed or an id repeats (the message names the line or
            the position), or the file cannot be read.
    """
    if isinstance(source, (str, PathLike)):
        return _unique(_from_file(Path(source)))
    if isinstance(source, Mapping):
        raise BatchError("tasks must be a JSONL path or an iterable of tasks, not one mapping")
    return _unique(_from_items(source))


def _from_file(path: Path) -> Iterator[tuple[str, str, BatchTask]]:
    try:
        text = path.read_text(encoding="utf-8-sig")  # a BOM (Windows editors) is no line
    except FileNotFoundError:
        raise BatchError(f"tasks file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BatchError(f"tasks file {path} cannot be read: {exc}") from None
    first = True
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            hint = _not_jsonl(path, text) if first else ""
            raise BatchError(f"{where}: not JSON ({exc.msg}){hint}") from None
        first = False
        try:
            yield where, f"line {number}", BatchTask.from_json(raw)
        except ValueError as exc:
            raise BatchError(f"{where}: {exc}") from None


def _not_jsonl(path: Path, text: str) -> str:
    """What to add when a tasks file's first line is not JSON: the file is YAML (as `yiem
    eval`'s datasets may be) or one JSON document (a pretty-printed list), not JSONL."""
    if path.suffix.lower() in (".yaml", ".yml"):
        return "; tasks are JSONL, one JSON object a line (YAML is for yiem eval datasets)"
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return ""
    return "; the file is one JSON document: write each task object on a line of its own"


def _from_items(items: Iterable[Any]) -> Iterator[tuple[str, str, BatchTask]]:
    for index, raw in enumerate(items):
        where = f"task #{index}"
        try:
            yield where, where, BatchTask.from_json(raw)
        except ValueError as exc:
            raise BatchError(f"{where}: {exc}") from None


def _unique(tasks: Iterable[tuple[str, str, BatchTask]]) -> list[BatchTask]:
    seen: dict[str, str] = {}
    out: list[BatchTask] = []
    for where, short, task in tasks:
        first = seen.get(task.id)
        if first is not None:
            raise BatchError(f"{where}: id {task.id!r} repeats (first on {first})")
        seen[task.id] = short
        out.append(task)
    return out
