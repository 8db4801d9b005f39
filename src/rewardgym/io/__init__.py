"""Streaming, crash-safe JSONL and whole-file I/O, and the output-safety rules every writer follows."""

from rewardgym.io.jsonl import (
    JsonlAppender,
    TornLine,
    atomic_write_jsonl,
    iter_jsonl,
    parse_line,
    read_jsonl,
    read_jsonl_tolerant,
    repair_torn_tail,
)
from rewardgym.io.outputs import atomic_write_bytes, atomic_writer, guard_outputs, remove_stale

__all__ = [
    "JsonlAppender",
    "TornLine",
    "atomic_write_bytes",
    "atomic_write_jsonl",
    "atomic_writer",
    "guard_outputs",
    "iter_jsonl",
    "parse_line",
    "read_jsonl",
    "read_jsonl_tolerant",
    "remove_stale",
    "repair_torn_tail",
]
