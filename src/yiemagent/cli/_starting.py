"""Ctrl-C or SIGTERM while `yiem`'s modules load (a second or so on a busy machine): the
command has not started, so `yiem` exits at once with its usual line and status (130
"yiem: interrupted", 143 "yiem: terminated"), not a KeyboardInterrupt traceback out of
an import. Importing this module installs the handlers; `started()`, once the commands are
loaded, gives the signals back to them. A signal that was ignored (`nohup`, a background
job) or handled by the importing program is left as it was, and so is any signal of a
thread other than the main one, which cannot set handlers."""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

__all__ = ["started"]


def _quit(signum: int, frame: object) -> None:
    os.write(2, b"yiem: interrupted\n" if signum == signal.SIGINT else b"yiem: terminated\n")
    os._exit(128 + signum)


_replaced: dict[int, Any] = {}
if threading.current_thread() is threading.main_thread():
    for _signum, _default in (
        (signal.SIGINT, signal.default_int_handler),
        (signal.SIGTERM, signal.SIG_DFL),
    ):
        if signal.getsignal(_signum) is _default:
            _replaced[_signum] = _default
            signal.signal(_signum, _quit)


def started() -> None:
    """Put back the handlers this module replaced (the modules are loaded)."""
    while _replaced:
        signum, handler = _replaced.popitem()
        if signal.getsignal(signum) is _quit:
            signal.signal(signum, handler)
