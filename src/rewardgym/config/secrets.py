"""Secret redaction: the one place that decides what is a secret and how it is masked.

Contract:

* :func:`is_secret_key` says whether a config key holds a secret (``*api_key``, ``*token``, ``*secret``,
  ``*password``, ``authorization``; case-insensitive, ``-`` treated as ``_``).
* :func:`redact` returns a deep copy of a dict / list / tuple / OmegaConf container in which the value of
  every secret key is ``"***"`` (``None`` and ``""`` are kept, so "not set" stays visible) and every other
  string has known secret values masked.
* :func:`redact_text` masks, inside free text, every secret *value* registered in this process (the config
  loader registers each one it sees) plus common credential shapes (``sk-…``, ``Bearer …``, ``hf_…``,
  ``nvapi-…``, ``api_key=…``).

Every printer and logger (CLI errors, ``gym config show``, head server, log files, fingerprints) must pass
what it emits through these functions. This module imports nothing heavy (OmegaConf only on demand).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from typing import Any, Final

MASK: Final = "***"
"""What a secret value is replaced with."""

MIN_SECRET_LENGTH: Final = 6
"""Registered values shorter than this are not searched for in free text (too likely to be common words);
structured redaction by key still masks them."""

_SECRET_SUFFIXES: Final = ("api_key", "apikey", "token", "secret", "password")
_SECRET_NAMES: Final = frozenset({"auth_token", "hf_token", "authorization", "x_api_key", "passwd"})

_PATTERNS: Final = (
    # Bearer tokens in headers or logs. Like the next pattern, it only masks a credential-looking value
    # (8+ characters with a digit) so that prose such as "openai_api_key: cannot resolve …" stays readable.
    (re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}"), r"\1" + MASK),
    # key=value / key: value / "key": "value" where the key names a secret.
    (
        re.compile(
            r"(?i)([\w.-]*(?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
            r"(?=[^\s\"',}\]]*\d)([^\s\"',}\]]{8,})"
        ),
        r"\1" + MASK,
    ),
    # Well-known key shapes: OpenAI-style, Hugging Face, NVIDIA.
    (re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"), MASK),
    (re.compile(r"\bhf_[A-Za-z0-9]{10,}"), MASK),
    (re.compile(r"\bnvapi-[A-Za-z0-9_-]{10,}"), MASK),
)

_lock = threading.Lock()
_registered: set[str] = set()


def is_secret_key(key: object) -> bool:
    """True when a config key's value must never be shown (``policy_api_key``, ``hf_token``, …)."""
    if not isinstance(key, str):
        return False
    norm = key.strip().lower().replace("-", "_")
    return norm in _SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES)


def register_secret(value: object) -> None:
    """Remember a secret value so :func:`redact_text` masks it wherever it appears later."""
    if isinstance(value, str):
        value = value.strip()
        is_reference = value.startswith("${") and value.endswith("}")  # an interpolation, not a value
        if len(value) >= MIN_SECRET_LENGTH and value not in (MASK, "???") and not is_reference:
            with _lock:
                _registered.add(value)


def register_secrets_in(obj: object) -> None:
    """Register the value of every secret key found anywhere inside a plain dict/list structure."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if is_secret_key(key) and isinstance(value, str):
                register_secret(value)
            else:
                register_secrets_in(value)
    elif isinstance(obj, list | tuple):
        for item in obj:
            register_secrets_in(item)


def registered_secrets() -> frozenset[str]:
    """The secret values registered so far in this process."""
    with _lock:
        return frozenset(_registered)


def redact_text(text: str, secrets: Iterable[str] | None = None) -> str:
    """Mask registered secret values, the given ``secrets`` and common credential patterns in ``text``."""
    if not text:
        return text
    values = set(registered_secrets())
    if secrets is not None:
        values.update(s for s in secrets if isinstance(s, str) and s)
    for value in sorted(values, key=len, reverse=True):
        if value in text:
            text = text.replace(value, MASK)
    for pattern, replacement in _PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _redact_plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            key: (MASK if is_secret_key(key) and value not in (None, "") else _redact_plain(value))
            for key, value in obj.items()
        }
    if isinstance(obj, list):
        return [_redact_plain(item) for item in obj]
    if isinstance(obj, tuple):
        return tuple(_redact_plain(item) for item in obj)
    if isinstance(obj, str):
        return redact_text(obj)
    return obj


def redact(obj: Any) -> Any:
    """Deep copy of ``obj`` with secrets masked; OmegaConf containers come back as OmegaConf containers.

    For an OmegaConf container, interpolations are not resolved; a non-secret value that interpolates a
    secret key (``openai_api_key: ${policy_api_key}``) is itself under a secret key or resolves to the mask.
    """
    if type(obj).__module__.startswith("omegaconf"):
        from omegaconf import OmegaConf

        plain = OmegaConf.to_container(obj, resolve=False)
        return OmegaConf.create(_redact_plain(plain))
    return _redact_plain(obj)
