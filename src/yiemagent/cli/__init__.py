"""The `yiem` command line (DESIGN §2.6): `yiem run` and `yiem models` (see `main`)."""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """Run the `yiem` command line (`yiemagent.cli.main.main`)."""
    from yiemagent.cli.main import main as _main

    return _main(argv)
