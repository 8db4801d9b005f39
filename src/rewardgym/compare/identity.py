"""What makes two runs' tasks the same task: a key per input row (pure; no I/O).

Contract:

- **by content** (default): the row without its ``_ng_*`` keys (task / rollout index, environment server…)
  and without the per-rollout seed ``--num-repeats-add-seed`` puts into
  ``responses_create_params.metadata.extra_body`` (an ``extra_body`` or ``metadata`` left empty by that is
  dropped; a JSON ``extra_body`` is compared by value, not by its spelling). Paths given as ``ignore``
  (dotted, e.g. ``agent_ref`` or ``responses_create_params.temperature``) are dropped too. The key is a
  128-bit BLAKE2b digest of the canonical JSON (sorted keys), so two rows have the same key exactly when
  they are equal as JSON after these removals;
- **by field** (``--task-key uuid``): the value at a dotted path of the row (``_ng_*`` keys included, so
  ``--task-key _ng_task_index`` matches by index); a row without it is a :class:`DataError` naming
  ``file:line`` and the option;
- :func:`preview` is the task's last user message (or string input), shortened, for people to read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import orjson

from rewardgym.errors import DataError

PREVIEW_CHARS = 160
_MISSING = object()


def _without_seed(params: dict[str, Any]) -> dict[str, Any]:
    meta = params.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("extra_body"), str):
        return params
    try:
        extra = orjson.loads(meta["extra_body"])
    except orjson.JSONDecodeError:
        return params  # not JSON: compared as the text it is
    if not isinstance(extra, dict):
        return params
    extra.pop("seed", None)
    meta = dict(meta)
    if extra:
        meta["extra_body"] = orjson.dumps(extra, option=orjson.OPT_SORT_KEYS).decode()
    else:
        del meta["extra_body"]
    params = dict(params)
    if meta:
        params["metadata"] = meta
    else:
        del params["metadata"]
    return params


def _drop(row: dict[str, Any], path: Sequence[str]) -> dict[str, Any]:
    """``row`` without the value at ``path`` (copies only the dicts on the way)."""
    head, rest = path[0], path[1:]
    if head not in row:
        return row
    out = dict(row)
    if not rest:
        del out[head]
    elif isinstance(out[head], dict):
        out[head] = _drop(out[head], rest)
    return out


def canonical(row: dict[str, Any], ignore: Sequence[Sequence[str]] = ()) -> dict[str, Any]:
    """The content that identifies a task (see module doc)."""
    out = {k: v for k, v in row.items() if not k.startswith("_ng_")}
    params = out.get("responses_create_params")
    if isinstance(params, dict):
        out["responses_create_params"] = _without_seed(params)
    for path in ignore:
        if path:
            out = _drop(out, path)
    return out


def content_key(row: dict[str, Any], ignore: Sequence[Sequence[str]] = ()) -> bytes:
    """The 16-byte content key of a row."""
    text = orjson.dumps(canonical(row, ignore), option=orjson.OPT_SORT_KEYS)
    return hashlib.blake2b(text, digest_size=16).digest()


def field_key(row: dict[str, Any], path: Sequence[str], where: str) -> tuple[bytes, str]:
    """``(16-byte key, shown value)`` of the field at ``path``; a row without it is a DataError."""
    value: Any = row
    for part in path:
        value = value.get(part, _MISSING) if isinstance(value, dict) else _MISSING
        if value is _MISSING:
            break
    if value is _MISSING or value is None:
        raise DataError(
            f"{where}: the row has no field '{'.'.join(path)}' (--task-key); every row of every run "
            "needs it, or match by content (leave --task-key out)"
        )
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    shown = value if isinstance(value, str) else text.decode()
    return hashlib.blake2b(text, digest_size=16).digest(), shown[:PREVIEW_CHARS]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", "")) for part in content if isinstance(part, dict) and "text" in part
        )
    return ""


def preview(row: dict[str, Any]) -> str:
    """The task's prompt, shortened: the string input, or the last user message's text."""
    params = row.get("responses_create_params")
    source = params.get("input") if isinstance(params, dict) else None
    text = ""
    if isinstance(source, str):
        text = source
    elif isinstance(source, list):
        for item in reversed(source):
            if isinstance(item, dict) and item.get("role") == "user":
                text = _content_text(item.get("content"))
                break
    text = " ".join(text.split())
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"
