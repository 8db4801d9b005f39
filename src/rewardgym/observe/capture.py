"""The raw model-call capture: one JSON line per model call, in ``<dir>/<rollout id>.capture.jsonl``.

Contract (NeMo Gym 0.7.0's capture, docs/reference/health_check.md §1.1–1.2):

* :func:`rollout_id_of`: the correlation key of a row — ``_ng_rollout_id`` when present, else
  ``"<task>-<rollout>"``, with ``-a<n>`` when ``_ng_attempt_index`` > 0; an id must match
  :data:`ROLLOUT_ID_PATTERN` (it is a path segment and a file name), else ``ValueError``.
* :class:`CaptureStore` appends one line per call under an exclusive ``flock``, then ``fsync``; a write
  that fails leaves ``<rollout id>.capture.incomplete`` (the collector reports the gap) and never raises
  into the model call. :meth:`CaptureStore.read` returns the parsed lines and the count of unreadable ones.
* :func:`call_line` builds a line: ``model_call_id`` (uuid4 hex), ``dialect`` (``responses`` / ``chat``),
  ``model_ref``, ``started_at`` / ``completed_at`` (epoch s), ``latency_ms``, ``latency_ttft_ms`` (2
  decimals), ``status_code``, ``error_category``, ``request``, ``response`` (parsed JSON or null) and
  ``client_session_id`` when the caller sent one ``X-Session-Id``.
* Bounded: a body larger than :data:`BODY_LIMIT` bytes is stored as null (the line gets
  ``capture_truncated``), so a line is at most about 2 × BODY_LIMIT; a rollout's file has one line per
  model call of its episode (bounded by the agent's ``max_steps`` / ``step_limit``).
* Secret-free: only the request body the agent sent to the model server and the body the model server
  answered are kept — never a header (the upstream's ``Authorization`` is built after this point and is
  not in either body).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import orjson

ROLLOUT_PREFIX: Final = "ng-rollout"
"""Model calls sent to ``/ng-rollout/<rollout id>/v1/...`` are captured under that id."""
ROLLOUT_ID_PATTERN: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
CAPTURE_SUFFIX: Final = ".capture.jsonl"
INCOMPLETE_SUFFIX: Final = ".capture.incomplete"
BODY_LIMIT: Final = 16 * 1024 * 1024
"""Largest request or response body (bytes) a capture line keeps."""


def rollout_id_of(row: Mapping[str, Any]) -> str | None:
    """The rollout id of a run row (module doc); ``None`` without the indices."""
    explicit = row.get("_ng_rollout_id")
    if explicit is not None:
        if not (isinstance(explicit, str) and ROLLOUT_ID_PATTERN.match(explicit)):
            raise ValueError(
                "_ng_rollout_id must be a string of letters, digits, dots, dashes or underscores "
                f"starting with a letter or digit; got {explicit!r}"
            )
        rid = explicit
    else:
        task, rollout = row.get("_ng_task_index"), row.get("_ng_rollout_index")
        if task is None or rollout is None:
            return None
        rid = f"{task}-{rollout}"
    attempt = row.get("_ng_attempt_index")
    if isinstance(attempt, int) and attempt > 0:
        rid = f"{rid}-a{attempt}"
    return rid


def status_category(status: int) -> str | None:
    """The ``error_category`` of an HTTP status (None below 400)."""
    if status < 400:
        return None
    if status in (408, 504):
        return "timeout"
    if status == 429:
        return "rate_limit"
    if status in (401, 403):
        return "auth"
    if status == 404:
        return "not_found"
    return "client_error" if status < 500 else "upstream_error"


def _sse_payloads(raw: bytes) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    for block in re.split(rb"\r?\n\r?\n", raw):
        data = [line[5:].lstrip() for line in block.splitlines() if line.startswith(b"data:")]
        if not data or data == [b"[DONE]"]:
            continue
        try:
            parsed = orjson.loads(b"\n".join(data))
        except orjson.JSONDecodeError:
            continue
        if isinstance(parsed, dict):
            events.append(parsed)
    return events


def _chat_from_chunks(events: list[dict[str, Any]]) -> dict[str, Any] | None:
    content: list[str] = []
    reasoning: list[str] = []
    tools: dict[int, dict[str, Any]] = {}
    out: dict[str, Any] = {"object": "chat.completion"}
    finish = None
    seen = False
    for chunk in events:
        for key in ("id", "model", "usage"):
            if chunk.get(key):
                out[key] = chunk[key]
        for choice in chunk.get("choices") or ():
            seen = True
            delta = choice.get("delta") or {}
            content.append(delta.get("content") or "")
            reasoning.append(delta.get("reasoning_content") or delta.get("reasoning") or "")
            for call in delta.get("tool_calls") or ():
                slot = tools.setdefault(
                    call.get("index", 0),
                    {"id": None, "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["function"]["name"] = function.get("name") or slot["function"]["name"]
                slot["function"]["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if not seen:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if "".join(reasoning):
        message["reasoning_content"] = "".join(reasoning)
    if tools:
        message["tool_calls"] = [tools[i] for i in sorted(tools)]
    out["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return out


def streamed_response(raw: bytes, dialect: str) -> tuple[dict[str, Any] | None, str | None]:
    """The final response object of an SSE body and the stream's error category (``incomplete`` for a
    ``response.incomplete`` end, ``upstream_error`` for an error end, ``stream_truncated`` without an end)."""
    events = _sse_payloads(raw)
    if dialect == "chat":
        if any(e.get("error") is not None for e in events):
            return _chat_from_chunks(events), "upstream_error"
        ended = b"data: [DONE]" in raw
        return _chat_from_chunks(events), None if ended else "stream_truncated"
    for event in reversed(events):
        kind = event.get("type")
        if kind in ("response.completed", "response.incomplete", "response.failed", "error"):
            response = event.get("response") if isinstance(event.get("response"), dict) else None
            category = {"response.completed": None, "response.incomplete": "incomplete"}.get(
                kind, "upstream_error"
            )
            return response, category
    return None, "stream_truncated"


def _body(raw: bytes) -> tuple[Any, bool]:
    if len(raw) > BODY_LIMIT:
        return None, True
    try:
        return orjson.loads(raw), False
    except orjson.JSONDecodeError:
        return None, False


def call_line(
    *,
    dialect: str,
    model_name: str,
    started: float,
    started_clock: float,
    status: int | None,
    request: bytes,
    response: bytes | None,
    streamed: bool,
    error_category: str | None = None,
    session_id: str | None = None,
) -> bytes:
    """One capture line (module doc); ``response`` None when the call raised (``error_category`` says how)."""
    elapsed = round((time.perf_counter() - started_clock) * 1000.0, 2)
    parsed_request, cut = _body(request)
    parsed_response: Any = None
    if response is not None:
        if streamed and len(response) <= BODY_LIMIT:
            parsed_response, stream_category = streamed_response(response, dialect)
            error_category = error_category or (stream_category if (status or 0) < 400 else None)
        else:
            parsed_response, over = _body(response)
            cut = cut or over
    error_category = error_category or (status_category(status) if status is not None else None)
    ok = status is not None and status < 400
    if response is not None and parsed_response is None and ok and error_category is None and not cut:
        error_category = "capture_parse_error"
    line: dict[str, Any] = {
        "model_call_id": uuid.uuid4().hex,
        "dialect": dialect,
        "model_ref": {"type": "responses_api_models", "name": model_name},
        "started_at": started,
        "completed_at": time.time(),
        "latency_ms": elapsed,
        "latency_ttft_ms": elapsed,
        "status_code": status,
        "error_category": error_category,
        "request": parsed_request if isinstance(parsed_request, dict) else None,
        "response": parsed_response if isinstance(parsed_response, dict) else None,
    }
    if session_id is not None:
        line["client_session_id"] = session_id
    if cut:
        line["capture_truncated"] = True
    return orjson.dumps(line) + b"\n"


class CaptureStore:
    """The capture files of one directory (module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, rollout_id: str) -> Path:
        return self.root / f"{rollout_id}{CAPTURE_SUFFIX}"

    def marker(self, rollout_id: str) -> Path:
        return self.root / f"{rollout_id}{INCOMPLETE_SUFFIX}"

    def append(self, rollout_id: str, line: bytes) -> bool:
        """Append ``line`` durably (flock, write, fsync); on failure leave the marker and return False."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path(rollout_id), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)  # closing releases the lock
            return True
        except OSError:
            with contextlib.suppress(OSError):
                self.marker(rollout_id).touch()
            return False

    def read(self, rollout_id: str) -> tuple[list[dict[str, Any]] | None, int, bool]:
        """(the parsed lines — None when the file cannot be read —, unreadable lines, incomplete marker)."""
        incomplete = self.marker(rollout_id).exists()
        try:
            data = self.path(rollout_id).read_bytes()
        except FileNotFoundError:
            return [], 0, incomplete
        except OSError:
            return None, 0, incomplete
        lines: list[dict[str, Any]] = []
        bad = 0
        for raw in data.splitlines():
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError:
                bad += 1
                continue
            if isinstance(value, dict):
                lines.append(value)
            else:
                bad += 1
        return lines, bad, incomplete
