"""The `yiem` command line (DESIGN §2): `yiem run` and `yiem models`.

The console script is `yiemagent.cli.main:main`.
"""
