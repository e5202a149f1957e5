"""What the `yiem` commands share (`run`, `chat`, `batch`): the default model and tools
folder, and the one-line error every command ends with (DESIGN §8)."""

from __future__ import annotations

from pathlib import Path

from yiemagent.ai.models import DEFAULT_MODEL
from yiemagent.errors import YiemAgentError

__all__ = ["DEFAULT_MODEL", "DEFAULT_TOOLS_DIR", "EXIT_ERROR", "CliError"]

DEFAULT_TOOLS_DIR = Path(__file__).resolve().parent / "default_tools"
"""The example tools `yiem` loads when `--tools` is not given."""
EXIT_ERROR = 1


class CliError(YiemAgentError):
    """A problem to report on one line; `code` is the exit status."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code
