"""A llama.cpp-compatible HTTP server as the embedded model's runtime (DESIGN §21).

`ServerRuntime` has `LocalRuntime`'s `chat(request, on_chunk)`, so the embedded model's whole
pipeline (the reply schema, the rules, the guards) runs against a model that a
server serves: the request dicts are the same, sent to `/v1/chat/completions` with the
`openai` SDK's synchronous client (the pipeline calls `chat` on a worker thread). They use
`response_format` with a JSON Schema, and for the extra calls of one reply llama.cpp's
`grammar`; a server must take both (llama.cpp's does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from yiemagent.ai.providers.local.runtime import ChunkCallback

__all__ = ["ServerRuntime"]

_NAMED = ("messages", "model")


@dataclass(slots=True)
class ServerRuntime:
    """One server's chat completions, blocking; thread-safe (one HTTP client, shared)."""

    base_url: str
    """The server's OpenAI API root, e.g. http://127.0.0.1:8080/v1."""
    model: str
    """The model id sent in each request."""
    api_key: str = field(repr=False, default="no-key")
    timeout_s: float = 600.0
    """Longest silence on the connection (s); the pipeline's own deadline ends a reply
    first."""
    _client: Any = field(default=None, init=False, repr=False)

    def chat(self, request: dict[str, Any], on_chunk: ChunkCallback | None = None) -> Any:
        """`LocalRuntime.chat` over HTTP: returns the response dict (without `on_chunk`),
        `{}` after a stream, or `{"error": {"message": ...}}` when the server failed (HTTP
        status and its text) or could not be reached."""
        import openai

        if self._client is None:
            self._client = openai.OpenAI(
                base_url=self.base_url, api_key=self.api_key, max_retries=0, timeout=self.timeout_s
            )
        body = {"model": self.model, **request}
        rest = {k: v for k, v in body.items() if k not in (*_NAMED, "stream")}
        try:
            if on_chunk is None:
                response = self._client.chat.completions.create(
                    messages=body["messages"], model=self.model, extra_body=rest
                )
                return response.model_dump()
            stream = self._client.chat.completions.create(
                messages=body["messages"], model=self.model, stream=True, extra_body=rest
            )
            with stream:
                for chunk in stream:
                    if on_chunk(chunk.model_dump(exclude_unset=True)):
                        break
            return {}
        except openai.APIStatusError as exc:
            return {"error": {"message": f"{self.base_url} answered {exc.status_code}: {exc}"}}
        except openai.APIError as exc:
            return {"error": {"message": f"{self.base_url}: {exc}"}}
