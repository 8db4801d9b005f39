"""Start-up checks of a resolved config that protect secrets; each problem is one ConfigError naming a field.

Contract (run by the loader on every resolved config, before anything is started or printed):

* :func:`refuse_url_credentials`: an ``http(s)://user:password@host`` URL anywhere is refused, naming the
  field and the setting to use instead (``base_url`` → ``api_key``, ``policy_base_url`` →
  ``policy_api_key``). The credential is registered as a secret first, so it is masked in everything
  printed afterwards, and the message never repeats the URL.
* :func:`check_header_values`: the value of every API key or token (they travel as HTTP headers) and every
  entry of a ``*headers`` mapping must be a valid one-line header value (:mod:`rewardgym.protocol.headers`):
  a CR/LF is refused here, for both transports, instead of reaching the wire.
* :func:`environment_secrets`: of the values ``${oc.env:…}`` read from the environment, those under a key
  that is not known-safe (:func:`~rewardgym.config.secrets.is_env_safe_key`, or a boolean) are registered
  as secrets; their dotted paths are returned so that structured printouts mask them even when short.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rewardgym.config.secrets import is_env_safe_key, is_secret_key, register_secret, url_credentials
from rewardgym.errors import ConfigError
from rewardgym.protocol.headers import check_headers, check_value

_NOT_HEADERS = ("secret", "password", "passwd")
"""Secret keys whose values are not sent as HTTP headers (``session_secret`` signs cookies)."""


def _walk(node: Any, path: str = "") -> Iterator[tuple[str, str, Any]]:
    """(dotted path, key, value) of every value, depth first."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        child = f"{path}.{key}" if path else str(key)
        yield child, str(key), value
        yield from _walk(value, child)


def _credential_hint(key: str) -> str:
    if key.endswith("base_url"):
        return f"put the credential in {key[: -len('base_url')]}api_key"
    return "put the credential in the server's api_key setting"


def refuse_url_credentials(resolved: dict[str, Any]) -> None:
    """Refuse any ``http(s)`` URL with a ``user:password@`` part (see the module docstring)."""
    found: list[tuple[str, str]] = []
    for path, key, value in _walk(resolved):
        userinfo = url_credentials(value)
        if userinfo is not None:
            register_secret(userinfo)
            for part in userinfo.split(":", 1):
                register_secret(part)
            found.append((path, key if not key.isdigit() else path.rsplit(".", 2)[-2]))
    if found:
        # The shortest path is where the user wrote it (``policy_base_url``), not a copy made by ``${…}``.
        path, field = min(found, key=lambda item: item[0].count("."))
        raise ConfigError(
            f"{path}: the URL has credentials in it (user:password@…), which rewardgym does not send and "
            f"would otherwise print and write in clear; remove them and {_credential_hint(field)}"
        )


def check_header_values(resolved: dict[str, Any]) -> None:
    """Refuse secrets and configured headers that cannot be sent as one header line."""
    problems: list[ConfigError] = []
    for path, key, value in _walk(resolved):
        try:
            if isinstance(value, str) and is_secret_key(key) and not key.lower().endswith(_NOT_HEADERS):
                check_value(value, path)
            elif isinstance(value, dict) and key.lower().endswith("headers"):
                check_headers(value, path)
        except ConfigError as exc:
            problems.append(exc)
    if problems:  # name where it was written (``policy_api_key``), not a copy made by ``${…}``
        raise min(problems, key=lambda exc: str(exc).split(":", 1)[0].count("."))


def environment_secrets(env_reads: Sequence[tuple[str, str]]) -> frozenset[str]:
    """Register the environment values not under a known-safe key; returns their dotted paths."""
    paths: set[str] = set()
    for path, value in env_reads:
        key = next((part for part in reversed(path.split(".")) if not part.isdigit()), "")
        if is_env_safe_key(key) or value.strip().lower() in ("true", "false", ""):
            continue
        register_secret(value)
        paths.add(path)
    return frozenset(paths)
