"""Loading the embedded model in the background, its progress in the live view (DESIGN §15)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from yiemagent.cli.chat._host import ChatHost

__all__ = ["load_model"]


async def load_model(app: ChatHost) -> None:
    """Load the embedded model (when it is one) with its progress in the live view."""
    model = app.setup.agent.state.model or app.setup.model
    if model.api != "local":
        return
    from yiemagent.ai.providers.local.runtime import load_runtime, loaded_runtime
    from yiemagent.ai.providers.local.weights import ensure_model_file, local_spec

    spec = local_spec(model.id)
    if loaded_runtime(spec) is not None:
        return
    view = app.view
    started = time.perf_counter()

    def on_bytes(done: int, total: int) -> None:
        view.status = f"preparing {spec.name}: {done / 2**20:.0f} of {total / 2**20:.0f} MB"
        app.app.invalidate()

    try:
        view.status = f"preparing {spec.name}…"
        await asyncio.to_thread(ensure_model_file, spec, progress=on_bytes)
        view.status = f"loading {spec.name}…"
        runtime = await asyncio.to_thread(load_runtime, spec)
    except Exception as exc:
        app.say(f"error: the model did not load: {' '.join(str(exc).split())}", "red")
        return
    finally:
        view.status = ""
    elapsed = time.perf_counter() - started
    app.say(f"{spec.name} loaded in {runtime.load_s:.1f} s ({elapsed:.1f} s in all)")
