"""The exceptions yiemagent raises: one per intent, each saying when it is raised.

Tool problems never raise (DESIGN R-4.1: they become tool results); these are for
configuration mistakes and misuse of the API.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "AgentBusyError",
    "ApprovalPendingError",
    "BatchError",
    "ConfigError",
    "MCPConnectionError",
    "MessageInputError",
    "ProviderError",
    "SessionBusyError",
    "SessionCorruptError",
    "SessionStoreClosedError",
    "ToolLoadError",
    "YiemAgentError",
    "exception_summary",
    "exception_text",
    "install_hint",
    "pip_command",
    "refused_here",
    "refused_text",
    "yiem_command",
]


def _shown(path: Path) -> str:
    """`path` as a user in the working folder types it: relative when it is inside."""
    import os

    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path) if relative.startswith("..") else relative


def _checkout_root() -> Path | None:
    """The checkout yiemagent runs from (its root `Path`), or None for an installed package."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    try:
        checkout = 'name = "yiemagent"' in (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        checkout = False
    return root if checkout else None


def install_hint(extra: str) -> str:
    """How to install one of yiemagent's extras, as an error message says it.

    yiemagent is not on PyPI: run from a checkout (an editable install, or `src` on the
    path), the command is the checkout's own pip with `-e` (`.venv/bin/pip install -e
    '.[mcp]'`, paths shown relative to the working folder when they are inside it);
    otherwise `pip install 'yiemagent[mcp]'`.

    Args:
        extra: the extra's name in pyproject.toml, e.g. "mcp", "ray", "openai".
    """
    root = _checkout_root()
    if root is None:
        return f"pip install 'yiemagent[{extra}]'"
    where = _shown(root)
    target = "." if where == "." else where
    return f"{pip_command()} install -e '{target}[{extra}]'"


def pip_command() -> str:
    """The pip that installs into yiemagent's Python, as a hint names it: from a checkout the
    one beside this interpreter (`.venv/bin/pip`), else `pip`."""
    import sys
    from pathlib import Path

    if _checkout_root() is None:
        return "pip"
    return _shown(Path(sys.executable).parent / "pip")


def yiem_command() -> str:
    """The `yiem` command as a user types it: the script beside this interpreter from a
    checkout (`.venv/bin/yiem`, relative to the working folder when inside it), else `yiem`."""
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "yiem"
    if _checkout_root() is None or not script.exists():
        return "yiem"
    return _shown(script)


_GROUP_SHOWN = 5
"""The most exceptions of a group whose texts are given."""


def _text_is_a_key(exc: BaseException) -> bool:
    """True when `exc`'s text is a `KeyError`'s: the repr of the missing key alone ("'id'"),
    which says nothing of a failed lookup without the class."""
    return isinstance(exc, KeyError) and type(exc).__str__ is KeyError.__str__


def exception_text(exc: BaseException) -> str:
    """What a reader (the model, a log, a result) is told about an exception: its text, else
    its class name.

    Never empty and never raising: an exception whose `__str__` raises is named by its
    class, since the callers run inside an exception handler. A `KeyError` is `Class: text`
    ("KeyError: 'id'"), since its text is only the key it missed. An exception group (a
    `TaskGroup`'s, as an HTTP or MCP client raises it) is the texts of the exceptions in it,
    nested groups opened, at most five and then "and N more errors": its own text
    ("unhandled errors in a TaskGroup (1 sub-exception)") says nothing of what failed.
    """
    if isinstance(exc, BaseExceptionGroup):
        leaves: list[BaseException] = []
        pending: list[BaseException] = [exc]
        while pending:
            current = pending.pop(0)
            if isinstance(current, BaseExceptionGroup):
                pending[:0] = current.exceptions
            else:
                leaves.append(current)
        texts = [exception_text(leaf) for leaf in leaves[:_GROUP_SHOWN]]
        if len(leaves) > _GROUP_SHOWN:
            texts.append(f"and {len(leaves) - _GROUP_SHOWN} more errors")
        return "; ".join(texts) or type(exc).__name__
    try:
        text = str(exc)
    except Exception:
        text = ""
    if not text:
        return type(exc).__name__
    return f"{type(exc).__name__}: {text}" if _text_is_a_key(exc) else text


def exception_summary(exc: BaseException) -> str:
    """`Class: text` of an exception (text as `exception_text` gives it), or the class name
    alone when it has no text of its own; never raises."""
    name, text = type(exc).__name__, exception_text(exc)
    if text == name or _text_is_a_key(exc):
        return text
    return f"{name}: {text}"


def refused_here(exc: BaseException) -> str | None:
    """`host:port` when `exc` (or an exception it was raised from) is a connection that an
    address of this machine refused (a loopback one: 127.0.0.0/8, ::1 or localhost), which
    means no server listens at that port; None for any other failure, a refusal by another
    machine included (its server may be restarting behind a load balancer).

    `exc` is an HTTP client's connection error (httpx's, an SDK's wrapping one): its
    `request.url` names the address. Never raises."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, ConnectionRefusedError):
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
        if cause is not None and id(cause) in seen:
            return None
    try:  # httpx's `request` raises when the error carries none
        url = getattr(getattr(exc, "request", None), "url", None)
    except RuntimeError:
        return None
    host, port = getattr(url, "host", None), getattr(url, "port", None)
    if cause is None or not isinstance(host, str) or not _loopback(host):
        return None
    if not isinstance(port, int):
        port = 443 if getattr(url, "scheme", "") == "https" else 80
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def refused_text(address: str) -> str:
    """What a connection `refused_here` found refused at `address` says, in every layer
    (a provider's call, an MCP server's connection): that nothing listens there."""
    return f"connection refused, nothing listens at {address}"


def _loopback(host: str) -> bool:
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class YiemAgentError(Exception):
    """Base class of every exception raised by yiemagent.

    Every one pickles whole, so it crosses a process boundary (a process pool, a Ray task):
    it is rebuilt from its `args` and attributes, without calling `__init__`, whose
    arguments (an `AgentRunError`'s message and new messages, a `ToolLoadError`'s
    failures) are not its `args`."""

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuilt, (type(self), self.args), self.__dict__)


def _rebuilt(cls: type[YiemAgentError], args: tuple[object, ...]) -> YiemAgentError:
    """An exception of `cls` with `args` and no attributes yet (pickle's state sets them)."""
    return cls.__new__(cls, *args)


class ConfigError(YiemAgentError, ValueError):
    """A configuration value is invalid; raised at construction, the text says what to change."""


class MessageInputError(YiemAgentError, TypeError, ValueError):
    """Something given as messages (a prompt, `state.messages`, a steering or follow-up
    hook's answer) is not a message; the text names the item. A `TypeError` and a
    `ValueError` too, as the checks it replaces raised either."""


class ToolLoadError(YiemAgentError):
    """One or more tool files failed to load.

    Raised by `ToolStore.load_dir` after every good file was loaded and registered.
    `failures` holds `(path, reason)` for each failing file, in file order.
    """

    def __init__(self, failures: Sequence[tuple[str, str]]) -> None:
        self.failures: list[tuple[str, str]] = list(failures)
        lines = "\n".join(f"  {path}: {reason}" for path, reason in self.failures)
        noun = "file" if len(self.failures) == 1 else "files"
        super().__init__(f"{len(self.failures)} tool {noun} failed to load:\n{lines}")


class AgentBusyError(YiemAgentError, RuntimeError):
    """The agent is running and cannot take this call."""


class ProviderError(YiemAgentError):
    """A provider could not be set up (missing SDK, missing API key, unknown model).

    Failures while streaming never raise: they end the stream with an `error` event.
    """


class SessionBusyError(YiemAgentError, RuntimeError):
    """Another writer holds the session (docs/sessions.md "One writer"): raised when an `Agent`
    opens a session whose writer lease is held by a live holder (another `Agent` in this
    process, or another process), and by a store write to such a session. The text names
    the holder and what a program can do about it; `session_id` and `holder` ("process 1234
    on host h", None when unknown) let a command or a server say it in its own terms.
    Nothing was written."""

    def __init__(
        self, message: str, *, session_id: str | None = None, holder: str | None = None
    ) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.holder = holder


class SessionStoreClosedError(YiemAgentError, RuntimeError):
    """A session store was used after its `close()`: raised by every read and write of a
    closed store (`release` stays a no-op). Nothing was read or written; the text names the
    store. Open a new store on the same file or database to go on (an in-memory store's
    sessions went with it). A `RuntimeError` too, as the check it replaces raised."""


class SessionCorruptError(YiemAgentError, ValueError):
    """A stored session cannot be resumed as it is (docs/sessions.md "Interleaved
    transcripts", "Rows that do not load"). Either a stored row does not load (not JSON, or
    not a message: an edit by hand or another program); `store` then names the store,
    raised by the store's `load`. Or the transcript is not a valid sequence: a tool result
    that answers no open tool call, or tool calls left without results before the
    conversation went on, as two writers interleaving would leave it; raised when an
    `Agent` opens the session, `store` None. Nothing is repaired, skipped or invented.
    `problems` lists each finding with its row (`seq`) or message position (0-based)."""

    def __init__(
        self, session_id: str, problems: Sequence[str], *, store: str | None = None
    ) -> None:
        self.session_id = session_id
        self.problems: list[str] = list(problems)
        self.store = store
        shown = "; ".join(self.problems[:5])
        more = f" (and {len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
        if store is not None:
            super().__init__(
                f"session {session_id!r} in {store} has stored rows that do not load: "
                f"{shown}{more}. Nothing was loaded and nothing was changed; fix or delete "
                "those rows, or start another session"
            )
            return
        super().__init__(
            f"session {session_id!r} holds an interleaved transcript, as two writers at once "
            f"would leave it: {shown}{more}. It was not loaded and nothing was changed; read "
            "it with store.load(session_id), then store a fixed copy or start another session"
        )


class BatchError(YiemAgentError, ValueError):
    """A batch cannot start or go on: a malformed task line, a repeated id, a
    results file that is not a results file or is in use by another batch, a backend that
    is not installed. Raised before any task runs, or when the results file cannot be
    written; the message says what to change. `results_file` is the results file's path
    when the problem is that file (a command then names the option that gave it)."""

    def __init__(self, message: str, *, results_file: str | None = None) -> None:
        super().__init__(message)
        self.results_file = results_file


class MCPConnectionError(YiemAgentError):
    """An MCP server could not be reached: its command did not start, it did
    not answer `initialize` in time, or it is not connected. Raised by `MCPServer.connect`
    and `yiemagent.mcp.add_server`; a call that fails becomes an error tool result instead."""


class ApprovalPendingError(YiemAgentError, RuntimeError):
    """Tool calls are held for approval: decide each one with `approve` or
    `reject`, then `await resume()`, before a new prompt. `pending` lists the call ids."""

    def __init__(self, text: str, pending: Sequence[str]) -> None:
        self.pending = list(pending)
        super().__init__(text)
