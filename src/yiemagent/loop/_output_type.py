"""A run's output type in the loop: offer it to the model, check each turn, count retries
(DESIGN §14).

`OutputRun` is one run's state. In tool mode it offers the output tool (`final_result`,
whose input schema is the output schema); its `execute` validates the arguments with the
spec (pydantic or jsonschema), so an invalid value is an error result the model reads and
corrects. In native mode the provider gets the schema (`StreamOptions.output_schema`) and
the final answer text is parsed as JSON. Either way a final text answer that holds a valid
JSON value is accepted, and an invalid one goes back to the model as a user message with
the problems. After `retries` invalid outputs the run ends in error saying why.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from yiemagent.errors import ConfigError
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentMessage,
    AgentTool,
    AgentToolResult,
    AssistantMessage,
    Model,
    OnUpdate,
    OutputSpec,
    OutputValidationError,
    TextContent,
    ToolResultMessage,
    UserMessage,
    text_of,
)
from yiemagent.types.json_text import read_strict_json
from yiemagent.types.output import NOT_STORED, OUTPUT_TOOL_LABEL

__all__ = ["ACCEPTED_TEXT", "OutputFailed", "OutputRun", "OutputVerdict"]

logger = logging.getLogger(__name__)

ACCEPTED_TEXT = "Final result accepted."
"""The output tool's result for a valid value."""

_CUT_OFF_SHOWN = 200
"""How many characters of a cut-off answer's end its retry message shows."""

UNUSED_TEXT = "Not used: a final result was already given in this reply."
"""The output tool's result for a valid value after the reply's first: the model must not
read that it was accepted too."""


@dataclass(slots=True)
class OutputFailed:
    """The retries are used up: the run ends in error with `text`."""

    text: str


OutputVerdict = bool | UserMessage | OutputFailed | None
"""`True`: a valid output arrived (the run ends); a `UserMessage`: ask the model again with
it; `OutputFailed`: end the run in error; `None`: nothing to decide (tool calls go on)."""


class OutputRun:
    """One run's output type: the output tool, the accepted value, the count
    of invalid outputs so far. Used on the run's event loop thread only."""

    __slots__ = ("_candidates", "failures", "retries", "spec", "tool", "value")

    def __init__(self, spec: OutputSpec[Any], retries: int) -> None:
        self.spec = spec
        self.retries = retries
        self.failures = 0
        """Invalid outputs so far."""
        self.value: Any = None
        """The validated value, once accepted (`None` before)."""
        self._candidates: dict[str, Any] = {}
        self.tool = AgentTool(
            spec.name,
            OUTPUT_TOOL_LABEL,
            spec.description,
            spec.schema,
            self._execute,
            parallel=True,
        )
        """The output tool offered in tool mode."""

    # ── before each model call ─────────────────────────────────────────────

    def offer(self, context: AgentContext, model: Model) -> None:
        """In tool mode, add the output tool to the tools the model is offered (a new list).

        Raises:
            ConfigError: a tool of the same name is already offered.
        """
        if self.spec.resolved_mode(model) != "tool":
            return
        for tool in context.tools:
            if tool.name == self.spec.name:
                if tool is self.tool:
                    return
                raise ConfigError(
                    f"a tool named {self.spec.name!r} exists, and the output tool has that "
                    f"name; rename the tool or pass OutputSpec(T, name=...)"
                )
        context.tools = [*context.tools, self.tool]

    # ── the output tool ────────────────────────────────────────────────────

    async def _execute(
        self, tool_call_id: str, args: dict[str, Any], signal: AbortSignal, on_update: OnUpdate
    ) -> AgentToolResult:
        if self._candidates:  # the reply gave a valid output already: that one is kept
            self.spec.forget(tool_call_id)  # (and an output function is not run again)
            return AgentToolResult([TextContent(UNUSED_TEXT)])
        try:
            value = self.spec.validate_call(tool_call_id, args)
        except OutputValidationError as exc:
            raise ValueError(
                f"Invalid {self.spec.name} for {self.spec.type_name}:\n{exc}\n"
                f"Call {self.spec.name} again with corrected arguments."
            ) from None
        self._candidates[tool_call_id] = value
        return AgentToolResult([TextContent(ACCEPTED_TEXT)], {"output": self.spec.to_json(value)})

    # ── after each turn ────────────────────────────────────────────────────

    def accepted_in(self, message: AssistantMessage, messages: Sequence[AgentMessage]) -> bool:
        """On resume, once the calls `message` held for approval are answered: whether
        `message` gave a valid output (an output tool call of it answered `ACCEPTED_TEXT`
        among `messages`); then `value` is that call's value, read back from the transcript
        (another process may resume): an output function's from the value its result
        stored, so the function does not run again, any other type's validated again from
        the arguments it ran with. The model read that its result was accepted, so the
        batch it held ends the run as it would have without the hold."""
        answers = {m.tool_call_id: m for m in messages if isinstance(m, ToolResultMessage)}
        for call in message.tool_calls:
            answer = answers.get(call.id)
            if call.name != self.spec.name or answer is None or answer.is_error:
                continue
            if text_of(answer.content) != ACCEPTED_TEXT:
                continue
            details = answer.details if isinstance(answer.details, dict) else {}
            if "output" in details:
                stored = self.spec.stored_value(details["output"])
                if stored is not NOT_STORED:
                    self.value = stored
                    return True
            try:
                self.value = self.spec.validate(answer.executed_arguments or call.arguments)
            except OutputValidationError:  # the type changed since: ask the model again
                return False
            return True
        return False

    def check(
        self, message: AssistantMessage, tool_results: list[ToolResultMessage], model: Model
    ) -> OutputVerdict:
        """Decide after a turn: accepted, ask again, failed, or nothing yet (see
        `OutputVerdict`)."""
        calls = [call for call in message.tool_calls if call.name == self.spec.name]
        candidates, self._candidates = self._candidates, {}
        for call in calls:
            if call.id in candidates:
                self.value = candidates[call.id]
                return True
        if calls:
            errors = [r for r in tool_results if r.tool_call_id in {c.id for c in calls}]
            problem = text_of(errors[0].content) if errors else "the output tool call had no result"
            return self._invalid(problem, None)
        if message.tool_calls or message.stop_reason not in ("stop", "length"):
            return None
        text = text_of(message.content)
        if message.stop_reason == "length" and not _whole_json(text):
            end = text if len(text) <= _CUT_OFF_SHOWN else "..." + text[-_CUT_OFF_SHOWN:]
            problem = (
                "the answer was cut off at the output token limit, so it is not a whole "
                f"{self.spec.type_name}; it ended: {json.dumps(end, ensure_ascii=False)}"
            )
            return self._invalid(problem, self._retry_text(problem, model))
        try:
            self.value = self.spec.validate_text(text)
            return True
        except OutputValidationError as exc:
            return self._invalid(str(exc), self._retry_text(str(exc), model))

    def _invalid(self, problem: str, retry: str | None) -> OutputVerdict:
        self.failures += 1
        # the problem quotes what the model wrote (user data): the events carry it, logs do not
        logger.info(
            "invalid %s output %d of %d allowed", self.spec.type_name, self.failures, self.retries
        )
        if self.failures > self.retries:
            return OutputFailed(
                f"The model gave no valid {self.spec.type_name} output after "
                f"{self.retries} {'retry' if self.retries == 1 else 'retries'}; the last "
                f"problem:\n{problem}"
            )
        return None if retry is None else UserMessage(retry)

    def _retry_text(self, problem: str, model: Model) -> str:
        head = f"Your answer is not a valid {self.spec.type_name}:\n{problem}\n"
        if self.spec.resolved_mode(model) == "tool":
            return head + f"Call the {self.spec.name} tool with the result as its arguments."
        return head + "Reply again with only the JSON value, matching: " + self.spec.schema_text()


def _whole_json(text: str) -> bool:
    """Whether `text`, an answer the output token limit ended, is one whole JSON object or
    array: its closing bracket is there, so the limit fell after the value (a grammar can
    close it on the last token allowed), and a cut could not have made it. Any other cut-off
    answer may read as a value it is not ("12" of "123", half a sentence)."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return False
    try:
        read_strict_json(stripped.encode())
    except ValueError:
        return False
    return True
