"""Where the agents are: a running ``gym env start`` (``--no-serve``) or servers this command starts.

``--no-serve`` asks the head registry for its instances (URLs only — the registry never serves secrets;
credentials come from this process's own env.yaml and flags). The registry may be ours or a NeMo Gym 0.7.0
head: both record shapes are read (:mod:`rewardgym.launch.head_records`). Without it, :class:`ServedStack`
starts the configured servers (the same supervisor as ``gym env start``, with its head on a
``head_server.port`` the config sets, else on a free port in ``port_range_low..port_range_high``), hands
out the agent URLs, watches the children during the run and stops everything afterwards.

Both hand the runner an :class:`~rewardgym.collect.watch.AgentDirectory`: the agents of a running
``gym env start`` remember their head registry (the runner watches it with a
:class:`~rewardgym.collect.watch.HeadWatch`), the agents of a :class:`ServedStack` carry the stack itself
as their :class:`~rewardgym.collect.watch.StackGuard` (a dead child is seen at once by its supervisor).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psutil
import yaml

from rewardgym.collect.watch import AgentDirectory
from rewardgym.config import GymConfig
from rewardgym.config.ports import DEFAULT_HEAD_PORT, DEFAULT_PORT_RANGE, can_bind, pick_free_port
from rewardgym.errors import ServerError
from rewardgym.http.client import HttpClient
from rewardgym.http.errors import UpstreamError, UpstreamHTTPError
from rewardgym.io.yaml_bounds import CONFIG_MAX_NODES, load_bounded
from rewardgym.launch.child_spec import servers_phrase
from rewardgym.launch.from_config import child_specs, port_range, upstream_urls, validate_specs
from rewardgym.launch.head_identity import check_answer, new_challenge, proof
from rewardgym.launch.head_records import read_records
from rewardgym.launch.ray_launch import ray_options
from rewardgym.launch.supervisor import ChildFailure, Supervisor, SupervisorOptions

AGENT_KIND = "responses_api_agents"
MODEL_KIND = "responses_api_models"
ENVIRONMENT_KIND = "environment_servers"


def _no_head(head_url: str, exc: UpstreamError) -> ServerError:
    return ServerError(
        f"no head server answers at {head_url} ({exc.kind}). Start the servers first with "
        "'gym env start --resources-server NAME', pass --head-url, or drop --no-serve to let "
        "'gym eval run' start them itself"
    )


async def prove_token_holder(head_url: str, token: str) -> None:
    """Raise unless the head at ``head_url`` answers a fresh challenge with ``HMAC(token, challenge)``
    (:mod:`rewardgym.launch.head_identity`); the request carries no token."""
    challenge = new_challenge()
    try:
        async with HttpClient() as client:  # no default headers: the token stays here
            reply = await client.post(
                f"{head_url.rstrip('/')}/identity", json={"challenge": challenge}, timeout_s=5.0,
                max_attempts=2, raise_for_status=False,
            )  # fmt: skip
            answer: Any = reply.json() if reply.status == 200 else None
    except UpstreamError as exc:
        raise _no_head(head_url, exc) from None
    except ValueError:
        answer = None
    check_answer(answer, proof(token, challenge, "token"), "token", head_url)


async def discover_agents(head_url: str, headers: Mapping[str, str] | None = None) -> AgentDirectory:
    """Agent name → URL from the head registry of a running ``gym env start`` (which it remembers).

    ``headers`` go with the request (e.g. the shared auth token) — only once the head proved that it holds
    that token (:func:`prove_token_holder`): a decoy at the URL never receives it."""
    token = (headers or {}).get("X-Rewardgym-Token")
    if token:
        await prove_token_holder(head_url, token)
    try:
        async with HttpClient(headers=headers) as client:
            reply = await client.get(
                f"{head_url.rstrip('/')}/server_instances", timeout_s=5.0, max_attempts=2
            )
            records: Any = reply.json()
    except UpstreamHTTPError as exc:
        if exc.status == 401:
            raise ServerError(
                f"the head registry at {head_url} requires the shared auth token (++auth_token=… or env.yaml)"
            ) from None
        raise ServerError(f"the head registry at {head_url} answered HTTP {exc.status}") from None
    except UpstreamError as exc:
        raise _no_head(head_url, exc) from None
    parsed = read_records(records)
    if parsed is None:
        raise ServerError(f"{head_url}/server_instances did not answer a list of instances")
    # Ours or NeMo Gym 0.7.0's record shape (launch.head_records); every live replica of an agent counts.
    replicas: dict[str, list[str]] = {}
    for r in parsed:
        if r.kind == AGENT_KIND and r.status != "exited":
            replicas.setdefault(r.name, []).append(r.url)
    agents = {name: urls[0] for name, urls in replicas.items()}
    # Which policy the running servers serve: recorded in the run fingerprint, so --resume onto servers of
    # another model is refused (the registry reports model names, never URLs or keys).
    models = {
        r.name: {"implementation": r.implementation, "model": r.model} for r in parsed if r.kind == MODEL_KIND
    }
    kinds = {r.name: r.implementation for r in parsed}
    agent_types = {name: kinds.get(name) for name in agents}
    relays: dict[str, str] = {}
    if any(
        r.kind == ENVIRONMENT_KIND for r in parsed
    ):  # a NeMo Gym stack: its relays' names, from its config
        relays = await reported_relays(head_url, headers)
    return AgentDirectory(
        agents,
        head_url=head_url,
        models=models,
        replicas=replicas,
        agent_types=agent_types,
        instance_names=list(kinds),
        relays=relays,
    )


async def reported_relays(head_url: str, headers: Mapping[str, str] | None = None) -> dict[str, str]:
    """Agent → the environment-server relay in front of it, from the config document the head serves at
    ``/global_config_dict_yaml`` (a JSON string holding YAML): each ``<relay>: {environment_servers:
    {<impl>: {agent_server: {name: <agent>}}}}``. Empty when the head serves no such document."""
    try:
        async with HttpClient(headers=headers) as client:
            reply = await client.get(
                f"{head_url.rstrip('/')}/global_config_dict_yaml", timeout_s=5.0, max_attempts=2
            )
            text: Any = reply.json()
        document = load_bounded(text, max_nodes=CONFIG_MAX_NODES) if isinstance(text, str) else None
    except (UpstreamError, ValueError, yaml.YAMLError):
        return {}
    relays: dict[str, str] = {}
    for name, block in document.items() if isinstance(document, dict) else ():
        kind = block.get(ENVIRONMENT_KIND) if isinstance(block, dict) else None
        for settings in kind.values() if isinstance(kind, dict) else ():
            agent = settings.get("agent_server") if isinstance(settings, dict) else None
            target = agent.get("name") if isinstance(agent, dict) else None
            if isinstance(target, str) and isinstance(name, str):
                relays.setdefault(target, name)
    return relays


def _head_port(cfg: GymConfig, host: str, configured: int, taken: list[int]) -> int:
    """A ``head_server.port`` the config sets (not the default 11000, which stays free for
    ``gym env start``) when it is free; else a free port in ``port_range_low..port_range_high``, like every
    other instance."""
    if configured != DEFAULT_HEAD_PORT and configured not in taken and can_bind(host, configured):
        return configured
    low = int(cfg.get("port_range_low") or DEFAULT_PORT_RANGE[0])
    high = int(cfg.get("port_range_high") or DEFAULT_PORT_RANGE[1])
    return pick_free_port(host, [*taken, *(cfg.get("disallowed_ports") or [])], (low, high))


class ServedStack:
    """The servers of ``cfg``, started for the duration of one command."""

    def __init__(
        self, cfg: GymConfig, *, log_dir: Path, startup_timeout_s: float, notify: Callable[[str], None]
    ) -> None:
        host, port = cfg.head_server
        taken = [inst.port for inst in cfg.instances.values()]
        self._cfg = cfg
        self._specs = child_specs(cfg, log_dir=log_dir)
        readiness = cfg.get("model_endpoint_readiness_timeout_seconds", 120.0)
        options = SupervisorOptions(
            log_dir=log_dir,
            head_host=host,
            head_port=_head_port(cfg, host, port, taken),
            ready_timeout_s=startup_timeout_s,
            upstreams=upstream_urls(cfg) if readiness else [],
            upstream_timeout_s=float(readiness or 0),
            auth_token=str(cfg.get("auth_token")) if cfg.get("auth_token") else None,
            host_colocated=True,  # colocate: true serves them in this process: no socket to the agents
        )
        placement = ray_options(cfg.get("ray"), None, port_range(cfg))
        self._supervisor: Supervisor
        if placement is None:
            self._supervisor = Supervisor(self._specs, options)
        else:  # a ray: block in the config places the servers on Ray here too (docs/scale.md)
            from rewardgym.launch.ray_launch import RaySupervisor

            options.network_bind = True
            self._supervisor = RaySupervisor(self._specs, options, placement, notify=notify)
        self._placed = placement is not None
        self._notify = notify
        self._watch: asyncio.Task[None] | None = None
        self.failure: ChildFailure | None = None

    @property
    def agent_urls(self) -> AgentDirectory:
        replicas: dict[str, list[str]] = {}
        for record in self._supervisor.records():  # the URLs where the launcher placed them
            if record.kind == AGENT_KIND:
                replicas.setdefault(record.name, []).append(record.url)
        urls = {name: found[0] for name, found in replicas.items()}
        types = {spec.name: spec.implementation for spec in self._specs if spec.kind == AGENT_KIND}
        return AgentDirectory(
            urls,
            guard=self,
            replicas=replicas,
            agent_types=types,
            instance_names=[spec.name for spec in self._specs],
        )

    # -- the StackGuard of the runner ---------------------------------------------------------------------
    resume_hint = "Run the same command plus --resume to continue (it starts the servers again)."

    @property
    def death(self) -> str | None:
        """What died (the first line of the child failure), once the watcher saw it."""
        if self.failure is None:
            return None
        return str(self.failure).split("; last log lines", 1)[0]

    def alarm(self) -> None:
        """Nothing to do: the supervisor sees a child exit by itself."""

    async def healthy(self) -> bool:
        """Whether every child still runs (the supervisor notices an exit within milliseconds)."""
        await asyncio.sleep(0.05)
        if self.failure is not None:
            return False
        alive: dict[str, bool] = {}
        for record in self._supervisor.records():
            running = record.status != "exited"
            if record.pid is not None and not self._placed:  # a Ray-placed pid is on its node
                try:
                    running = psutil.Process(record.pid).status() != psutil.STATUS_ZOMBIE
                except psutil.NoSuchProcess:
                    running = False
            alive[record.name] = alive.get(record.name, False) or running
        return all(alive.values())  # an instance is up while one of its replicas is

    async def start(self) -> None:
        self._notify(
            f"Starting {servers_phrase(len(self._specs))} (logs: {self._supervisor.options.log_dir})"
        )
        await self._supervisor.start(preflight=lambda: validate_specs(self._specs, self._cfg))
        self._notify(f"All {len(self._specs)} servers ready")

    def watch(self, on_death: Callable[[ChildFailure], None]) -> None:
        """Call ``on_death`` if a server exits while the command runs."""

        async def watcher() -> None:
            try:
                await self._supervisor.wait()
            except ChildFailure as failure:
                self.failure = failure
                on_death(failure)

        self._watch = asyncio.create_task(watcher())

    async def stop(self) -> None:
        if self._watch is not None and not self._watch.done():
            self._supervisor.request_stop()
            with contextlib.suppress(Exception):
                await self._watch
        await self._supervisor.stop()
