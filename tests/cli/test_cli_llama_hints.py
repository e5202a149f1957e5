"""`yiem run` against llama.cpp's server started without `--jinja`, which refuses the
request's `tools` ("tools param requires --jinja flag", HTTP 500): the line says the two
ways out, not only the server's words."""

from __future__ import annotations

import pytest

from yiemagent.cli.main import main

pytestmark = pytest.mark.timeout(120)  # the openai SDK's first import: seconds of CPU under load

REFUSAL = {"error": {"code": 500, "message": "tools param requires --jinja flag", "type": "x"}}


def test_a_server_without_jinja_says_how_to_give_it_tools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pytest.importorskip("openai")
    from tests.ai.servers import ReplayServer, json_reply

    with ReplayServer() as server:
        for _ in range(4):  # a 500 is retried
            server.enqueue(json_reply(500, REFUSAL))
        argv = ["run", "hi", "--model", "openai-compatible/m", "--base-url", server.url]
        code = main(argv)
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    (line,) = err.strip().splitlines()[-1:]
    assert line.split("; gave up after")[0] == (
        "yiem: error: the run failed: HTTP 500 from the server: tools param requires --jinja "
        "flag (start llama.cpp's server with --jinja, or read the calls the model writes as "
        'text: tool_calls="text", yiem\'s --tool-calls text)'
    ), err
