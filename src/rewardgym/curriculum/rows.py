"""The dataset's rows, read from its JSONL file on demand: 8 bytes a task in memory (a line offset).

Contract: :class:`JsonlRows` (a ``Sequence`` of dicts) checks every line once when opened (a malformed
one is a :class:`~rewardgym.errors.DataError` naming ``file:line``) and keeps each line's byte offset;
``rows[i]`` reads and parses line ``i`` again. The file must not change while the service runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np

from rewardgym.io.jsonl import parse_line


class JsonlRows(Sequence[dict[str, Any]]):
    """See module doc."""

    def __init__(self, path: Path) -> None:
        self.path = path
        offsets = []
        position = 0
        with open(path, "rb") as handle:
            for number, raw in enumerate(handle, start=1):
                parse_line(raw, path, number)
                offsets.append(position)
                position += len(raw)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self._fd = os.open(path, os.O_RDONLY)
        self._ends = np.append(self.offsets[1:], position)

    def __len__(self) -> int:
        return int(self.offsets.shape[0])

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | Sequence[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start = int(self.offsets[index])
        raw = os.pread(self._fd, int(self._ends[index]) - start, start)
        return parse_line(raw, self.path, int(index) + 1 if index >= 0 else len(self) + int(index) + 1)

    def close(self) -> None:
        os.close(self._fd)
