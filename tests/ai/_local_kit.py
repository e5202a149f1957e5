"""Helpers of the embedded-model provider tests (DESIGN §7): `FakeRuntime`, a scripted
stand-in for llama.cpp (the `fake` fixture of conftest installs it), two tools, and the
reply texts the model writes. The provider first asks for the tool name the model writes
with no grammar (`generation.free_name`); the fake answers that probe from its next
scripted reply, so a test's script holds replies only."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from yiemagent import AgentTool
from yiemagent.ai import Context, StreamOptions, get_model, stream
from yiemagent.ai.providers.local.native import NATIVE_NAME_PREFIX
from yiemagent.ai.providers.local.prompt import NAME_PREFIX


def is_name_probe(request: dict[str, Any]) -> bool:
    """Whether `request` is the provider's free-name probe (it ends in `NAME_PREFIX`, or
    `NATIVE_NAME_PREFIX` in the model's own format)."""
    last = (request.get("messages") or [{}])[-1]
    prefixes = (NAME_PREFIX, NATIVE_NAME_PREFIX)
    return bool(last.get("role") == "assistant" and last.get("content") in prefixes)


def probe_reply(next_reply: str, name: str | None = None) -> str:
    """What the model writes after `NAME_PREFIX`: `name` if given, else the name of the
    scripted reply's (first) item or `<tool_call>` block, else nothing (no whole name)."""
    if name is None:
        block = next_reply.removeprefix("<tool_call>").split("</tool_call>", 1)[0]
        try:
            item = json.loads(block)
        except ValueError:
            return ""
        item = item[0] if isinstance(item, list) and item else item
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            return ""
        name = item["name"]
    return f'{name}", "arguments": {{}}}}'


MODEL = get_model("local/qwen2.5-coder-0.5b")


def _tool(name: str, prop: str = "expression") -> AgentTool:
    return AgentTool(
        name=name,
        label=name,
        description=f"The {name} tool.",
        input_schema={
            "type": "object",
            "properties": {prop: {"type": "string", "description": "x"}},
            "required": [prop],
        },
        execute=lambda *a: "unused",
    )


CALC = _tool("calculator")
TIME = _tool("get_time", "place")


def _replay(
    text: str,
    on_chunk: Callable[[dict[str, Any]], bool],
    *,
    finish: str,
    size: int = 3,
    delay_s: float = 0.0,
) -> bool:
    """Send `text` as `size`-char content chunks (`delay_s` before each), then the `finish`
    chunk; True when `on_chunk` asked to stop (then nothing more is sent)."""
    for i in range(0, len(text), size):
        if delay_s:
            time.sleep(delay_s)
        if on_chunk({"choices": [{"index": 0, "delta": {"content": text[i : i + size]}}]}):
            return True
    on_chunk({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return False


class FakeRuntime:
    """Replays one scripted reply per request as OpenAI chunk dicts, in `size`-char deltas.

    A request with a `grammar` asks for one extra call after a lone first call, or is a
    reply in the model's own format: it replays the next of `more` ("]", nothing, once
    they run out). The free-name probe is answered from `names`, else from the next reply
    (`_local_kit.probe_reply`)."""

    def __init__(
        self,
        replies: list[str],
        *,
        size: int = 3,
        delay_s: float = 0.0,
        finish: str = "stop",
        more: list[str] | None = None,
        more_finish: str | list[str] = "stop",
        names: list[str] | None = None,
    ) -> None:
        self.names = list(names or [])
        self.probes: list[dict[str, Any]] = []
        self.finish = finish
        self.more_finish = more_finish
        """The finish reason of every `more` reply, or one each, in order."""
        self.replies = list(replies)
        self.more = list(more or [])
        self.requests: list[dict[str, Any]] = []
        self.size = size
        self.delay_s = delay_s
        self.stopped_early = threading.Event()

    def chat(self, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        if is_name_probe(request):
            self.probes.append(json.loads(json.dumps(request)))
            name = self.names.pop(0) if self.names else None
            # The model's own format's replies come from `more` (their requests hold a grammar).
            script = (
                self.more if request["messages"][-1]["content"] != NAME_PREFIX else self.replies
            )
            reply = probe_reply(script[0] if script else "", name)
            _replay(reply, on_chunk, finish="length")
            return
        self.requests.append(json.loads(json.dumps(request)))
        finish = self.finish
        if "grammar" in request:
            reply = self.more.pop(0) if self.more else "]"
            finish = (
                self.more_finish if isinstance(self.more_finish, str) else self.more_finish.pop(0)
            )
        else:
            reply = self.replies.pop(0)
        if reply.startswith("ERROR:"):
            on_chunk({"error": {"code": 500, "message": reply[6:]}})
            return
        if request.get("return_progress"):  # as llama.cpp reports the prompt read
            progress = {"total": 100, "cache": 40, "processed": 60, "time_ms": 5}
            on_chunk({"choices": [], "prompt_progress": progress})
        if _replay(reply, on_chunk, finish=finish, size=self.size, delay_s=self.delay_s):
            self.stopped_early.set()
            return
        usage = {
            "prompt_tokens": 100,
            "completion_tokens": 10,
            "total_tokens": 110,
            "prompt_tokens_details": {"cached_tokens": 40},
        }
        on_chunk({"choices": [], "usage": usage})


async def _events(
    context: Context, options: StreamOptions | None = None, model: Any = MODEL
) -> list[Any]:
    s = stream(model, context, options)
    return [event async for event in s]


def _answer(text: str) -> str:
    return json.dumps({"name": "answer", "text": text})


def _calls(*calls: tuple[str, dict[str, Any]]) -> str:
    """One call as an object, several as a list (the reply schema's two call forms)."""
    items = [{"name": name, "arguments": args} for name, args in calls]
    return json.dumps(items[0] if len(items) == 1 else items)
