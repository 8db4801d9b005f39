"""Structured (JSON lines) logging of one server instance.

Contract:
- :func:`server_logger` returns the logger ``rewardgym.server.<name>`` writing one JSON object per line
  (``ts``, ``level``, ``server``, ``msg``, and ``exc`` with the formatted exception when there is one) to
  ``<log_dir>/<name>.log`` — or to stderr when ``log_dir`` is ``None``. Calling it again for the same name
  returns the same, already configured logger.
- Every message goes through :func:`rewardgym.config.secrets.redact_text` before it is written: a secret
  that slipped into an exception message is masked in the log too.
- :func:`attach_library_loggers` routes uvicorn's own loggers to the same handler (used by the child
  process entry point, where one process runs one server).
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

import orjson

from rewardgym.config.secrets import redact_text

_CONFIGURED: dict[str, tuple[Path | None, logging.Handler]] = {}


class JsonFormatter(logging.Formatter):
    """One JSON object per record; secrets redacted."""

    def __init__(self, server: str) -> None:
        super().__init__()
        self.server = server

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "server": self.server,
            "logger": record.name,
            "msg": redact_text(record.getMessage()),
        }
        if record.exc_info:
            entry["exc"] = redact_text(self.formatException(record.exc_info))
        return orjson.dumps(entry).decode()


def log_path(log_dir: Path, name: str) -> Path:
    return log_dir / f"{name}.log"


def server_logger(name: str, log_dir: Path | None, level: str = "INFO") -> logging.Logger:
    """The JSON logger of server instance ``name`` (configured once per process, name and directory)."""
    logger = logging.getLogger(f"rewardgym.server.{name}")
    previous = _CONFIGURED.get(name)
    if previous is not None:
        if previous[0] == log_dir:
            return logger
        logger.removeHandler(previous[1])
        previous[1].close()
    handler: logging.Handler
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_path(log_dir, name), mode="a", encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(name))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    _CONFIGURED[name] = (log_dir, handler)
    return logger


def attach_library_loggers(name: str, level: str = "INFO") -> None:
    """Send uvicorn's log records to the JSON handler of server ``name`` (one server per process)."""
    entry = _CONFIGURED.get(name)
    if entry is None:
        return
    handler = entry[1]
    for lib in ("uvicorn", "uvicorn.error", "uvicorn.access", "asyncio"):
        lib_logger = logging.getLogger(lib)
        lib_logger.handlers = [handler]
        lib_logger.setLevel(level)
        lib_logger.propagate = False
