"""The scripted model of the `yiem chat` terminal tests (loaded through the test-only
`$YIEM_CHAT_FAUX_SCRIPT`). It answers from the last message of each context:

- a tool result: "Tool results: " and the results' texts;
- "hello": a greeting, streamed in 4-character chunks; "stream": a longer answer;
- "fail": a model error; "fail slowly": one after ~8 s of streamed text; "cut": an answer
  cut off at the output limit (stop reason "length");
- "escapes": an answer holding escape sequences (clear the screen, retitle the window, move
  the cursor up over the lines above, a carriage return);
- "mcp TOOL [TEXT]": a call of an MCP server's tool (`{"text": TEXT}` when given);
- "write shout": a writeTool call writing `shout`; "use shout TEXT": a call of it;
- "write word_count": a writeTool call whose executeCode is a whole `def execute(...)` (as the
  1.5B model writes it); "use word_count TEXT": a call of it; "write reverse_text": the 0.5B
  model's writeTool call, whose executeCode does not parse;
- a summary request (the compactor's): "Summary of the earlier chat.";
- "progress N": a call of `slow` with N steps;
- "parallel": two `slow` calls in one message (a parallel batch);
- "slow": a `slow` call with 40 steps of 0.25 s (steering and Ctrl-C tests);
- "loop": a quick `slow` call after each result, until the chat's turn limit ends the run;
- "remove NAME": a call of the approval test tool `remove` (`approval_tools/remove.py`);
- "steer ...": "Steering received: <text>" (the steering tests type it while a tool runs);
- anything else: "You said: <text> [N messages]" (N: the messages the model was sent).

`$FAUX_CONTEXT_WINDOW` declares a tiny context window (compaction tests). Every answer
reports a usage of 12 input and 5 output tokens.
"""

from __future__ import annotations

import dataclasses
import os

from yiemagent.ai.providers.faux import FauxModel, faux_message, faux_tool_call
from yiemagent.types import (
    AssistantMessage,
    Context,
    ToolResultMessage,
    Usage,
    UserMessage,
    text_of,
)


def _text(message: object) -> str:
    content = getattr(message, "content", "")
    return content if isinstance(content, str) else text_of(content)


SHOUT = {
    "name": "shout",
    "label": "Shout",
    "description": "Upper-cases a text and adds an exclamation mark.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "executeCode": "return args['text'].upper() + '!'",
}
WORD_COUNT = {  # the 1.5B's writeTool call in `yiem chat` (docs/chat.md), word for word
    "name": "word_count",
    "label": "Count the number of words in a string",
    "description": "This tool takes a string as input and returns the number of words in it.",
    "inputSchema": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
    "executeCode": (
        "def execute(tool_call_id, args, signal, on_update):\n"
        "    text = args['text']\n"
        "    word_count = len(text.split())\n"
        "    return str(word_count)"
    ),
    "imports": "",
    "validateCode": (
        "def validate_arguments(args):\n"
        "    if 'text' not in args:\n"
        "        return 'Error: Missing argument: text'"
    ),
}
REVERSE_TEXT = {  # the 0.5B's writeTool call in `yiem chat`, word for word: does not parse
    "name": "reverse_text",
    "label": "Reverse Text",
    "description": "This tool takes a string argument and returns the text reversed.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
    "executeCode": "def reverse_text(text): return text[::-1] return reverse_text(text)",
}
WRITES = {"shout": SHOUT, "word_count": WORD_COUNT, "reverse_text": REVERSE_TEXT}


def answer(context: Context) -> AssistantMessage:
    reply = _answer(context)
    message = faux_message(reply) if isinstance(reply, str) else reply
    message.usage = Usage(input=12, output=5, total_tokens=17)
    return message


def _answer(context: Context) -> AssistantMessage | str:
    if context.system_prompt.startswith("You summarise"):
        return "Summary of the earlier chat."
    messages = context.messages
    last = messages[-1]
    if isinstance(last, ToolResultMessage):
        prompt = next(m for m in reversed(messages) if isinstance(m, UserMessage))
        if _text(prompt).strip().lower() == "loop":
            return faux_message(faux_tool_call("slow", {"label": "l", "steps": 1, "delay": 0}))
        results = [m for m in messages if isinstance(m, ToolResultMessage)]
        batch = []
        for message in reversed(results):
            batch.append(_text(message))
            if messages[messages.index(message) - 1] is not message and not isinstance(
                messages[messages.index(message) - 1], ToolResultMessage
            ):
                break
        return "Tool results: " + "; ".join(reversed(batch))
    text = _text(last).strip()
    if text.lower().startswith("steer"):
        return f"Steering received: {text}"
    if isinstance(last, UserMessage) and text.startswith("summarise"):
        return "SUMMARY"
    lower = text.lower()
    if lower == "hello":
        return "Hello! I am a scripted faux model and this answer streams in small chunks."
    if lower.startswith("progress"):
        steps = int(lower.split()[1]) if len(lower.split()) > 1 else 3
        return faux_message(faux_tool_call("slow", {"label": "p", "steps": steps, "delay": 0.3}))
    if lower == "parallel":
        return faux_message(
            faux_tool_call("slow", {"label": "left", "steps": 4, "delay": 0.4}),
            faux_tool_call("slow", {"label": "right", "steps": 4, "delay": 0.4}),
        )
    if lower == "loop":
        return faux_message(faux_tool_call("slow", {"label": "l", "steps": 1, "delay": 0}))
    if lower == "slow":
        return faux_message(faux_tool_call("slow", {"label": "s", "steps": 40, "delay": 0.25}))
    if lower.startswith("mcp "):  # "mcp TOOL [TEXT]": call an MCP test server's tool
        name, _, rest = text[4:].partition(" ")
        return faux_message(faux_tool_call(name, {"text": rest} if rest else {}))
    if lower.startswith("remove "):
        return faux_message(faux_tool_call("remove", {"name": text[len("remove ") :]}))
    if lower.startswith("write ") and lower[len("write ") :] in WRITES:
        return faux_message(faux_tool_call("writeTool", WRITES[lower[len("write ") :]]))
    if lower.startswith("use ") and text.split(" ")[1] in WRITES:
        _, name, rest = text.split(" ", 2)
        return faux_message(faux_tool_call(name, {"text": rest}))
    if lower == "stream":
        return "Streaming: " + " ".join(f"word{n}" for n in range(1, 41)) + " end."
    if lower == "fail":
        return faux_message("", stop_reason="error", error_message="scripted model failure")
    if lower == "fail slowly":  # streams for ~8 s (time to type a steer), then fails
        return faux_message(
            "Thinking " + "hard " * 200, stop_reason="error", error_message="scripted failure"
        )
    if lower == "escapes":
        return "Safe\x1b[2J\x1b[H\x1b]0;pwned\x07 answer\x1b[3A\x1b[K\rOVERWRITTEN"
    if lower == "cut":
        return faux_message("The piston is connected to a crank", stop_reason="length")
    return f"You said: {text} [{len(messages)} messages]"


faux_model = FauxModel([answer] * 500, chunk_size=4, delay_s=0.03, model_id="chat-faux")
if os.environ.get("FAUX_CONTEXT_WINDOW"):  # a tiny window, for the compaction test
    window = int(os.environ["FAUX_CONTEXT_WINDOW"])
    faux_model.model = dataclasses.replace(faux_model.model, context_window=window)
