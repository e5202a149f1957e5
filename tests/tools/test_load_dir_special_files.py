"""A tool folder holding a named pipe called `*.py` (R-4.13): reading it waited for a
writer until the load's timeout (30 s by default; each `yiem run`, chat and serve start
paid it), said "does it block at import", and left a thread blocked on it for ever. It is
a reported failure at once, naming what the file is, and the folder's other tools load."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from yiemagent import ToolLoadError, ToolStore

from .test_load_dir import good


def test_a_named_pipe_is_a_failure_saying_so_and_no_thread_waits_on_it(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(good("one", "1"))
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "link.py").symlink_to(tmp_path / "pipe.py")
    store = ToolStore()
    with pytest.raises(ToolLoadError) as info:
        store.load_dir(tmp_path, timeout_s=5)
    said = {Path(path).name: why for path, why in info.value.failures}
    assert said == {
        "link.py": "a named pipe, not a file of Python code",
        "pipe.py": "a named pipe, not a file of Python code",
    }
    assert list(store.tools) == ["one", "listTools"]
    assert not [t for t in threading.enumerate() if t.name.startswith("yiem-load-")]
