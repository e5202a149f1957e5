"""One run of the agent loop: the state its turns share and the turn events (DESIGN §5).

`LoopRun` is what `agent_loop` (the turns) and `turn_tools` (a turn's tool calls) both work
on: the context, the config, the event sink and signal, the messages the run added, and how
far the current turn got, so that whatever raises, the open tool calls and the turn can be
closed (R-4.1, R-5.9).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from yiemagent.loop.convert import IncrementalConverter
from yiemagent.loop.limits import UsageMeter
from yiemagent.loop.output import OutputRun
from yiemagent.types import (
    AbortSignal,
    AgentContext,
    AgentLoopConfig,
    AgentMessage,
    AssistantMessage,
    MessageEndEvent,
    MessageStartEvent,
    StreamFn,
    ToolCall,
    ToolResultMessage,
    TurnEndEvent,
    TurnStartEvent,
)
from yiemagent.types.callbacks import Emit, EventSink, guarded_sink
from yiemagent.types.observe import RunSpan, run_observer

__all__ = ["LoopRun"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class LoopRun:
    """One run's state: what its turns share (internal to `loop/`, not re-exported). Used
    on the run's task only."""

    context: AgentContext
    config: AgentLoopConfig
    emit: Emit
    signal: AbortSignal
    stream_fn: StreamFn | None
    new_messages: list[AgentMessage] = field(default_factory=list)
    convert: IncrementalConverter = field(default_factory=IncrementalConverter)
    model_calls: int = 0
    in_turn: bool = False
    unanswered: list[ToolCall] = field(default_factory=list)
    """Tool calls of the last assistant message still without results (R-4.1)."""
    turn_message: AssistantMessage | None = None
    """The assistant message of the current turn, once the model call has ended."""
    meter: UsageMeter | None = None
    """What the run has spent, when it has `UsageLimits` (DESIGN §13)."""
    trace: RunSpan | None = None
    """The run's `invoke_agent` span, when it is traced (DESIGN §13)."""
    held: list[ToolCall] = field(default_factory=list)
    """Tool calls of the last batch held for approval (DESIGN §14)."""
    output: OutputRun | None = None
    """The run's output type, when it has one (DESIGN §14)."""

    def __post_init__(self) -> None:
        spec = self.config.output_type
        if spec is not None:
            self.output = OutputRun(spec, self.config.output_retries)

    def append(self, message: AgentMessage) -> None:
        """Add `message` to the transcript and to the run's new messages."""
        self.context.messages.append(message)
        self.new_messages.append(message)

    @classmethod
    def start(
        cls,
        context: AgentContext,
        config: AgentLoopConfig,
        emit: EventSink,
        signal: AbortSignal | None,
        stream_fn: StreamFn | None,
        converter: IncrementalConverter | None,
    ) -> LoopRun:
        """A new run (`signal=None`: no abort; `emit` plain or async, guarded), its span and
        usage meter started (DESIGN §13); `converter` as in `run_agent_loop`."""
        run = cls(context, config, guarded_sink(emit), signal or AbortSignal(), stream_fn)
        if converter is not None:
            run.convert = converter
        run.observe()
        return run

    def observe(self) -> None:
        """Start the run's span and usage meter (DESIGN §13); nothing when neither is asked."""
        if self.config.usage_limits is not None:
            self.meter = UsageMeter(self.config.usage_limits)
        observer = run_observer(self.config)
        if observer is not None:
            try:
                self.trace = observer.run(self.config, self.context.system_prompt)
            except Exception:
                logger.exception("could not start the run's span; the run goes on untraced")

    async def start_turn(self) -> None:
        """`turn_start` (R-5.4)."""
        self.in_turn = True
        self.turn_message = None
        await self.emit(TurnStartEvent())

    async def emit_message(self, message: AgentMessage) -> None:
        """`message_start` and `message_end` of a message that is not streamed."""
        await self.emit(MessageStartEvent(message))
        await self.emit(MessageEndEvent(message))

    async def end_turn(
        self, message: AssistantMessage, tool_results: list[ToolResultMessage]
    ) -> None:
        """`turn_end` (R-5.4)."""
        self.in_turn = False
        await self.emit(TurnEndEvent(message, tool_results))
