"""An event stream sent compressed: the SDKs' HTTP client asks for `gzip, deflate`
(`Accept-Encoding`), and a server or proxy that compresses `text/event-stream` answers so.
The stream's `data: [DONE]` line and its events without data are read from the bytes the
transport sees, which were the compressed ones: a stream that ended with `[DONE]` and no
finish reason was taken for one cut off, and an empty `data:` keep-alive failed the answer
on `json.loads("")`. Through the real `openai` SDK against `ReplayServer` on 127.0.0.1,
which sends the stream compressed as the header says."""

from __future__ import annotations

import gzip
import itertools
import zlib
from collections.abc import Callable

import pytest
from hypothesis import given, settings, strategies as st

from tests.ai.servers import ReplayServer, Reply, openai_chunks
from yiemagent.ai.providers._http_guard import ContentDecoder
from yiemagent.ai.providers.openai_completions import stream_openai_completions
from yiemagent.types.messages import AssistantMessage, UserMessage
from yiemagent.types.model import Context, Model, StreamOptions

pytestmark = pytest.mark.timeout(120)

KEY = "sk-test-0123456789abcdef"


def _deflate(data: bytes) -> bytes:
    return zlib.compress(data)


def _raw_deflate(data: bytes) -> bytes:  # "deflate" without its zlib wrapper, as some send it
    packer = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return packer.compress(data) + packer.flush()


ENCODINGS: dict[str, tuple[str, Callable[[bytes], bytes]]] = {
    "gzip": ("gzip", gzip.compress),
    "deflate": ("deflate", _deflate),
    "raw deflate": ("deflate", _raw_deflate),
}


async def chat(
    server: ReplayServer, events: list[str], case: str, headers: dict[str, str] | None = None
) -> AssistantMessage:
    encoding, compress = ENCODINGS[case]
    body = compress("".join(event + "\n\n" for event in events).encode())
    sent = {"content-type": "text/event-stream", "content-encoding": encoding}
    server.enqueue(Reply(headers=sent, body=body))
    model = Model(id="m", provider="vllm", api="openai-completions", base_url=server.url + "/v1")
    options = StreamOptions(api_key=KEY, headers=headers)
    call = stream_openai_completions(model, Context("", [UserMessage("hi")]), options)
    return await call.result()


@pytest.mark.parametrize("case", sorted(ENCODINGS))
async def test_done_without_a_finish_reason_is_whole(server: ReplayServer, case: str) -> None:
    events = [e for e in openai_chunks({"content": "Hello"}) if '"finish_reason": "stop"' not in e]
    message = await chat(server, events, case)
    assert (message.stop_reason, message.error_message) == ("stop", None)
    assert message.text == "Hello"
    assert "gzip" in server.requests[0].headers["accept-encoding"]


@pytest.mark.parametrize("case", sorted(ENCODINGS))
async def test_an_empty_data_keep_alive_is_left_out(server: ReplayServer, case: str) -> None:
    chunks = openai_chunks({"content": "Hello"}, {"content": " there"})
    message = await chat(server, [chunks[0], "data: ", "id: 7", *chunks[1:]], case)
    assert (message.stop_reason, message.error_message) == ("stop", None)
    assert message.text == "Hello there"


@pytest.mark.parametrize(
    ("offered", "sent"),
    [
        ("gzip, deflate, br, zstd", "gzip, deflate"),
        ("br;q=1.0, gzip;q=0.5", "gzip;q=0.5"),
        ("br", "identity"),
        ("identity", "identity"),
    ],
)
async def test_a_request_offers_only_the_encodings_read_here(
    server: ReplayServer, offered: str, sent: str
) -> None:
    # With `brotli` or `zstandard` installed the HTTP client offers `br` or `zstd` too,
    # whose streams would reach the SDK unread; a header the caller sets is trimmed alike.
    events = openai_chunks({"content": "Hello"})
    message = await chat(server, events, "gzip", headers={"Accept-Encoding": offered})
    assert message.text == "Hello"
    assert server.requests[0].headers["accept-encoding"] == sent


@settings(max_examples=50, deadline=None)
@given(
    case=st.sampled_from(["gzip", "deflate", "raw deflate"]),
    data=st.binary(max_size=2000),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=8),
)
def test_the_decoder_gives_the_bytes_sent_however_they_are_split(
    case: str, data: bytes, cuts: list[int]
) -> None:
    encoding, compress = ENCODINGS[case]
    packed = compress(data)
    bounds = sorted({0, len(packed), *(c for c in cuts if c < len(packed))})
    decoder = ContentDecoder.of(encoding)
    assert decoder is not None
    pieces = [decoder.decode(packed[a:b]) for a, b in itertools.pairwise(bounds)]
    assert b"".join(pieces) + decoder.flush() == data
