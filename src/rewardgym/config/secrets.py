"""Secret redaction: the one place that decides what is a secret and how it is masked.

Contract:

* :func:`is_secret_key` says whether a config key holds a secret (``*api_key``, ``*token``, ``*secret``,
  ``*password``, ``authorization``; case-insensitive, ``-`` treated as ``_``).
* :func:`redact` returns a deep copy of a dict / list / tuple / OmegaConf container in which the value of
  every secret key is ``"***"`` (``None`` and ``""`` are kept, so "not set" stays visible) and every other
  string has known secret values masked.
* :func:`redact_text` masks, inside free text, every secret *value* registered in this process (the config
  loader registers each one it sees) in every encoding it may take on the way (:func:`secret_forms`: raw,
  JSON-escaped once or twice as ``json.dumps`` / orjson write it, ``repr``, URL-encoded), plus common
  credential shapes (``sk-…``, ``Bearer …``, ``hf_…``, ``nvapi-…``, ``api_key=…``, ``scheme://user:pass@``).
* :func:`is_env_safe_key` says whether a value read from the environment (``${oc.env:…}``) may be shown
  under that key; every other environment value is treated as a secret (see the config loader).
* :func:`child_environ` is the environment our server processes get: this process's, without the variables
  that only carry a secret to the ``gym`` command itself (``REWARDGYM_MODEL_API_KEY``) and without every
  variable whose value is a registered secret (what ``${oc.env:…}`` read as one) — children receive
  their config, secrets included, on a pipe.
* :func:`mask_known_secrets` masks, in bytes about to be stored (a rollout line), the registered secret
  values in every form, and nothing else: data that merely looks like a credential is kept as it is.
* Header values are secrets: :func:`is_secret_header` is true for every header name but a short
  allow-list (:data:`PLAIN_HEADERS`: ``Accept``, ``Content-Type``, ``User-Agent`` …); :func:`redact` masks
  the value of every other key of a ``*headers`` mapping, and :func:`register_secrets_in` registers them.
* :func:`redact_argv` is a command line with every secret masked: the value after (or ``=`` of) a flag
  whose name is a secret key (``--model-api-key K``), the value of a ``++key=value`` override whose key is
  a secret or a header, and registered secrets anywhere (what Ray stores as a driver's entrypoint).
* :func:`url_credentials` finds the ``user:password@`` part of an ``http(s)://`` URL (refused in configs).

Every printer and logger (CLI errors, ``gym config show``, head server, log files, fingerprints) must pass
what it emits through these functions. This module imports nothing heavy (OmegaConf only on demand).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, Final
from urllib.parse import quote, quote_plus, urlsplit

MASK: Final = "***"
"""What a secret value is replaced with."""

MIN_SECRET_LENGTH: Final = 6
"""Registered values shorter than this are not searched for in free text (too likely to be common words);
structured redaction by key still masks them."""

_SECRET_SUFFIXES: Final = ("api_key", "apikey", "token", "secret", "password")
_SECRET_NAMES: Final = frozenset({"auth_token", "hf_token", "authorization", "x_api_key", "passwd"})

# Each pattern runs only when one of its literal cues occurs in the lower-cased text: a cheap scan that
# spares the regexes (the key=value one backtracks) on the common line that holds no credential at all.
_PATTERNS: Final = (
    # Bearer tokens in headers or logs. Like the next pattern, it only masks a credential-looking value
    # (8+ characters with a digit) so that prose such as "openai_api_key: cannot resolve …" stays readable.
    (
        re.compile(r"(?i)\b(bearer\s+)(?=[A-Za-z0-9._~+/=-]*\d)[A-Za-z0-9._~+/=-]{8,}"),
        r"\1" + MASK,
        ("bearer",),
    ),
    # key=value / key: value / "key": "value" where the key names a secret.
    (
        re.compile(
            r"(?i)([\w.-]*(?:api[_-]?key|token|secret|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
            r"(?=[^\s\"',}\]]*\d)([^\s\"',}\]]{8,})"
        ),
        r"\1" + MASK,
        ("key", "token", "secret", "passw"),
    ),
    # Well-known key shapes: OpenAI-style, Hugging Face, NVIDIA.
    (re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"), MASK, ("sk-",)),
    (re.compile(r"\bhf_[A-Za-z0-9]{10,}"), MASK, ("hf_",)),
    (re.compile(r"\bnvapi-[A-Za-z0-9_-]{10,}"), MASK, ("nvapi-",)),
    # Credentials inside a URL (scheme://user:password@host, scheme://token@host).
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@\"'<>]+@"), r"\1" + MASK + "@", ("@",)),
)

PLAIN_HEADERS: Final = frozenset(
    {"accept", "accept-encoding", "accept-language", "cache-control", "content-type", "user-agent"}
)
"""Header names whose values are shown; every other header value is a secret (``Cookie``,
``Proxy-Authorization``, ``Ocp-Apim-Subscription-Key``, ``X-Auth-…`` and names nobody listed yet)."""

SECRET_ENV_VARS: Final = ("REWARDGYM_MODEL_API_KEY",)
"""Environment variables that carry a secret to the ``gym`` command only; never passed to a child."""

_ENV_SAFE_NAMES: Final = frozenset({"host", "port", "name", "model", "url", "log_level", "domain"})
_ENV_SAFE_SUFFIXES: Final = ("_url", "_urls", "_dir", "_path", "_paths", "_host", "_port", "_name", "_model")
_UNICODE_ESCAPE = re.compile(r"\\u[0-9a-f]{4}")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")

_lock = threading.Lock()
_registered: set[str] = set()
_needles: list[tuple[str, ...]] = [()]
"""``_needles[0]``: every form of every registered value, longest first (replaced whole on registration,
read without the lock)."""


def is_secret_key(key: object) -> bool:
    """True when a config key's value must never be shown (``policy_api_key``, ``hf_token``, …)."""
    if not isinstance(key, str):
        return False
    norm = key.strip().lower().replace("-", "_")
    return norm in _SECRET_NAMES or norm.endswith(_SECRET_SUFFIXES)


def is_env_safe_key(key: object) -> bool:
    """True when a value that came from the environment may be shown under ``key`` (URLs, paths, hosts,
    ports, names, model names): every other environment value is masked like a secret."""
    if not isinstance(key, str):
        return False
    norm = key.strip().lower().replace("-", "_")
    return not is_secret_key(norm) and (norm in _ENV_SAFE_NAMES or norm.endswith(_ENV_SAFE_SUFFIXES))


def redact_argv(argv: Iterable[str]) -> list[str]:
    """``argv`` with its secrets masked (see the module docstring)."""
    out: list[str] = []
    masking = False
    for arg in argv:
        if masking:
            out.append(MASK)
            masking = False
            continue
        name, eq, _value = arg.partition("=")
        key = name.lstrip("+-").rsplit(".", 1)[-1]
        if name.startswith("--") and is_secret_key(key):
            out.append(f"{name}={MASK}" if eq else arg)
            masking = not eq
        elif (
            name.startswith("+")
            and eq
            and (is_secret_key(key) or ".headers" in name.lower() or "headers." in name.lower())
        ):
            out.append(f"{name}={MASK}")
        else:
            out.append(redact_text(arg))
    return out


def is_secret_header(name: object) -> bool:
    """Whether a header's value is a secret: every header not on :data:`PLAIN_HEADERS`."""
    return not (isinstance(name, str) and name.strip().lower().replace("_", "-") in PLAIN_HEADERS)


def _headers_key(key: object) -> bool:
    return isinstance(key, str) and key.lower().endswith("headers")


def child_environ(*, drop_secret_values: bool = True, **extra: str) -> dict[str, str]:
    """The environment of a child server process (see the module docstring), plus ``extra``;
    ``drop_secret_values=False``: without leaving out the variables that hold a registered secret."""
    import os

    secret = registered_secrets() if drop_secret_values else frozenset()
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in SECRET_ENV_VARS and value.strip() not in secret
    }
    env.update(extra)
    return env


def url_credentials(value: object) -> str | None:
    """The ``user[:password]`` part of an ``http://`` / ``https://`` URL, or ``None`` when it has none."""
    if not isinstance(value, str) or not value.lstrip().lower().startswith(("http://", "https://")):
        return None
    try:
        netloc = urlsplit(value.strip()).netloc
    except ValueError:
        return None
    userinfo, at, _host = netloc.rpartition("@")
    return userinfo if at and userinfo else None


@lru_cache(maxsize=256)
def secret_forms(value: str) -> frozenset[str]:
    """``value`` as it may appear in text written by anyone on the way: raw (and, when not ASCII, its UTF-8
    bytes decoded as Latin-1, as servers decode header values); JSON-escaped once and twice
    (``json.dumps`` with and without ``ensure_ascii``, orjson, upper-case ``\\uXXXX``, escaped ``/``), as
    ``repr`` shows it, and URL-encoded (``quote`` / ``quote_plus``, upper- or lower-case hex)."""
    forms = {value}
    if not value.isascii():  # its UTF-8 bytes read as Latin-1: how an HTTP server decodes a header value
        forms.add(value.encode("utf-8").decode("latin-1"))
    for _ in range(2):  # twice: an upstream's JSON body quoted inside our JSON error, inside a JSONL line
        for form in list(forms):
            forms.add(json.dumps(form)[1:-1])
            forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
            forms.add(_UNICODE_ESCAPE.sub(lambda m: "\\u" + m.group(0)[2:].upper(), json.dumps(form)[1:-1]))
            forms.add(json.dumps(form)[1:-1].replace("/", "\\/"))
    forms.add(repr(value)[1:-1])
    forms.add(repr(value + "'\"")[1:-4])  # the other quoting style of repr (both quotes present)
    for encoded in (quote(value, safe=""), quote(value), quote_plus(value), quote_plus(value, safe="/")):
        forms.add(encoded)
        forms.add(_PERCENT_ESCAPE.sub(lambda m: m.group(0).lower(), encoded))
    return frozenset(form for form in forms if form)


def register_secret(value: object) -> None:
    """Remember a secret value so :func:`redact_text` masks it (in every form) wherever it appears later."""
    if isinstance(value, str):
        value = value.strip()
        is_reference = value.startswith("${") and value.endswith("}")  # an interpolation, not a value
        if len(value) >= MIN_SECRET_LENGTH and value not in (MASK, "???") and not is_reference:
            with _lock:
                if value not in _registered:
                    _registered.add(value)
                    needles = {form for known in _registered for form in secret_forms(known)}
                    _needles[0] = tuple(sorted(needles, key=len, reverse=True))


def register_secrets_in(obj: object) -> None:
    """Register the value of every secret key found anywhere inside a plain dict/list structure."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if is_secret_key(key) and isinstance(value, str):
                register_secret(value)
            elif _headers_key(key) and isinstance(value, dict):
                for name, header in value.items():
                    if is_secret_header(name) and isinstance(header, str):
                        register_secret(header)
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
    needles: Iterable[str] = _needles[0]
    if secrets is not None:
        extra = {form for s in secrets if isinstance(s, str) and s for form in secret_forms(s)}
        needles = sorted(extra.union(needles), key=len, reverse=True)
    for needle in needles:
        if needle in text:
            text = text.replace(needle, MASK)
    lowered = text.lower()
    for pattern, replacement, cues in _PATTERNS:
        if any(cue in lowered for cue in cues):
            text = pattern.sub(replacement, text)
    return text


def mask_known_secrets(data: bytes) -> bytes:
    """``data`` with every registered secret value (in every form) replaced by the mask (see module doc)."""
    needles = _needles[0]
    if not needles:
        return data
    for needle in needles:
        encoded = needle.encode("utf-8", "surrogatepass")
        if encoded in data:
            data = data.replace(encoded, MASK.encode())
    return data


def _redact_headers(headers: dict[Any, Any]) -> dict[Any, Any]:
    return {
        name: (MASK if is_secret_header(name) and value not in (None, "") else _redact_plain(value))
        for name, value in headers.items()
    }


def _redact_plain(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {
            key: (
                MASK
                if is_secret_key(key) and value not in (None, "")
                else _redact_headers(value)
                if _headers_key(key) and isinstance(value, dict)
                else _redact_plain(value)
            )
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
