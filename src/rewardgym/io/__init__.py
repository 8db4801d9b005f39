"""Streaming, crash-safe JSONL and whole-file I/O."""

from rewardgym.io.jsonl import (
    JsonlAppender,
    TornLine,
    atomic_write_bytes,
    atomic_write_jsonl,
    atomic_writer,
    iter_jsonl,
    parse_line,
    read_jsonl,
    read_jsonl_tolerant,
    repair_torn_tail,
)

__all__ = [
    "JsonlAppender",
    "TornLine",
    "atomic_write_bytes",
    "atomic_write_jsonl",
    "atomic_writer",
    "iter_jsonl",
    "parse_line",
    "read_jsonl",
    "read_jsonl_tolerant",
    "repair_torn_tail",
]
