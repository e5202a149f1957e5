"""The `Agent`'s channels and turn queues (seed 000 §5; DESIGN R-6.4, R-6.5).

`QueueMethods` is mixed into `Agent`: the prompt channel (`send` / `take_response`, 16
prompts), the steering and follow-up queues (`steer`, `follow_up`, 32 follow-ups) and how
many of each a turn takes. `steer`, `follow_up` and the `clear_*` methods may be called from
any thread; `send` and `take_response` on the agent's event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from yiemagent.agent.inputs import PromptInput, check_queue_mode, prompt_messages
from yiemagent.agent.queues import PromptChannel, QueueMode, TurnQueues
from yiemagent.types import AgentMessage, AssistantMessage

if TYPE_CHECKING:
    from yiemagent.agent.run import RunDriver
    from yiemagent.agent.state import AgentStateView

__all__ = ["QueueMethods"]


class QueueMethods:
    """The queue and channel API of `Agent`, over the agent's `TurnQueues`, its
    `PromptChannel` and its run driver (the held calls a prompt must wait for)."""

    __slots__ = ()

    _queues: TurnQueues[AgentMessage]
    _channel: PromptChannel[list[AgentMessage], AssistantMessage]
    _driver: RunDriver
    _state: AgentStateView

    @property
    def steering_mode(self) -> QueueMode:
        """How many steering messages a turn takes: "one-at-a-time" or "all"."""
        return self._queues.steering_mode

    @steering_mode.setter
    def steering_mode(self, mode: QueueMode) -> None:
        check_queue_mode("steering_mode", mode)
        self._queues.steering_mode = mode

    @property
    def follow_up_mode(self) -> QueueMode:
        """How many follow-ups a turn takes: "one-at-a-time" or "all"."""
        return self._queues.follow_up_mode

    @follow_up_mode.setter
    def follow_up_mode(self, mode: QueueMode) -> None:
        check_queue_mode("follow_up_mode", mode)
        self._queues.follow_up_mode = mode

    def send(self, message: PromptInput) -> None:
        """Queue a prompt (a text, a message, an OpenAI user dict, or a list of messages for one
        run); it runs when the agent is idle, after the prompts sent before it.
        Its final message comes from `take_response()` (R-6.4). Without a running event loop
        the prompt waits for the next `take_response`/`wait_for_idle`/`close`.

        Raises:
            AgentBusyError: 16 prompts are already waiting, or the agent is closed.
            ApprovalPendingError: tool calls await approval.
        """
        self._driver.held.check_none_pending(self._state.messages, "send a prompt")
        self._channel.put(prompt_messages(message, None))

    async def take_response(self) -> AssistantMessage:
        """The final message of the next sent prompt's run, in send order (R-6.4); waits for
        it. `prompt()` returns its own answer and puts nothing here.

        Raises:
            AgentBusyError: the agent is closed and no response is left.
        """
        return await self._channel.take()

    def steer(self, message: PromptInput) -> None:
        """Queue a message delivered at the next turn boundary of the current (or next) run."""
        for item in prompt_messages(message, None):
            self._queues.steering.put(item)

    def follow_up(self, message: PromptInput) -> None:
        """Queue a message delivered when the run would otherwise stop.

        Raises:
            AgentBusyError: 32 follow-ups are already waiting.
        """
        for item in prompt_messages(message, None):
            self._queues.follow_ups.put(item)

    def clear_steering_queue(self) -> None:
        """Drop the queued steering messages."""
        self._queues.steering.clear()

    def clear_follow_up_queue(self) -> None:
        """Drop the queued follow-up messages."""
        self._queues.follow_ups.clear()

    def clear_all_queues(self) -> None:
        """Drop queued steering and follow-up messages (sent prompts stay queued)."""
        self._queues.clear()

    def has_queued_messages(self) -> bool:
        """Whether steering, follow-up or sent prompts are waiting."""
        return bool(self._queues or self._channel.inbox)
