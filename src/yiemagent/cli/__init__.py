"""The `yiem` command line (DESIGN §2): `yiem run`, `chat`, `batch`, `eval`, `serve`, `trace`,
`mcp`, `models` and `sessions`.

Public: only the console script `yiemagent.cli.main:main`; the package exports no Python
names. One module per command (`main` holds `yiem run` and puts the others together:
`chat/`, `batch`, `eval_cmd`, `serve`, `trace`, `mcp_cmd`, `models_cmd`, `sessions_cmd`),
and what several commands share: `options` (options declared alike, the model and the
one-line error), `render` (a run in the terminal), `approvals` (held tool calls),
`teams` (`--agent FILE[:NAME]`), `mcp_options` (`--mcp`, `--mcp-url`), `stores` (where
stored sessions are kept) and `default_tools/` (the tool files `yiem run` offers when none
are given).
"""
