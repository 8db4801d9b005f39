"""What the supervisor hands a child process, and what the head registry shows about each instance.

- :class:`ChildSpec` is sent to ``python -m rewardgym.launch.child`` on its **stdin** (JSON), never on the
  command line or in the environment, because ``config`` holds the instance's resolved settings including
  secrets (API keys, session secret, auth token). The class is found with
  :func:`rewardgym.registry.lookup` (``kind``, ``implementation``): a built-in name or ``module.path:Class``.
- :class:`InstanceRecord` is the public, secret-free description of a running instance served by
  ``GET /server_instances``. For a model server it carries the model name it serves
  (:func:`model_identity`: a name, never a URL or a key), so a ``--no-serve`` collection can record which
  policy produced its rollouts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from rewardgym.config.secrets import redact_text
from rewardgym.errors import ConfigError

if TYPE_CHECKING:
    from rewardgym.servers.base import BaseServer

InstanceStatus = Literal["starting", "ready", "exited", "stopping", "stopped"]


class ChildSpec(BaseModel):
    """One server instance to launch."""

    name: str
    """Instance name."""

    kind: str
    """Server kind (``resources_servers``, ``responses_api_models``, ``responses_api_agents``)."""

    implementation: str
    """Implementation name as written in the config (``simple_agent``, or ``module.path:Class``)."""

    config: dict[str, Any] = Field(repr=False)
    """The instance's resolved config (validated by the server class). Contains secrets: never print it."""

    secrets: list[str] = Field(default_factory=list, repr=False)
    """Every secret value the supervisor knows (registered while loading the config, e.g. values read from the
    environment under a key that does not look secret): the child masks them in its logs and answers too."""

    parent_pid: int | None = None
    """Pid of the supervisor; the child exits when its parent is gone."""

    @property
    def host(self) -> str:
        return str(self.config.get("host", "127.0.0.1"))

    @property
    def port(self) -> int:
        return int(self.config.get("port", 0))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


class InstanceRecord(BaseModel):
    """A server instance as the head registry reports it (no secrets)."""

    name: str
    kind: str
    implementation: str
    url: str
    pid: int | None = None
    status: InstanceStatus = "starting"
    started_at: float | None = None
    exit_code: int | None = None
    model: str | None = None
    """The model a model server serves (its model name as sent upstream); ``None`` for other kinds."""


MODEL_KIND = "responses_api_models"
_MODEL_NAME_FIELDS = ("model", "openai_model")
"""Where the built-in model servers keep their model name (vllm / embedded; openai)."""


def model_identity(spec: ChildSpec) -> str | None:
    """The model name a model server instance serves, for the head registry; ``None`` for other kinds.

    Only a name field is read — never a URL (it may carry credentials) or a key; a value that is a
    registered secret is withheld.
    """
    if spec.kind != MODEL_KIND:
        return None
    for field in _MODEL_NAME_FIELDS:
        value = spec.config.get(field)
        if isinstance(value, str) and value:
            return value if redact_text(value) == value else None
    return None


def class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def server_class(kind: str, implementation: str) -> type[BaseServer[Any]]:
    """The server class of an implementation (registry lookup); :class:`ConfigError` if it is not a server."""
    from rewardgym.registry import lookup
    from rewardgym.servers.base import BaseServer

    cls = lookup(kind, implementation)
    if not (isinstance(cls, type) and issubclass(cls, BaseServer)):
        raise ConfigError(f"{kind} {implementation!r}: {class_path(cls)} is not a server class")
    return cls
