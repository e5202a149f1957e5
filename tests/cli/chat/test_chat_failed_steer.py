"""`yiem chat`: a steering message typed while a model call runs, in a run that then fails.
It has no turn boundary to be delivered at: it stayed queued, and the next prompt's run
delivered it after that prompt, so the model answered the old steer instead of the new
question (seen with a llama.cpp server killed mid-answer)."""

from __future__ import annotations

from pathlib import Path

from tests.cli.chat._tmux import TOOLS, Pane, after


def test_a_steer_the_failed_run_never_took_is_given_back_not_sent_later(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    chat = Pane(data, ["--tools", str(TOOLS), "--session", "t"])
    try:
        chat.ready()
        chat.type("fail slowly")
        chat.wait("Thinking hard")
        chat.type("steer: be quick")
        chat.wait("queued steering: steer: be quick")
        chat.wait(
            lambda s: after(
                s,
                "✗ model error: scripted failure",
                "» steering not delivered (the run failed): steer: be quick",
            )
        )
        # Given back in the input line: Ctrl-U clears it, and the next prompt is answered.
        chat.wait(lambda s: s.rstrip().endswith("› steer: be quick"))
        chat.keys("C-u")
        chat.type("next question")
        screen = chat.wait(lambda s: after(s, "› next question", "You said: next question"))
        assert "steering delivered" not in screen and "Steering received" not in screen, screen
    finally:
        chat.close()
