"""Launching the server instances on a Ray cluster: one Ray actor per replica, placed by Ray.

Contract of :class:`RaySupervisor` (the same interface as :class:`~rewardgym.launch.supervisor.Supervisor`,
which stays the launcher without Ray; server construction is untouched — each actor runs the very child
process the local launcher runs, :mod:`rewardgym.launch.ray_actor`):
- **Ray is imported only here, only when asked for** (``gym env start --ray [ADDRESS]`` or a ``ray:``
  block in the config; the optional extra ``rewardgym[ray]``). ``address``: ``auto`` joins the running
  cluster (``ray start --head`` on this machine or ``RAY_ADDRESS``), ``ray://…`` or ``host:port`` joins
  that one, none starts a local one-node cluster (without the dashboard) that stops with the launcher.
- **Placement** (:mod:`.ray_placement`, re-exported here). Each replica is an actor with the instance's
  ``ray:`` block as its Ray resources: ``num_cpus``, ``num_gpus``, ``resources`` (custom resources),
  ``labels`` (a node label selector) and ``max_restarts`` (default 3); the replicas of one instance are spread
  over the nodes (``SPREAD``). An instance no live node can take is an error naming it and what it asks for,
  before any server starts; placement itself may take up to the start-up timeout (a busy node, Ray starting
  its workers).
- Two phases, so every server knows every replica's URL before it starts: the actors are created and say
  where they run and which port is free there; then each replica's spec (its host the node's IP, its port,
  and every peer's replica URLs) is written to a ``0600`` file in a ``0700`` folder (``ray.spec_dir``,
  default ``<log dir>/.specs``; it must be the same path on every node: a shared file system or a mounted
  Kubernetes Secret) and the actors start their servers. **No secret is an actor argument**, none is in a
  ``runtime_env`` (both are visible in Ray's dashboard and state API); the spec files are removed at stop.
- **Security.** The servers listen on their node's IP, so the shared auth token is required: without it
  nothing is started (one error naming ``auth_token``), and each server refuses on its own as well. A
  local cluster (no address) listens on loopback only — Ray's own services and our servers (its node
  address is 127.0.0.1) —; on any cluster each server's port is taken from the config's port range;
  the driver's command line Ray records in its job table has every secret masked.
- The head registry runs here (as without Ray) and lists every replica with the node it runs on
  (``node_id``, ``node_ip``), its pid there and how often Ray restarted it.
- :meth:`RaySupervisor.wait` polls the actors: a replica whose server or node died is restarted by Ray (its
  record says ``starting`` meanwhile, then ``ready`` with its new node); a replica out of restarts is
  ``exited``. Only when every replica of an instance is gone does it stop everything and raise
  :class:`~rewardgym.launch.supervisor.ChildFailure`.
- :meth:`RaySupervisor.stop` stops every server (SIGTERM, grace, SIGKILL, inside its actor), kills the
  actors, removes the spec files, and shuts down a cluster it started.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from rewardgym.config.secrets import redact_argv
from rewardgym.errors import ConfigError, ServerError
from rewardgym.http.errors import UpstreamError
from rewardgym.launch.child_spec import ChildSpec
from rewardgym.launch.probe import http_status
from rewardgym.launch.ray_placement import RayOptions, actor_options, demand, offers, ray_options
from rewardgym.launch.supervisor import Supervisor, SupervisorOptions

STATUS_TIMEOUT_S = 2.0
POLL_S = 0.5


def _write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to a file only this user can read (created ``0600``; never world-readable)."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray's switch that, set to 0, makes a node take 127.0.0.1 as its address (on every platform)."""


def _local_cluster_on_loopback() -> None:
    """A local cluster (``--ray`` without an address) serves this machine only: with Ray's cluster mode
    off its node address is 127.0.0.1, so the GCS, the raylets, the workers and our servers (placed at the
    node's address) all listen on loopback. Set before ``ray`` is imported (Ray reads it then; its
    processes inherit it), and on the constant in case ``ray`` was imported already."""
    import sys

    os.environ[LOOPBACK_SWITCH] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None:
        constants.ENABLE_RAY_CLUSTER = False  # type: ignore[attr-defined]


@contextlib.contextmanager
def _entrypoint_without_secrets() -> Iterator[None]:
    """Ray stores the driver's command line (``/proc/self/cmdline``) in its job table, which its dashboard
    and state API show: for the time of ``ray.init`` it gets this command line with every secret masked
    (``--model-api-key K``, ``++auth_token=T``), so nothing secret is in what Ray stores."""
    import psutil
    import ray._private.utils as ray_utils

    original = ray_utils.get_entrypoint_name

    def masked() -> str:
        try:
            return subprocess.list2cmdline(redact_argv(psutil.Process().cmdline()))
        except psutil.Error:
            return "gym"

    ray_utils.get_entrypoint_name = masked
    try:
        yield
    finally:
        ray_utils.get_entrypoint_name = original


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


class RaySupervisor(Supervisor):
    """See the module docstring."""

    colocates = (
        False  # each server is its own actor, placed on its own node (``colocate`` is for one machine)
    )

    def __init__(
        self,
        specs: Sequence[ChildSpec],
        options: SupervisorOptions,
        ray: RayOptions,
        *,
        notify: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(specs, options, notify=notify)
        self.ray = ray
        self._actors: list[Any] = []
        self._owns_cluster = False
        self._spec_dir = ray.spec_dir or options.log_dir / ".specs"
        self._spec_files: list[Path] = []

    # ----------------------------------------------------------------- start
    def check(self) -> None:
        """The errors found before anything starts: no shared token, a bad ``ray:`` block."""
        if not self.options.auth_token:
            raise ConfigError(
                "auth_token: placing the servers on Ray makes them listen on their node's address; set the "
                "shared auth token first (++auth_token=… or auth_token in env.yaml, docs/security.md)"
            )
        for child in self._children:
            actor_options(child.spec)

    async def start(self, preflight: Callable[[], Any] | None = None) -> None:
        self.check()
        self._check_head_port()
        self.options.log_dir.mkdir(parents=True, exist_ok=True)
        try:
            await asyncio.to_thread(self._connect)
            await self._place()
            await self._start_head()
            await self._start_servers()
            await self._wait_all_ready(
                [self._wait_ready_ray(i) for i in range(len(self._children))], preflight
            )
        except BaseException:
            await self.stop()
            raise

    def _check_head_port(self) -> None:
        from rewardgym.launch.binding import check_bind
        from rewardgym.launch.serve import check_port_free

        options = self.options
        check_bind("head_server", options.head_host, network_bind=True, token=options.auth_token)
        try:
            check_port_free(options.head_host, options.head_port)
        except ServerError as exc:
            raise ServerError(f"head server: {exc}") from None

    def _connect(self) -> None:
        if self.ray.address is None:
            _local_cluster_on_loopback()
        import ray

        if ray.is_initialized():
            return
        kwargs: dict[str, Any] = {"namespace": "rewardgym", "log_to_driver": False}
        if self.ray.address is None:
            kwargs.update(include_dashboard=False, **self.ray.init_kwargs)
            self._owns_cluster = True
        else:
            kwargs["address"] = self.ray.address
        try:
            with _entrypoint_without_secrets():
                ray.init(**kwargs)
        except ConnectionError as exc:
            raise ServerError(f"cannot join the Ray cluster at {self.ray.address}: {exc}") from None

    async def _place(self) -> None:
        """Phase one: create the actors and learn where each runs and which port is free there."""
        import ray

        from rewardgym.launch.ray_actor import ServerActor

        remote = ray.remote(ServerActor)
        self._spec_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self._spec_dir, 0o700)
        for child in self._children:
            suffix = f".{child.spec.replica}" if child.spec.replicas > 1 else ""
            spec_file = self._spec_dir / f"{child.spec.name}{suffix}.json"
            with contextlib.suppress(FileNotFoundError):
                spec_file.unlink()  # a restarted actor starts its server only once the driver wrote it
            self._spec_files.append(spec_file)
            options = actor_options(child.spec)
            self._actors.append(remote.options(**options).remote(str(spec_file), str(child.log)))
        nodes = [n for n in ray.nodes() if n.get("Alive")]  # type: ignore[no-untyped-call]
        for child in self._children:
            asks = demand(actor_options(child.spec))
            if not any(offers(node, asks) for node in nodes):
                raise ServerError(
                    f"server {child.spec.name!r} cannot be placed: no node of the Ray cluster offers {asks} "
                    f"(its ray: block; nodes: {len(nodes)})"
                )
        try:  # feasible, but a node may be busy or still starting workers: wait up to the start-up timeout
            located: list[dict[str, Any]] = await asyncio.wait_for(
                asyncio.gather(*(actor.locate.remote(*self.ray.port_range) for actor in self._actors)),
                max(self.ray.placement_timeout_s, self.options.ready_timeout_s),
            )
        except TimeoutError:
            raise ServerError(
                "the servers were not placed in time: the Ray cluster has too few free resources"
            ) from None
        urls: dict[str, list[str]] = {}
        for child, where in zip(self._children, located, strict=True):
            config = {**child.spec.config, "host": where["node_ip"], "port": int(where["port"])}
            child.spec = child.spec.model_copy(update={"config": config, "network_bind": True})
            child.record.url = child.spec.url
            child.record.node_id = where["node_id"]
            child.record.node_ip = where["node_ip"]
            urls.setdefault(child.spec.name, []).append(child.spec.url)
        for child in self._children:
            peers = {n: (u if len(u) > 1 else u[0]) for n, u in urls.items() if n != child.spec.name}
            child.spec.config["peers"] = peers

    async def _start_servers(self) -> None:
        """Phase two: write each replica's spec file, then start every server."""
        for child, spec_file in zip(self._children, self._spec_files, strict=True):
            _write_private(spec_file, child.spec.model_dump_json().encode())
            child.log.parent.mkdir(parents=True, exist_ok=True)
            child.log.write_bytes(b"")
        started = await asyncio.gather(*(actor.start.remote() for actor in self._actors))
        for child, status in zip(self._children, started, strict=True):
            child.record.started_at = time.time()
            self._update(child, status)

    def _update(self, child: Any, status: dict[str, Any]) -> None:
        record = child.record
        record.pid = status.get("pid")
        record.node_id = status.get("node_id")
        record.node_ip = status.get("node_ip")
        if status.get("url"):
            record.url = status["url"]

    async def _wait_ready_ray(self, index: int) -> None:
        import ray

        child, actor = self._children[index], self._actors[index]
        deadline = time.monotonic() + self.options.ready_timeout_s
        while True:
            try:
                await http_status(f"{child.record.url}/", 2.0)
            except UpstreamError:
                try:
                    await asyncio.wait_for(actor.status.remote(), STATUS_TIMEOUT_S)
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError):
                    child.record.status = "exited"
                    raise self._fail(child, "exited during start-up") from None
                except TimeoutError:
                    pass
                if time.monotonic() > deadline:
                    raise self._fail(
                        child, f"did not answer within {self.options.ready_timeout_s:g} s"
                    ) from None
                await asyncio.sleep(0.05)
                continue
            child.record.status = "ready"
            where = f" on node {child.record.node_ip} ({(child.record.node_id or '')[:12]})"
            self._notify(f"{child.spec.name} ready at {child.record.url}{where}")
            return

    # ----------------------------------------------------------------- run and stop
    async def _poll(self, index: int) -> None:
        import ray

        child, actor = self._children[index], self._actors[index]
        if child.record.status == "exited":
            return
        try:
            status = await asyncio.wait_for(actor.status.remote(), STATUS_TIMEOUT_S)
        except ray.exceptions.RayActorError:
            child.record.status = "exited"  # out of restarts, or its node is gone for good
            return
        except (TimeoutError, ray.exceptions.ActorUnavailableError):
            child.record.status = "starting"  # being restarted by Ray
            return
        if status.get("pid") != child.record.pid and child.record.pid is not None:
            child.record.restarts += 1
            self._notify(
                f"{child.spec.name} replica {child.spec.replica} restarted on node {status.get('node_ip')}"
            )
        self._update(child, status)
        child.record.status = "ready" if status.get("exit_code") is None else "starting"

    async def wait(self) -> None:
        while not self._stop_requested.is_set():
            await asyncio.gather(*(self._poll(i) for i in range(len(self._children))))
            alive = {c.spec.name for c in self._children if c.record.status != "exited"}
            dead = [c for c in self._children if c.spec.name not in alive]
            if dead:
                failure = self._fail(dead[0], "exited unexpectedly (every replica is gone)")
                await self.stop()
                raise failure
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop_requested.wait(), POLL_S)

    async def stop(self) -> None:
        self._head.forget()  # this stack's record (head_identity) goes first, as locally
        if self._actors:
            import ray

            for child in self._children:
                if child.record.status != "exited":
                    child.record.status = "stopping"
            stops = [actor.stop.remote(self.options.stop_grace_s) for actor in self._actors]
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.gather(*stops, return_exceptions=True), self.options.stop_grace_s + 5.0
                )
            for actor in self._actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
            for child in self._children:
                if child.record.status != "exited":
                    child.record.status = "stopped"
            self._actors = []
        for spec_file in self._spec_files:
            with contextlib.suppress(FileNotFoundError):
                spec_file.unlink()
        with contextlib.suppress(OSError):
            self._spec_dir.rmdir()
        await self._head.stop()
        if self._owns_cluster:
            import ray

            await asyncio.to_thread(ray.shutdown)
            self._owns_cluster = False


__all__ = ["RayOptions", "RaySupervisor", "actor_options", "demand", "offers", "ray_options"]
