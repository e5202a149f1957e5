"""`--agent` naming an agent file that is not there (a typo, another folder): `yiem eval`
took an `--agent` that is no file for `MODULE:FUNCTION`, and said "'team.toml' is not
MODULE:FUNCTION" or "cannot import team.toml: No module named 'team'", where `yiem run`,
`yiem serve` and `yiem batch` say the file cannot be read; both said "'team.tml' is not
MODULE:FUNCTION" of a mistyped name. One line naming the file meant, exit 1, nothing run."""

from __future__ import annotations

from pathlib import Path

import pytest

from yiemagent.cli.main import main


@pytest.mark.parametrize("command", ["eval", "batch"])
@pytest.mark.parametrize(
    ("spec", "named"),
    [("team.tml", "team.tml"), ("team.toml", "team.toml"), ("team.toml:router", "team.toml")],
)
def test_a_missing_agent_file_is_named(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    spec: str,
    named: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    line = '{"id": "a", "prompt": "hi"}' if command == "batch" else '{"name": "a", "input": "hi"}'
    (tmp_path / "cases.jsonl").write_text(line + "\n")
    args = ["--results", "out.jsonl"] if command == "batch" else []
    code = main([command, "cases.jsonl", "--agent", spec, *args])
    err = capsys.readouterr().err.strip()
    assert code == 1
    if named.endswith(".toml"):  # an agent file's name: its error, as yiem run says it
        assert err == f"yiem: error: {named}: cannot read the agent file: No such file or directory"
    else:
        assert err == f"yiem: error: --agent {spec}: no agent file {named} (nor a MODULE:FUNCTION)"
    assert not (tmp_path / "out.jsonl").exists()
