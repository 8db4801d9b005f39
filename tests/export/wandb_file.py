"""Read an offline W&B run back: the records of its ``run-<id>.wandb`` file, decoded with wandb's own
protobuf schema (``wandb.proto.wandb_internal_pb2.Record``).

The file is a LevelDB-style log: a 7-byte header (``:W&B``, a 2-byte magic, a version byte), then 32 KiB
blocks of chunks, each ``crc32c (4) | length (2, little-endian) | type (1)`` and ``length`` bytes; type 1 is
a whole record, 2 / 3 / 4 the first / middle / last piece of one; fewer than 7 bytes left in a block are
padding. wandb 0.31 ships no Python reader (its Go core writes the file), hence this small one.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import orjson
from wandb.proto import wandb_internal_pb2 as pb

_BLOCK = 32 * 1024
_HEADER = 7


def records(path: Path) -> list[Any]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", f"{path} is not a W&B run file"
    out: list[Any] = []
    pos, pending = _HEADER, b""
    while pos + _HEADER <= len(data):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos : pos + _HEADER])
        if length == 0 and kind == 0:  # zero padding up to the block's end
            pos += left
            continue
        pending += data[pos + _HEADER : pos + _HEADER + length]
        pos += _HEADER + length
        if kind in (1, 4):
            record = pb.Record()  # type: ignore[attr-defined]
            record.ParseFromString(pending)
            out.append(record)
            pending = b""
    return out


def by_kind(path: Path) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for record in records(path):
        kind = record.WhichOneof("record_type")
        out.setdefault(kind, []).append(getattr(record, kind))
    return out


def summary(path: Path) -> dict[str, Any]:
    """The run's summary: flat keys (``a/b``) → decoded value; nested keys joined with ``.``."""
    out: dict[str, Any] = {}
    for record in by_kind(path).get("summary", []):
        for item in record.update:
            key = item.key or ".".join(item.nested_key)
            out[key] = orjson.loads(item.value_json)
    return out


def config(path: Path) -> dict[str, Any]:
    run = by_kind(path)["run"][0]
    return {item.key: orjson.loads(item.value_json) for item in run.config.update}
