"""The HTTP header names and values rewardgym sends: the rule, and the one check every sender uses.

Contract:

* A header name is an RFC 9110 token (letters, digits and ``!#$%&'*+-.^_`|~``).
* A header value is one line: no control character (``\\x00``-``\\x08``, ``\\x0a``-``\\x1f``, ``\\x7f``;
  a tab is allowed), so a CR/LF in an API key, a token or a configured header can never end the header and
  inject another. Non-ASCII characters are allowed; both transports send values as UTF-8 (aiohttp always
  does, and :mod:`rewardgym.http.h1pool` does the same), so a value reaches an ``http://`` and an
  ``https://`` upstream as the same bytes.
* :func:`header_problem` describes what is wrong (``None`` when nothing is); :func:`check_headers` raises
  :class:`~rewardgym.errors.ConfigError` naming ``<where>`` and the header; :func:`valid_secret_value` and
  :func:`valid_headers` are the same checks as pydantic validators (``ValueError``). None of them ever
  repeats the value: it is usually a secret.

Values are checked once, where configuration becomes a sender (server configs, the CLI's token, the HTTP
clients' fixed headers), not per request.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from rewardgym.errors import ConfigError

if TYPE_CHECKING:
    from pydantic import SecretStr

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
_NAMES: Final = {"\r": "CR", "\n": "LF", "\x00": "NUL"}


def value_problem(value: str) -> str | None:
    """Why ``value`` cannot be sent as a header value, or ``None``."""
    found = _CONTROL.search(value)
    if found is None:
        return None
    char = found.group(0)
    name = _NAMES.get(char, f"control character U+{ord(char):04X}")
    return f"contains {name} (a header value must be one line without control characters)"


def header_problem(name: str, value: str) -> str | None:
    """Why ``name: value`` cannot be sent, or ``None``."""
    if not _TOKEN.fullmatch(name):
        return f"header name {name!r} is not a valid HTTP header name"
    return value_problem(value)


def check_value(value: str, where: str) -> str:
    """``value`` if it can be sent as a header value; else :class:`ConfigError` naming ``where``."""
    problem = value_problem(value)
    if problem is not None:
        raise ConfigError(f"{where}: {problem}")
    return value


def check_headers(headers: Mapping[str, str], where: str) -> dict[str, str]:
    """``headers`` as a dict if every one can be sent; else :class:`ConfigError` naming ``where.<name>``."""
    for name, value in headers.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise ConfigError(f"{where}: header names and values must be strings")
        problem = header_problem(name, value)
        if problem is not None:
            raise ConfigError(
                f"{where}.{name}: {problem}" if _TOKEN.fullmatch(name) else f"{where}: {problem}"
            )
    return dict(headers)


def valid_secret_value(value: SecretStr | None) -> SecretStr | None:
    """A pydantic validator body for a secret sent as a header (API key, token): ``ValueError`` naming the
    problem, never the value."""
    if value is not None:
        problem = value_problem(value.get_secret_value())
        if problem is not None:
            raise ValueError(problem)
    return value


def valid_headers(value: dict[str, str]) -> dict[str, str]:
    """A pydantic validator body for a configured header mapping (``default_headers``)."""
    for name, text in value.items():
        problem = header_problem(name, text)
        if problem is not None:
            raise ValueError(f"{name}: {problem}" if _TOKEN.fullmatch(name) else problem)
    return value
