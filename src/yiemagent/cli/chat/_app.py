"""The `yiem chat` terminal application (DESIGN §15): prompt_toolkit reads the input line
while the agent runs, rich prints the finished output above it.

One asyncio loop runs both. The input line never goes away: Enter at the idle prompt starts
a run (`Agent.prompt`) in a task; Enter while that task runs queues a steering message
(`Agent.steer`, delivered at the next turn boundary). Ctrl-C during a run aborts it
(`Agent.abort`: every tool call is still answered); at the idle prompt Ctrl-C clears
the line, and Ctrl-C on an empty line twice in a row, or Ctrl-D on an empty line, exits.
SIGTERM leaves as Ctrl-D does (a run aborted, the terminal given back), with status 143.
Questions (approvals, writeTool) take the next Enter as their answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from prompt_toolkit.application import Application
from prompt_toolkit.buffer import Buffer
from prompt_toolkit.data_structures import Point
from prompt_toolkit.filters import Condition
from prompt_toolkit.formatted_text import ANSI
from prompt_toolkit.history import FileHistory, InMemoryHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import ConditionalContainer, HSplit, Layout, Window
from prompt_toolkit.layout.controls import BufferControl, FormattedTextControl
from prompt_toolkit.layout.processors import BeforeInput
from prompt_toolkit.patch_stdout import StdoutProxy
from prompt_toolkit.renderer import Renderer
from prompt_toolkit.utils import suspend_to_background_supported
from rich.console import Console, ConsoleDimensions
from rich.text import Text

from yiemagent.agent import team_output_tools
from yiemagent.cli.chat._view import LiveView
from yiemagent.cli.options import EXIT_TERMINATED, Terminated
from yiemagent.cli.teams import has_guardrails
from yiemagent.errors import AgentBusyError, ApprovalPendingError
from yiemagent.types import (
    AgentMessage,
    AssistantMessage,
    PendingApproval,
    UserMessage,
    text_of,
)
from yiemagent.types.output import output_spec

if TYPE_CHECKING:
    from yiemagent.cli.chat.setup import ChatSetup
    from yiemagent.compaction import CompactionInfo

__all__ = ["ChatApp"]

logger = logging.getLogger(__name__)

EXIT_HINT = "Press Ctrl-C again or Ctrl-D to exit."
_TICK_S = 0.1
_LEAVING_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""The signals that end the chat as Ctrl-D does (`ChatApp.terminate`); no SIGHUP on Windows."""


@contextlib.contextmanager
def _patched_stdout() -> Iterator[None]:
    """prompt_toolkit's `patch_stdout(raw=True)` (anything printed, by us or by a tool, goes
    above the input line), flushing every 20 ms instead of 200 ms: finished lines keep pace
    with the live region."""
    with StdoutProxy(raw=True, sleep_between_writes=0.02) as proxy:
        stdout, stderr = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = proxy
        try:
            yield
        finally:
            sys.stdout, sys.stderr = stdout, stderr


class _OneLineLogs(logging.Handler):
    """Library warnings as one dim line above the prompt, never a traceback."""

    def __init__(self, app: ChatApp) -> None:
        super().__init__(logging.WARNING)
        self._app = app

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):
            text = " ".join(record.getMessage().split())
            self._app.say(f"warning: {text}", "yellow")


KEPT_INPUT_CHARS = 10_000
"""The longest input the history file keeps; a longer one (a pasted file) is in this chat's
history only: every chat start reads the whole file into memory."""


class _KeptHistory(FileHistory):
    """The input history file, appended to while it can be. A line it cannot take (the
    disk full, the file too large, the folder gone) is said once and not tried again, the
    file is cut back to what it held (no half line for the next chat to read back), and
    the history goes on in memory: the write raised out of the Enter key, so the chat
    showed a traceback and dropped the line just typed. An input longer than
    `KEPT_INPUT_CHARS` stays in memory only."""

    def __init__(self, filename: str, failed: Callable[[str], None]) -> None:
        super().__init__(filename)
        self._failed = failed
        self._broken = False

    def store_string(self, string: str) -> None:
        """Append `string` to the file (prompt_toolkit's format); never raises OSError."""
        if self._broken or len(string) > KEPT_INPUT_CHARS:
            return
        try:
            size = os.path.getsize(self.filename)
        except OSError:
            size = None
        try:
            super().store_string(string)
        except OSError as exc:
            self._broken = True
            if size is not None:
                with contextlib.suppress(OSError):
                    os.truncate(self.filename, size)
            self._failed(
                f"input history is not kept from now on: {os.fsdecode(self.filename)}: "
                f"{exc.strerror or exc}"
            )


class ChatApp:
    """One chat in the terminal: the input line, the live view and the agent's runs.

    Args:
        setup: the agent, tools, session and model to chat with (see `ChatSetup`).

    The app owns the agent's runs: at most one run task at a time; every listener, command
    and key handler runs on the event loop thread.
    """

    def __init__(self, setup: ChatSetup) -> None:
        self.setup = setup
        self.console: Console = Console(file=io.StringIO())  # replaced in run()
        self.view = LiveView(self._commit, self._invalidate)
        self.view.hold_text = has_guardrails(setup.agent)
        self.view.max_tokens = setup.agent.max_tokens  # `--max-tokens`, or the agent file's
        spec = output_spec(setup.agent.output_type)
        self.view.output_tool = None if spec is None else spec.name
        self.view.output_tools = team_output_tools(setup.agent)
        self.run_task: asyncio.Task[None] | None = None
        self.ready: asyncio.Task[None] | None = None
        self.steered: list[UserMessage] = []
        # Lines typed while a task that takes no steering runs (`/new`'s switch): they are
        # prompts for the agent that comes after it, run when it ends.
        self._steers = True
        self.waiting: list[UserMessage] = []
        self._question: asyncio.Future[str] | None = None
        self._exit_armed = False
        self._unsubscribe: Callable[[], None] | None = None
        self.buffer = Buffer(
            multiline=False,
            history=(
                _KeptHistory(str(setup.history_path), lambda why: self.say(why, "yellow"))
                if setup.keep_history
                else InMemoryHistory()
            ),
            on_text_changed=lambda _buffer: self._disarm(),
        )
        self.app: Application[int] = _ReflowAwareApplication(
            layout=self._layout(),
            key_bindings=self._key_bindings(),
            full_screen=False,
            min_redraw_interval=0.03,
            erase_when_done=True,
            after_render=self._first_render,
        )

    # ── layout and keys ────────────────────────────────────────────────────

    def _layout(self) -> Layout:
        live = ConditionalContainer(
            Window(
                # Its cursor on its last row: taller than the terminal, it shows its bottom
                # (the newest text, the "working" line), not its top.
                FormattedTextControl(
                    self._live_text, get_cursor_position=lambda: Point(0, self._live_rows - 1)
                ),
                wrap_lines=True,
                dont_extend_height=True,
            ),
            filter=Condition(lambda: bool(self._live_lines())),
        )
        prompt = Window(
            BufferControl(self.buffer, input_processors=[BeforeInput(self._prompt_text)]),
            wrap_lines=True,
            dont_extend_height=True,
        )
        return Layout(HSplit([live, prompt]), focused_element=prompt)

    def _prompt_text(self) -> str:
        return "? " if self._question is not None else "› "

    _live_rows = 1
    """The rows of the live region's last drawing."""

    def _live_lines(self) -> list[Text]:
        """The live region's lines; a long unfinished line cut to what the terminal can
        show (`LiveView.lines`)."""
        size = self.app.output.get_size()
        return self.view.lines(tail=max(20, size.columns) * max(1, size.rows))

    def _live_text(self) -> ANSI:
        width = max(20, self.app.output.get_size().columns)
        out = io.StringIO()
        render = Console(  # wrapped at spaces here, not mid-word by prompt_toolkit
            file=out,
            force_terminal=True,
            color_system="standard",
            width=width,
            soft_wrap=False,
            highlight=False,
            emoji=False,
        )
        for line in self._live_lines():
            render.print(line)
        text = out.getvalue().rstrip("\n")
        self._live_rows = text.count("\n") + 1
        return ANSI(text)

    def _key_bindings(self) -> KeyBindings:
        kb = KeyBindings()
        empty = Condition(lambda: not self.buffer.text)

        @kb.add("enter")
        def _enter(event: KeyPressEvent) -> None:
            text = self.buffer.text
            self.buffer.reset(append_to_history=bool(text.strip()))
            self.submit(text)

        @kb.add("c-c")
        def _ctrl_c(event: KeyPressEvent) -> None:
            self.interrupt()

        @kb.add("c-d", filter=empty)
        def _ctrl_d(event: KeyPressEvent) -> None:
            self.exit()

        # Ctrl-Z suspends the chat as it does any terminal program (`fg` resumes it, a run
        # going on where it stood), instead of prompt_toolkit's default: a ^Z in the message.
        @kb.add("c-z", filter=Condition(suspend_to_background_supported))
        def _ctrl_z(event: KeyPressEvent) -> None:
            event.app.suspend_to_background()

        return kb

    # ── output ─────────────────────────────────────────────────────────────

    def _commit(self, line: Text) -> None:
        self.console.print(line)  # wrapped at spaces (`_PaneConsole`)

    def say(self, text: str, style: str = "dim") -> None:
        """Print one line above the prompt."""
        self.console.print(Text(text, style=style))

    def _invalidate(self) -> None:
        self.app.invalidate()

    # ── input ──────────────────────────────────────────────────────────────

    def submit(self, raw: str) -> None:
        """Handle one entered line: an answer, a command, a steering message or a prompt."""
        from yiemagent.cli.chat._commands import dispatch, is_command

        text = raw.strip()
        if self._question is not None:
            if not self._question.done():
                self._question.set_result(text)
            return
        if not text:
            return
        if is_command(text):
            self.console.print(Text(f"› {text}", style="bold"))  # its output has a heading
            dispatch(self, text)
        elif self.busy and not self._steers:
            self.wait(text)
        elif self.busy:
            self.steer(text)
        else:
            self.start(text)

    @property
    def busy(self) -> bool:
        """Whether a run task is active."""
        return self.run_task is not None and not self.run_task.done()

    def steer(self, text: str) -> None:
        """Queue a steering message for the running agent (shown until delivered)."""
        message = UserMessage(text)
        self.setup.agent.steer(message)
        self.steered.append(message)
        self.view.queue(message, "steering")

    def _forget_gone_steering(self) -> None:
        """Keep in `steered` only the lines still in the transcript, which `/undo` reads
        it for: one `/undo` or a new session took away, or an abort dropped undelivered,
        is forgotten, so the list is never longer than the steering the transcript holds."""
        kept = {id(m) for m in self.setup.agent.state.messages if isinstance(m, UserMessage)}
        self.steered = [message for message in self.steered if id(message) in kept]

    def wait(self, text: str) -> None:
        """Keep `text` as the prompt of the run after the running task (which takes no
        steering); shown until then."""
        message = UserMessage(text)
        self.waiting.append(message)
        self.view.queue(message, "prompt")

    def follow_up(self, text: str) -> None:
        """Queue a follow-up (while a run is active) or start a run with it."""
        if not self.busy:
            self.start(text)
            return
        if not self._steers:
            self.wait(text)
            return
        message = UserMessage(text)
        try:
            self.setup.agent.follow_up(message)
        except AgentBusyError as exc:
            self.say(f"not queued: {exc}", "red")
            return
        self.view.queue(message, "follow-up")

    def start(self, text: str) -> None:
        """Start a run for `text` (the caller checked no run is active); tool calls still
        held for approval are asked about first."""
        self._forget_gone_steering()
        self.console.print(Text(f"› {text}", style="bold"))
        if self.pending_approvals():
            self.say("first, the tool calls that wait for your approval:", "yellow")
            self.begin(self._settle_then_prompt(UserMessage(text)))
            return
        self.begin(self._prompt(UserMessage(text)))

    def pending_approvals(self) -> list[PendingApproval]:
        """The agent's tool calls held for approval."""
        return list(getattr(self.setup.agent, "pending_approvals", None) or [])

    def ask_held(self) -> None:
        """Ask about the held tool calls now (idle only): at the start of a resumed session
        that holds some (a chat killed at the question), and for `/approvals`."""
        self.begin(self._after_ready())

    async def _after_ready(self) -> None:
        if self.ready is not None:
            await asyncio.shield(self.ready)

    async def _settle_then_prompt(self, message: AgentMessage) -> AssistantMessage | None:
        from yiemagent.cli.chat._approvals import settle_pending_approvals

        await self._after_ready()
        await settle_pending_approvals(self, self.setup.agent, self.setup.gate)
        if self._aborting:
            return None
        return await self.setup.agent.prompt(message)

    def begin(self, work: Awaitable[AssistantMessage | None], *, steers: bool = True) -> None:
        """Run `work` (a prompt or a resume) as the one run task. `steers=False` for work
        that is no run of the agent (a session switch): a line typed meanwhile waits, and
        starts a run once `work` ends, instead of steering an agent about to be replaced."""
        self._steers = steers
        self.view.started()
        self.run_task = asyncio.get_running_loop().create_task(self._run(work))

    async def _prompt(self, message: AgentMessage) -> AssistantMessage:
        if self.ready is not None:
            await asyncio.shield(self.ready)  # a Ctrl-C meanwhile cancels only this prompt
        return await self.setup.agent.prompt(message)

    async def _run(self, work: Awaitable[AssistantMessage | None]) -> None:
        from yiemagent.cli.chat._approvals import settle_pending_approvals

        try:
            await work
            if not self._aborting:
                await settle_pending_approvals(self, self.setup.agent, self.setup.gate)
            agent = self.setup.agent
            # A steering message typed after the last turn boundary: run it now.
            while agent.has_queued_messages() and not self._aborting:
                await agent.resume()
        except asyncio.CancelledError:
            if not self._closing:  # else the chat was left at a question
                self.say("⏹ cancelled before it started", "yellow")
        except ApprovalPendingError as exc:  # said in the chat's words, not the API's
            count = len(exc.pending) if exc.pending else 1
            self.say(
                f"{count} tool call(s) wait for your approval: /approvals asks about them",
                "yellow",
            )
        except Exception as exc:  # a run that failed: one line, the chat goes on
            message = getattr(exc, "message", None)
            if not isinstance(message, AssistantMessage):  # not already shown by the view
                self.say(f"error: {' '.join(str(exc).split()) or type(exc).__name__}", "red")
            if not self._aborting:
                self._give_back_queued()
        finally:
            if self._aborting:
                dropped = self.view.drop_queued()
                self.setup.agent.clear_all_queues()
                if dropped:
                    self.say(f"({dropped} queued message(s) dropped by the abort)")
                self.waiting.clear()
            self._aborting = False
            self._steers = True
            self.view.busy = False
            self.view.status = ""
            self._invalidate()
            if self.waiting:  # once this task is done: the next one replaces it
                asyncio.get_running_loop().call_soon(self._run_waiting)

    def _run_waiting(self) -> None:
        """Run the first line typed during a task that took no steering; the others steer
        that run, as lines typed during it do."""
        waiting, self.waiting = self.waiting, []
        for message in waiting:
            self.view.unqueue(message)
        for text in (text_of(message.content) for message in waiting):
            if not self.busy:
                self.start(text)
            elif self._steers:
                self.steer(text)
            else:
                self.wait(text)

    def _give_back_queued(self) -> None:
        """After a failed run: the steering and follow-up messages it never took (typed while
        its model call ran: no turn boundary came) are said not delivered, and one is put
        back in an empty input line. Left queued, they went into the next run, after the
        next prompt, and were answered instead of it."""
        queued = list(self.view.queued)
        if not queued:
            return
        self.view.drop_queued()
        self.setup.agent.clear_all_queues()
        for item in queued:
            self.say(f"» {item.kind} not delivered (the run failed): {item.text}", "yellow")
        if len(queued) == 1 and not self.buffer.text:
            self.buffer.text = queued[0].text
            self.buffer.cursor_position = len(self.buffer.text)

    _aborting = False

    @property
    def stopping(self) -> bool:
        """Whether Ctrl-C stopped the current run (its questions were answered "no")."""
        return self._aborting

    async def ask(self, question: Text) -> str:
        """Show `question` above the input line and return the next entered line (lowered);
        "" when the run is aborted meanwhile."""
        loop = asyncio.get_running_loop()
        self._question = loop.create_future()
        self.view.notice = question
        self._invalidate()
        try:
            return (await self._question).strip().lower()
        finally:
            self._question = None
            self.view.notice = None
            self._invalidate()

    def interrupt(self) -> None:
        """Ctrl-C: answer a question "no", abort a run, clear the line, or arm the exit."""
        asked = self._question is not None and not self._question.done()
        if self._question is not None and asked:
            self._question.set_result("")
        if self.busy and self.run_task is not None:
            self._aborting = True
            # Still waiting for the model to load: cancel. At an approval question (the
            # agent idle, calls held) the question's "no" ends it (`settle_pending_approvals`).
            if not self.setup.agent.is_busy and not asked:
                self.run_task.cancel()
            self.setup.agent.abort("interrupted by the user (Ctrl-C)")
            self.view.status = "stopping…"
            self._invalidate()
            return
        if self.buffer.text:
            self.buffer.reset()
            return
        if self._exit_armed:
            self.exit()
            return
        self._exit_armed = True
        self.view.notice = Text(EXIT_HINT, style="dim")
        self._invalidate()

    def _disarm(self) -> None:
        if self._exit_armed:
            self._exit_armed = False
            self.view.notice = None

    def exit(self) -> None:
        """Leave the chat (a running run is aborted first, in `run`)."""
        if not self.app.is_done:
            self.app.exit(result=EXIT_TERMINATED if self._terminated else 0)

    _terminated = False

    def terminate(self) -> None:
        """SIGTERM (a supervisor, `kill`) or SIGHUP (the terminal went away: its window
        closed, `tmux kill-session`, an ssh connection lost): leave as Ctrl-D does, so the
        run is aborted with every tool call answered in the stored session and the MCP
        servers stop. After SIGTERM the terminal gets its echo back and the status is 143
        (after SIGHUP there is no terminal to draw on). A second one leaves at once."""
        if self._terminated:
            os._exit(EXIT_TERMINATED)
        self._terminated = True
        if self.app.is_running:
            self.exit()
        # else the app has not started yet: `_first_render` leaves at once

    def _compacted(self, info: CompactionInfo) -> None:
        how = "" if info.summarised_by_model else " (no summary: the model failed)"
        self.say(
            f"compacted {info.turns} turns into a summary{how} · "
            f"~{info.tokens_before} → ~{info.tokens_after} tokens"
        )

    async def replace_agent(self, session_name: str) -> None:
        """Talk to a new agent on session `session_name` from now on (idle only); the old
        agent is closed (its session lease given back).

        Raises:
            Exception: the session could not be opened (e.g. `SessionBusyError`); the
                current agent stays.
        """
        old = self.setup.agent
        self.setup.new_agent(session_name)
        if self._unsubscribe is not None:
            self._unsubscribe()
        self._unsubscribe = self.setup.agent.subscribe(lambda event, _signal: self.view(event))
        await old.close()

    # ── lifetime ───────────────────────────────────────────────────────────

    async def _tick(self) -> None:
        """Redraw the spinner and the elapsed times while something is going on."""
        while True:
            await asyncio.sleep(_TICK_S)
            if self.view.busy or self.view.status or self.view.tools:
                self._invalidate()

    def _print_start(self) -> None:
        setup = self.setup
        head = Text("yiem chat", style="bold")
        head.append(f" · {setup.model_label} · session {setup.session_name}", style="dim")
        self.console.print(head)
        for note in setup.notes:
            self.say(note, "yellow")
        for line in setup.resumed_lines():
            self.console.print(line)

    def _first_render(self, _app: object) -> None:
        # Printed once the input line is live (raw mode): what is typed from now on is read
        # by the chat, not echoed by the terminal (the tests wait for this line).
        if self._terminated:
            self.exit()
        if not self._greeted:
            self._greeted = True
            self.say("/help lists the commands; Ctrl-D exits.")

    _greeted = False

    async def run(self) -> int:
        """Run the chat until the user leaves; returns the exit status."""
        from yiemagent.cli.chat._loading import load_model

        handler = _OneLineLogs(self)
        lib_logger = logging.getLogger("yiemagent")
        lib_logger.addHandler(handler)
        propagate, lib_logger.propagate = lib_logger.propagate, False
        code = 0
        try:
            self.console = Console(highlight=False, soft_wrap=True, emoji=False)
            self._print_start()  # before the input line is drawn below it
            with _patched_stdout():
                self.console = _PaneConsole(
                    file=sys.stdout,
                    force_terminal=sys.stdout.isatty() or None,
                    highlight=False,
                    emoji=False,
                )
                self.setup.gate.app = self
                if self.setup.compactor is not None:
                    self.setup.compactor.on_compact = self._compacted
                self._unsubscribe = self.setup.agent.subscribe(
                    lambda event, _signal: self.view(event)
                )
                self.ready = asyncio.get_running_loop().create_task(self._start(load_model))
                held = self.pending_approvals()
                if held:  # e.g. the last chat was killed at the question: ask it again
                    self.say(
                        f"this session has {len(held)} tool call(s) waiting for your approval",
                        "yellow",
                    )
                    self.ask_held()
                loop = asyncio.get_running_loop()
                ticker = loop.create_task(self._tick())
                for signum in _LEAVING_SIGNALS:
                    with contextlib.suppress(NotImplementedError, RuntimeError):
                        loop.add_signal_handler(signum, self.terminate)
                try:
                    code = await self.app.run_async()
                except OSError as exc:
                    # The terminal went away (its window closed, `tmux kill-session`): its
                    # input ends, prompt_toolkit's last draw on it fails with EIO, and
                    # SIGHUP comes, before or after. The chat leaves as SIGHUP asks.
                    if exc.errno != errno.EIO and not self._terminated:
                        raise
                    code = EXIT_TERMINATED
                finally:
                    ticker.cancel()
                    await self._shutdown()
                    for signum in _LEAVING_SIGNALS:
                        with contextlib.suppress(NotImplementedError, RuntimeError):
                            loop.remove_signal_handler(signum)
        finally:
            lib_logger.removeHandler(handler)
            lib_logger.propagate = propagate
        return code

    async def _start(self, load_model: Callable[[ChatApp], Awaitable[None]]) -> None:
        """What the first prompt waits for: the model's load and the MCP servers."""
        from yiemagent.cli.chat._mcp_servers import start_mcp_servers

        await asyncio.gather(load_model(self), start_mcp_servers(self))

    _closing = False

    async def _shutdown(self) -> None:
        self._closing = True
        if self.busy and self.run_task is not None:
            self._aborting = True
            question = self._question
            if question is not None and not question.done() and not self.setup.agent.is_busy:
                # At an approval question between runs: the calls stay held, and the next
                # chat on the session asks again, as after a kill. (The question waited for
                # an answer that could not come, and the chat for it, 30 s.)
                self.run_task.cancel()
            else:
                if question is not None and not question.done():
                    question.set_result("")  # a writeTool question: not written
                self.setup.agent.abort("terminated" if self._terminated else "the chat was closed")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(self.run_task), timeout=30)
        ready = self.ready
        if ready is not None and not ready.done():
            # llama.cpp cannot be stopped mid-load, and asyncio.run would wait for its
            # thread: nothing has been asked yet, so leave at once, once the MCP servers
            # started, or starting, are stopped (they would outlive the chat).
            from yiemagent.cli.chat._mcp_servers import close_mcp_servers

            ready.cancel()
            await asyncio.wait([ready], timeout=30)
            await close_mcp_servers(self)
            sys.stdout.flush()
            if self._terminated:  # past the stdout proxy, which `_exit` would not flush
                os.write(2, b"yiem: terminated\n")
            os._exit(EXIT_TERMINATED if self._terminated else 0)
        from yiemagent.cli.chat._mcp_servers import close_mcp_servers

        await close_mcp_servers(self)
        await self.setup.close()


class _ReflowAwareApplication(Application[int]):
    """The chat's prompt_toolkit application, drawn by a `_ReflowAwareRenderer`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.renderer = _ReflowAwareRenderer(
            self._merged_style,
            self.output,
            full_screen=self.full_screen,
            mouse_support=self.mouse_support,
            cpr_not_supported_callback=self.cpr_not_supported_callback,
        )


class _ReflowAwareRenderer(Renderer):
    """prompt_toolkit's renderer, which erases what it drew also after the terminal
    narrowed. A terminal that narrows rewraps each row drawn at the old width into several
    (tmux, VTE, iTerm2, kitty, Windows Terminal do), while prompt_toolkit moves up only the
    rows it drew before erasing, which leaves the rest above the redrawn lines (a second
    "working" line). So before each erase and each drawing (a frame drawn after the
    terminal narrowed and before its SIGWINCH is handled erases too), the rows the terminal
    now shows are counted from the last drawn screen (a terminal that does not rewrap
    instead loses as many lines of the output above from view, which is still in the
    session and its scrollback)."""

    def render(self, app: Application[Any], layout: Layout, is_done: bool = False) -> None:
        self._count_rewrapped_rows()
        super().render(app, layout, is_done)

    def erase(self, leave_alternate_screen: bool = True) -> None:
        self._count_rewrapped_rows()
        super().erase(leave_alternate_screen)

    def _count_rewrapped_rows(self) -> None:
        """Move the cursor position kept from the last drawing to where the terminal now
        shows it, when it narrowed since; once: the drawing or erase that follows forgets
        the old width."""
        screen, size, cursor = self._last_screen, self._last_size, self._cursor_pos
        columns = self.output.get_size().columns
        if screen is None or size is None or not 0 < columns < size.columns:
            return
        rows = sum(
            _rows_at(_drawn_width(screen.data_buffer.get(y, {})), columns) for y in range(cursor.y)
        )
        self._cursor_pos = Point(x=cursor.x % columns, y=rows + cursor.x // columns)


def _drawn_width(row: Mapping[int, Any]) -> int:
    """The columns a drawn screen row fills: up to its last cell that is not a blank (as
    prompt_toolkit writes it: trailing blanks are not written)."""
    return max((x + max(1, cell.width) for x, cell in row.items() if cell.char != " "), default=0)


def _rows_at(width: int, columns: int) -> int:
    """The terminal rows a line `width` columns wide takes at `columns` columns."""
    return max(1, -(-width // columns))


class _PaneConsole(Console):
    """The console that prints above the input line. Text wraps at spaces to the
    terminal's width (the terminal's own wrapping cuts words in two: a notice, a /help
    line, a long result). It writes to prompt_toolkit's stdout proxy, which has no size,
    so the terminal's is read at each print (the window may have been resized). Code
    (`Syntax`) is printed with `soft_wrap=True`: rich would crop its long lines."""

    @property
    def size(self) -> ConsoleDimensions:
        return ConsoleDimensions(_terminal_columns(), super().size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:  # as rich's own
        self._width, self._height = new_size


def _terminal_columns() -> int:
    """The real terminal's width (not `$COLUMNS`, which a parent process may have left)."""
    for stream in (sys.__stdout__, sys.__stderr__):
        if stream is None:
            continue
        try:
            return os.get_terminal_size(stream.fileno()).columns or 80
        except (AttributeError, OSError, ValueError):
            continue
    return 80


def run_chat(setup: ChatSetup) -> int:
    """Run a chat to its end on a new event loop; returns the exit status."""

    async def main() -> int:
        return await ChatApp(setup).run()

    started = time.perf_counter()
    code = asyncio.run(main())
    logger.debug("chat ran for %.1f s", time.perf_counter() - started)
    if code == EXIT_TERMINATED:
        raise Terminated
    return code
