"""Testing helpers (DESIGN §19): recorded model calls for offline tests.

Public: `record(model, path)` (a `RecordingModel`, whose calls are appended to a JSONL
cassette), `replay(path, model=None)` (a `ReplayModel`, answering from the cassette,
offline, in order), `CassetteMismatch` (a request that differs from the recording, with the
difference), `normalise_request` (what a cassette keeps of a request), and the pytest plugin
`yiemagent.testing.pytest_plugin` (the `yiem_cassette` fixture and `--cassette-mode
once|new|none`), registered as the `pytest11` entry point `yiemagent`. See `docs/evals.md`.
"""

from yiemagent.testing._cassette import (
    CassetteMismatch,
    RecordingModel,
    ReplayModel,
    normalise_request,
    record,
    replay,
)

__all__ = [
    "CassetteMismatch",
    "RecordingModel",
    "ReplayModel",
    "normalise_request",
    "record",
    "replay",
]

# Exceptions name this package, their public path, in tracebacks and pickles (pickle finds
# them here); classes with annotations keep their module, where `get_type_hints` reads them.
for _error in (CassetteMismatch,):
    _error.__module__ = __name__
del _error
