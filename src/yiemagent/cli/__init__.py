"""The `yiem` command line (DESIGN §2.6): `yiem run` and `yiem models`.

`main` is the console script; the module itself is `sys.modules["yiemagent.cli.main"]`.
"""

from __future__ import annotations

from yiemagent.cli.main import main

__all__ = ["main"]
