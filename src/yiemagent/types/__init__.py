"""The bottom layer: content blocks, messages, tools, contexts, outcomes, events, the loop's
configuration, `AbortSignal` and `EventStream` (DESIGN §2, §3). Imports nothing above it."""

from yiemagent.types.config import *  # noqa: F403
from yiemagent.types.config import __all__ as _config_all
from yiemagent.types.context import *  # noqa: F403
from yiemagent.types.context import __all__ as _context_all
from yiemagent.types.events import *  # noqa: F403
from yiemagent.types.events import __all__ as _events_all
from yiemagent.types.messages import *  # noqa: F403
from yiemagent.types.messages import __all__ as _messages_all
from yiemagent.types.model import *  # noqa: F403
from yiemagent.types.model import __all__ as _model_all
from yiemagent.types.signal import *  # noqa: F403
from yiemagent.types.signal import __all__ as _signal_all
from yiemagent.types.stream import *  # noqa: F403
from yiemagent.types.stream import __all__ as _stream_all
from yiemagent.types.tools import *  # noqa: F403
from yiemagent.types.tools import __all__ as _tools_all

__all__ = [
    *_config_all,
    *_context_all,
    *_events_all,
    *_messages_all,
    *_model_all,
    *_signal_all,
    *_stream_all,
    *_tools_all,
]
