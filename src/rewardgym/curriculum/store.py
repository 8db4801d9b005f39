"""Where a curriculum's state survives a crash: a snapshot file and a journal beside it.

Contract:

- The **snapshot** ``<state_path>`` is an uncompressed ``.npz`` (numpy's zip of arrays): the per-task
  arrays of :mod:`rewardgym.curriculum.state` plus ``meta``, a JSON document (format version, number of
  tasks, the dataset's fingerprint, step, the sequence number of the last operation it holds, the policy's
  scalars, the pool prior's weights). It is replaced atomically (temp file, fsync, rename), so a reader
  sees the old snapshot or the new one. Zip checks every member's CRC-32 when it is read: a torn or
  altered file is refused with one :class:`~rewardgym.curriculum.errors.StateFileError` line.
- The **journal** ``<state_path>.journal`` gets one JSON line per operation *before* the call returns
  (written and flushed: a crash of the process — service or trainer — loses nothing that was answered;
  with ``fsync=True`` each line is also fsync-ed, so a power cut loses nothing either):
  ``{"seq", "op": "batch", "tasks": [...]}`` and ``{"seq", "op": "report", "task", "rewards": [...]}``.
  After each snapshot the journal is emptied; lines whose ``seq`` the snapshot already holds are skipped
  on replay (a crash between the two steps). A last line without its newline was never answered and is
  dropped; any other unreadable line is a :class:`StateFileError` naming the file and line.
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import numpy.typing as npt

from rewardgym.curriculum.errors import StateFileError
from rewardgym.io.outputs import atomic_writer

FORMAT = "rewardgym-curriculum/1"


@dataclass
class Snapshot:
    meta: dict[str, Any]
    arrays: dict[str, npt.NDArray[Any]]


def journal_path(state_path: Path) -> Path:
    return state_path.with_name(state_path.name + ".journal")


def write_snapshot(path: Path, meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> None:
    """Replace ``path`` atomically with ``meta`` and ``arrays``."""
    payload = {**arrays, "meta": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)}
    with atomic_writer(path) as handle:
        np.savez(handle, **payload)  # type: ignore[arg-type]


def read_snapshot(path: Path) -> Snapshot:
    """The snapshot at ``path`` (:class:`StateFileError` when torn, foreign or of another version)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (zipfile.BadZipFile, ValueError, EOFError, KeyError, OSError, zlib.error) as exc:
        raise StateFileError(
            f"{path}: not a readable curriculum state file (torn or altered: {exc}); "
            "move it away to start from the profile again"
        ) from None
    raw = arrays.pop("meta", None)
    try:
        meta = json.loads(bytes(raw)) if raw is not None else None
    except (ValueError, TypeError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise StateFileError(f"{path}: not a {FORMAT} state file (no valid 'meta' member)")
    return Snapshot(meta, arrays)


@dataclass
class JournalEntry:
    seq: int
    op: str
    body: dict[str, Any]


def read_journal(path: Path) -> tuple[list[JournalEntry], int]:
    """The journal's entries and the byte length of its whole lines (a torn last line is left out)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], 0
    except OSError as exc:
        raise StateFileError(f"{path}: cannot read the journal: {exc.strerror}") from None
    end = data.rfind(b"\n") + 1  # the rest was being written when the process died: never answered
    entries = []
    for number, line in enumerate(data[:end].splitlines(), start=1):
        try:
            body = json.loads(line)
            entry = JournalEntry(int(body["seq"]), str(body["op"]), body)
        except (ValueError, KeyError, TypeError):
            raise StateFileError(
                f"{path}:{number}: unreadable journal line (the file was altered?)"
            ) from None
        if entry.op not in ("batch", "report"):
            raise StateFileError(f"{path}:{number}: unknown journal operation {entry.op!r}")
        entries.append(entry)
    return entries, end


class Journal:
    """The append side of the journal (see module doc)."""

    def __init__(self, path: Path, valid_bytes: int, *, fsync: bool) -> None:
        self.path = path
        self.fsync = fsync
        self._handle: IO[bytes] = open(path, "ab")  # noqa: SIM115  (kept open for the curriculum's life)
        if self._handle.tell() != valid_bytes:
            self._handle.truncate(valid_bytes)  # drop a torn last line before appending after it
            self._handle.seek(valid_bytes)

    def append(self, entry: dict[str, Any]) -> None:
        self._handle.write(json.dumps(entry, separators=(",", ":")).encode() + b"\n")
        self._handle.flush()
        if self.fsync:
            os.fsync(self._handle.fileno())

    def clear(self) -> None:
        self._handle.truncate(0)
        self._handle.seek(0)
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


def entries_after(entries: list[JournalEntry], seq: int) -> Iterator[JournalEntry]:
    return (entry for entry in entries if entry.seq > seq)
