"""What the supervisor hands a child process, and what the head registry shows about each instance.

- :class:`ChildSpec` is sent to ``python -m rewardgym.servers.child`` on its **stdin** (JSON), never on the
  command line or in the environment, because ``config`` holds the instance's resolved settings including
  secrets (API keys, session secret, auth token). The class is found with
  :func:`rewardgym.registry.lookup` (``kind``, ``implementation``): a built-in name or ``module.path:Class``.
- :class:`InstanceRecord` is the public, secret-free description of a running instance served by
  ``GET /server_instances``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

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
