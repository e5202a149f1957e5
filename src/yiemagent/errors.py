"""The exceptions yiemagent raises: one per intent, each saying when it is raised.

Tool problems never raise (DESIGN R-4.1: they become tool results); these are for
configuration mistakes and misuse of the API (DESIGN §8).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["AgentBusyError", "ConfigError", "ProviderError", "ToolLoadError", "YiemAgentError"]


class YiemAgentError(Exception):
    """Base class of every exception raised by yiemagent."""


class ConfigError(YiemAgentError, ValueError):
    """A configuration value is invalid; raised at construction, the text says what to change."""


class ToolLoadError(YiemAgentError):
    """One or more tool files failed to load (DESIGN R-4.13).

    Raised by `ToolStore.load_dir` after every good file was loaded and registered.
    `failures` holds `(path, reason)` for each failing file, in file order.
    """

    def __init__(self, failures: Sequence[tuple[str, str]]) -> None:
        self.failures: list[tuple[str, str]] = list(failures)
        lines = "\n".join(f"  {path}: {reason}" for path, reason in self.failures)
        noun = "file" if len(self.failures) == 1 else "files"
        super().__init__(f"{len(self.failures)} tool {noun} failed to load:\n{lines}")


class AgentBusyError(YiemAgentError, RuntimeError):
    """The agent is running and cannot take this call (DESIGN R-6.3, R-6.4, R-6.5)."""


class ProviderError(YiemAgentError):
    """A provider could not be set up (missing SDK, missing API key, unknown model).

    Failures while streaming never raise: they end the stream with an `error` event.
    """
