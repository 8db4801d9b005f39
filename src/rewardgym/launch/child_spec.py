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

    replica: int = 0
    """Which replica of the instance this is (0-based); replica ``i > 0`` logs under ``replica<i>/``."""

    replicas: int = 1
    """How many replicas the instance has."""

    placement: dict[str, Any] = Field(default_factory=dict)
    """The instance's ``ray:`` block (``num_cpus``, ``num_gpus``, ``resources``, ``labels``,
    ``max_restarts``): read by the Ray launcher only."""

    colocate: bool = False
    """Serve this instance from one process with the stack's other colocated instances (``colocate: true``,
    :mod:`rewardgym.launch.colocate`); only instances with one replica and no ``ray:`` block."""
    companions: list[ChildSpec] = Field(default_factory=list, repr=False)
    """Set by the supervisor on the spec whose process hosts a colocated group: the other instances that
    process serves too."""
    network_bind: bool = False
    """The launcher placed this server on a cluster: it may bind a non-loopback address, and then only
    with the shared auth token (:func:`rewardgym.launch.binding.check_bind`)."""

    @property
    def log_subdir(self) -> str:
        return f"replica{self.replica}" if self.replica else ""

    @property
    def host(self) -> str:
        return str(self.config.get("host", "127.0.0.1"))

    @property
    def port(self) -> int:
        return int(self.config.get("port", 0))

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"


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
    replica: int = 0
    """Which replica of the instance this record is (0-based); every replica has its own record."""
    replicas: int = 1
    """How many replicas the instance has."""
    node_id: str | None = None
    """Where the server runs: the Ray node id (``None`` when launched on this machine)."""
    node_ip: str | None = None
    """The address of that node (``None`` when launched on this machine)."""
    restarts: int = 0
    """How many times the launcher (Ray) restarted this replica."""


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


def servers_phrase(count: int) -> str:
    """``"1 server"`` / ``"3 servers"``: how start-up messages count the children."""
    return f"{count} server{'' if count == 1 else 's'}"
