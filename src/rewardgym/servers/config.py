"""Configuration classes shared by every server: network, security, logging, outbound HTTP and references.

Contract:
- A server's config class is a pydantic model derived from :class:`ServerConfig`; every field carries a
  docstring (it is the user documentation of the YAML block of that server).
- Unknown keys are an error (``extra="forbid"``) so a typo in a YAML block is reported with its field name
  instead of being silently ignored. The catalogue metadata NeMo Gym configs carry (``entrypoint``,
  ``domain``, ``description``, ``datasets`` …) is declared here and has no effect on behaviour.
- Secrets (``session_secret``, ``auth_token``, API keys of subclasses) are :class:`pydantic.SecretStr`:
  they never appear in ``repr``, logs or error messages.
- ``peers`` maps every other server instance name to its base URL; the launcher fills it, and
  :meth:`ServerConfig.peer_url` resolves a :class:`ServerRef` against it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator

from rewardgym.errors import ConfigError
from rewardgym.http.balancer import Router
from rewardgym.http.config import HttpClientConfig
from rewardgym.protocol.headers import valid_secret_value

_CONFIG = ConfigDict(extra="forbid")
CAPTURE_DIR_RULE = "must be an absolute directory when observability_enabled is true (NeMo Gym 0.7.0's rule)"

ServerKind = Literal["responses_api_models", "resources_servers", "responses_api_agents"]


class ServerRef(BaseModel):
    """A reference from one server's config to another server instance (``{type, name}``)."""

    model_config = _CONFIG

    type: ServerKind
    """The kind of server referenced."""

    name: str
    """The referenced instance name (a top-level key of the resolved config)."""

    url: str | None = None
    """Explicit base URL; when unset the URL comes from the launcher-filled ``peers`` map."""


class ServerConfig(BaseModel):
    """Fields every server instance has. Subclasses add their own documented fields."""

    model_config = _CONFIG

    name: str = Field(min_length=1)
    """Instance name (the top-level YAML key); it names logs, the session cookie and error bodies."""

    host: str = "127.0.0.1"
    """Interface to bind. Loopback by default; binding elsewhere exposes the server to the network."""

    port: int = Field(0, ge=0, le=65535)
    """TCP port; 0 asks the OS for a free port (the launcher normally assigns one)."""

    session_secret: SecretStr | None = None
    """Key that signs the session cookie; a random one is generated per start when unset."""

    auth_token: SecretStr | None = None
    """When set, every request except ``GET /`` must carry ``Authorization: Bearer <token>`` or
    ``X-Rewardgym-Token: <token>``; the server sends it to its peers too."""

    max_request_bytes: int = Field(64 * 1024 * 1024, ge=1024)
    """Largest accepted request body; larger bodies get HTTP 413."""

    request_read_timeout_s: float = Field(30.0, gt=0)
    """Seconds a client has to deliver a whole request (head and body), counted from the connection's
    opening or from the first byte of a further request on a kept-alive one; a slower client is
    disconnected, so half-open connections (slowloris) cannot pile up."""

    log_dir: Path | None = None
    """Directory of the JSON log file ``<log_dir>/<name>.log``; ``None`` logs to stderr."""

    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """Minimum level written to the log."""

    http: HttpClientConfig = Field(default_factory=HttpClientConfig)
    """Outbound HTTP client settings (timeouts, retries) for calls this server makes."""

    peers: dict[str, str | list[str]] = Field(default_factory=dict)
    """Base URL of every server instance by name — a list for an instance with several replicas (its
    first URL is the one references resolve to; calls to it are spread over all of them); filled by the
    launcher."""

    graceful_shutdown_s: float = Field(2.0, ge=0)
    """Seconds in-flight requests get to finish after a stop signal."""

    # Catalogue metadata carried by NeMo Gym YAML blocks: accepted, documented, without effect.
    entrypoint: str | None = None
    """NeMo Gym's ``app.py`` entry point; ignored (servers are Python classes here)."""

    domain: str | None = None
    """Catalogue metadata (e.g. ``knowledge``); ignored."""

    verified: bool | None = None
    """Catalogue metadata; ignored."""

    verified_url: str | None = None
    """Catalogue metadata; ignored."""

    description: str | None = None
    """Catalogue metadata; ignored."""

    value: str | None = None
    """Catalogue metadata; ignored."""

    license: str | None = None
    """Catalogue metadata; ignored."""

    datasets: list[dict[str, Any]] | None = None
    """Dataset declarations (used by data preparation, not by the server)."""

    num_workers: int | None = None
    """Accepted for NeMo Gym compatibility; a server runs one worker process."""

    observability_enabled: bool = False
    """NeMo Gym's ``observability_enabled`` (run-wide): model servers capture each call made on
    ``/ng-rollout/<rollout id>/v1/...`` and agents record the trajectory (docs/collect.md)."""

    model_call_capture_dir: Path | None = Field(None, validate_default=True)
    """NeMo Gym's ``model_call_capture_dir`` (run-wide): where the capture files go; required and
    absolute when ``observability_enabled``."""

    # The token travels as a header to every peer: a CR/LF in it is refused here, not put on the wire.
    _auth_token_is_one_header_line = field_validator("auth_token")(valid_secret_value)

    @field_validator("model_call_capture_dir")
    @classmethod
    def _capture_dir_is_absolute(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        if info.data.get("observability_enabled") and (value is None or not value.is_absolute()):
            raise ValueError(CAPTURE_DIR_RULE)
        return value

    def peer_url(self, ref: ServerRef, field: str) -> str:
        """Base URL of the referenced server; :class:`ConfigError` naming ``field`` when it cannot resolve."""
        if ref.url:
            return ref.url.rstrip("/")
        found = self.peers.get(ref.name)
        url = found[0] if isinstance(found, list) and found else found
        if not isinstance(url, str):
            known = ", ".join(sorted(self.peers)) or "none"
            raise ConfigError(
                f"{self.name}.{field}: no server instance named {ref.name!r} (known instances: {known})"
            )
        return url.rstrip("/")

    def peer_router(self) -> Router:
        """The replicas of every peer with more than one (see :mod:`rewardgym.http.balancer`); sessions of
        the resources servers this config references are sticky (their state lives in one replica)."""
        stateful = {
            value.name
            for value in (getattr(self, name) for name in type(self).model_fields)
            if isinstance(value, ServerRef) and value.type == "resources_servers"
        }
        router = Router()
        for name, urls in self.peers.items():
            if isinstance(urls, list) and len(urls) > 1:
                router.add(urls, sticky=name in stateful)
        return router
