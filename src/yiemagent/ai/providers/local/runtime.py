"""The in-process llama.cpp runtime (`xllamacpp`): one loaded model per process and model
file, shared by every call (DESIGN §7, docs/local-model.md "The runtime").

`xllamacpp.Server` loads the model and always opens llama.cpp's HTTP listener; we bind it to
127.0.0.1 and protect it with a random API key nobody knows, so only in-process calls reach
the model. Loading blocks (1-6 s) and must run on a worker thread (`get_runtime` does that).
Generation (`LocalRuntime.chat`) blocks too; the provider runs it on a worker thread and
receives the OpenAI chunk dicts through a callback on that thread.

Several sessions at once: the model has `$YIEMAGENT_LOCAL_SLOTS` parallel slots
(llama.cpp's `n_parallel`, continuous batching): concurrent requests are decoded together,
one batch per step, instead of queueing behind each other. Each slot has its own context of
`$YIEMAGENT_LOCAL_N_CTX` tokens and its own KV cache; llama.cpp gives a request the idle slot
whose cached prompt shares the most with it, so a session's next turn finds its own prefix
while other sessions use the other slots.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from yiemagent.ai.providers.local.weights import LocalModelSpec, Progress, ensure_model_file
from yiemagent.errors import ProviderError, install_hint

__all__ = [
    "RUNTIME_REQUIREMENT",
    "SLOTS_ENV",
    "THREADS_ENV",
    "ChatRuntime",
    "LocalRuntime",
    "get_runtime",
    "load_runtime",
    "loaded_runtime",
    "thread_count",
    "unload_all",
    "usable_cpus",
]

logger = logging.getLogger(__name__)


RUNTIME_REQUIREMENT = "xllamacpp==2026.10.11549"
"""The runtime the `local` extra pins (pyproject.toml), as `yiem models install` asks pip."""

N_CTX_ENV = "YIEMAGENT_LOCAL_N_CTX"
N_CTX = 8192
"""Context tokens per slot (one request's prompt and reply) unless `$YIEMAGENT_LOCAL_N_CTX`
says otherwise. The KV cache costs ~12 KB per token on the 0.5B model, ~28 KB on the 1.5B,
for every slot."""

SLOTS_ENV = "YIEMAGENT_LOCAL_SLOTS"
SLOTS = 4
"""Requests one loaded model decodes at once unless `$YIEMAGENT_LOCAL_SLOTS` says otherwise
(1: one after another). Each slot holds `N_CTX` tokens of KV cache (4 × 8192 × 12 KB ≈ 384 MB
on the 0.5B model)."""

N_BATCH = 512
"""Prompt tokens llama.cpp reads per step: its micro-batch (`n_ubatch`, 512 by default), so
the arithmetic is the same as with the default 2048, but a request with `return_progress`
gets a progress chunk every 512 tokens read (the provider's keep-alive)."""

ChunkCallback = Callable[[dict[str, Any]], bool]
"""Receives each streamed chunk on the generating thread; returns True to stop generation."""


class ChatRuntime(Protocol):
    """What generates a reply: the in-process `LocalRuntime`, or a llama.cpp-compatible HTTP
    server (`ServerRuntime`)."""

    def chat(self, request: dict[str, Any], on_chunk: ChunkCallback | None = None) -> Any:
        """Run one chat completion, blocking: chunk dicts go to `on_chunk` (True from it
        stops generation); returns the response dict, or `{"error": ...}`."""
        ...


@dataclass(slots=True)
class LocalRuntime:
    """A loaded embedded model. `chat` may be called from any thread; concurrent requests are
    decoded together in llama.cpp's parallel slots (`slots` of them; more wait for a free
    one)."""

    spec: LocalModelSpec
    path: Path
    server: Any
    """The `xllamacpp.Server`."""
    load_s: float
    """Seconds the model took to load (assembly excluded)."""
    slots: int = 1
    """Requests decoded at once (llama.cpp's `n_parallel`)."""
    n_ctx: int = N_CTX
    """Context tokens of each slot."""

    def chat(self, request: dict[str, Any], on_chunk: ChunkCallback | None = None) -> Any:
        """Run one chat completion, blocking. With `on_chunk`, `request["stream"]` must be
        true and chunks go to `on_chunk`; returns the response dict (non-streaming) or
        whatever the runtime returns after the stream."""
        if on_chunk is None:
            return self.server.handle_chat_completions(request)
        return self.server.handle_chat_completions(request, on_chunk)


_runtimes: dict[str, LocalRuntime] = {}
_lock = threading.Lock()


THREADS_ENV = "YIEMAGENT_LOCAL_THREADS"
MAX_THREADS = 8

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")
"""cgroup v2's CPU quota ("max 100000" or "200000 100000": quota and period, µs)."""


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity set, capped by a cgroup v2 quota (a
    container given two CPUs' worth of time sees every host CPU in `os.cpu_count()`)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        count = os.cpu_count() or 1
    try:
        quota, period = CGROUP_CPU_MAX.read_text().split()[:2]
        if quota != "max":
            count = min(count, max(1, -(-int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, count)


def thread_count() -> int:
    """llama.cpp threads for a model this process loads: `$YIEMAGENT_LOCAL_THREADS`, else one
    fewer than the usable CPUs (at least 1, at most 8).

    Why one core is left free: llama.cpp's threads meet at a barrier after every step of
    the graph, so when any other process runs on a core (a test suite, a build, a second
    model), every step waits for the descheduled thread: on 2 cores with one busy process
    beside it, two threads were 15× slower than one (`bench/local_threads.py`,
    docs/local-model.md "Threads"). The count does not follow the machine's load: llama.cpp
    sums in another order with another thread count, so greedy answers would change with
    whatever else ran when the model loaded.

    Raises ProviderError when the variable is set to anything but a positive whole number."""
    raw = os.environ.get(THREADS_ENV, "")
    if raw.strip():
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ProviderError(
                f"${THREADS_ENV} must be a whole number of threads ≥ 1, not {raw!r}"
            )
        return value
    return max(1, min(MAX_THREADS, usable_cpus() - 1))


def _n_ctx() -> int:
    raw = os.environ.get(N_CTX_ENV, "")
    try:
        value = int(raw) if raw else N_CTX
    except ValueError:
        raise ProviderError(f"${N_CTX_ENV} must be a whole number of tokens, not {raw!r}") from None
    if value < 512:
        raise ProviderError(f"${N_CTX_ENV} must be at least 512 tokens, not {value}")
    return value


def _slots() -> int:
    raw = os.environ.get(SLOTS_ENV, "")
    try:
        value = int(raw) if raw else SLOTS
    except ValueError:
        raise ProviderError(f"${SLOTS_ENV} must be a whole number of slots, not {raw!r}") from None
    if not 1 <= value <= 64:
        raise ProviderError(f"${SLOTS_ENV} must be between 1 and 64, not {value}")
    return value


def _import_xllamacpp() -> Any:
    try:
        import xllamacpp
    except ImportError:
        hint = install_hint("local")
        raise ProviderError(f"the embedded model needs the 'local' extra: {hint}") from None
    return xllamacpp


def loaded_runtime(spec: LocalModelSpec) -> LocalRuntime | None:
    """The runtime of `spec` if it is already loaded in this process."""
    return _runtimes.get(spec.id)


def load_runtime(spec: LocalModelSpec, *, progress: Progress | None = None) -> LocalRuntime:
    """Load `spec` (assembling and verifying its file first) or return the loaded runtime.

    Blocking and thread-safe: concurrent callers wait for one load.

    Args:
        spec: The embedded model.
        progress: Called with (done bytes, total bytes) while the file is assembled.

    Raises:
        ProviderError: the `local` extra or the model's packages are missing, the file fails
            its hash check, or llama.cpp cannot load it.
    """
    runtime = _runtimes.get(spec.id)
    if runtime is not None:
        return runtime
    with _lock:
        runtime = _runtimes.get(spec.id)
        if runtime is not None:
            return runtime
        xllamacpp = _import_xllamacpp()
        path = ensure_model_file(spec, progress=progress)
        started = time.perf_counter()
        params = xllamacpp.CommonParams()
        params.model.path = str(path)
        n_ctx, slots = _n_ctx(), _slots()
        # Without a unified KV cache llama.cpp splits n_ctx evenly: each slot gets n_ctx.
        params.n_ctx = n_ctx * slots
        params.n_parallel = slots
        params.kv_unified = False
        params.cont_batching = True
        params.n_batch = N_BATCH
        threads = thread_count()
        params.cpuparams.n_threads = threads
        params.cpuparams_batch.n_threads = threads
        # llama.cpp always listens; keep it local and locked with a key nobody knows.
        params.hostnames = ["127.0.0.1"]
        params.port = 0
        params.api_keys = [secrets.token_urlsafe(32)]
        params.ui = False
        params.verbosity = -1
        try:
            server = xllamacpp.Server(params)
        except Exception as exc:
            raise ProviderError(f"local model {spec.id!r} failed to load: {exc}") from exc
        load_s = time.perf_counter() - started
        logger.info(
            "loaded %s in %.2f s from %s (%d slots of %d tokens)",
            spec.name,
            load_s,
            path,
            slots,
            n_ctx,
        )
        runtime = LocalRuntime(
            spec=spec, path=path, server=server, load_s=load_s, slots=slots, n_ctx=n_ctx
        )
        _runtimes[spec.id] = runtime
        return runtime


async def get_runtime(spec: LocalModelSpec) -> LocalRuntime:
    """The loaded runtime of `spec`, loading it on a worker thread the first time."""
    runtime = _runtimes.get(spec.id)
    if runtime is not None:
        return runtime
    return await asyncio.to_thread(load_runtime, spec)


@atexit.register
def unload_all() -> None:
    """Stop every loaded runtime (joins llama.cpp's threads; also run at interpreter exit)."""
    with _lock:
        runtimes = list(_runtimes.values())
        _runtimes.clear()
    for runtime in runtimes:
        runtime.server = None
