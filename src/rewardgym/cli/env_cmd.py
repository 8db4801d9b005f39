"""``gym env start | status | stop``: run the configured servers, inspect them, stop them.

``gym env start`` (flags as in NeMo Gym: ``--config``, ``--resources-server``, ``--model-type``, ``--agent``,
``--search-dir``, ``--model/-m``, ``--model-url``, ``--model-api-key``, ``+k=v``/``++k=v`` overrides):
loads the config (with no model flag and no model instance in the files, ``--model-type embedded_model`` is
implied), validates every instance, prints the instance table, launches the head registry and one child
process per instance (:mod:`rewardgym.launch.supervisor`), waits until every server answers and every
upstream model endpoint answers (``model_endpoint_readiness_timeout_seconds``, default 120, 0 disables),
then prints ``All N servers ready`` and runs until SIGINT/SIGTERM (graceful stop, exit 0). A child that
dies — during start-up or later — stops everything, prints its last 30 log lines, exit code 1.
Logs: ``<log dir>/<instance>.log`` (``--log-dir``, or ``nemo_gym_log_dir``, default
``~/.cache/rewardgym/logs/head-<port>``).

``gym env status [--json]`` and ``gym env stop`` find the servers through the head registry
(``head_server`` of the config, default 127.0.0.1:11000, or ``--head-url``); ``stop`` reads the
supervisor's pid from ``GET /supervisor``, checks it is a gym process of this user, sends SIGTERM and waits.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path
from typing import Annotated, Any

import orjson
import psutil
import typer
from rich.console import Console
from rich.table import Table

from rewardgym.cli.config_cmd import (
    CONFIG_OPTION_NAMES,
    OVERRIDE_CONTEXT,
    AgentOpt,
    ConfigOpt,
    ModelApiKeyFileOpt,
    ModelApiKeyOpt,
    ModelOpt,
    ModelTypeOpt,
    ModelUrlOpt,
    ResourcesServerOpt,
    SearchDirOpt,
)
from rewardgym.cli.main import env_app
from rewardgym.cli.overrides import split_overrides
from rewardgym.cli.stack_config import load_stack_config
from rewardgym.config import GymConfig, load_config
from rewardgym.errors import ServerError
from rewardgym.http.client import HttpClient
from rewardgym.http.errors import UpstreamError, UpstreamHTTPError
from rewardgym.launch.child_spec import ChildSpec, servers_phrase
from rewardgym.launch.from_config import child_specs, upstream_urls, validate_specs
from rewardgym.launch.head_records import read_records
from rewardgym.launch.ray_launch import ray_options
from rewardgym.launch.supervisor import Supervisor, SupervisorOptions

DEFAULT_UPSTREAM_TIMEOUT_S = 120.0

HeadUrlOpt = Annotated[
    str | None, typer.Option("--head-url", help="Head registry URL (default: head_server of the config).")
]

_out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)


def _say(message: str) -> None:
    _out.print(message, markup=False)


def _instance_table(specs: list[ChildSpec], head: str) -> Table:
    table = Table(title=f"Server instances (head registry {head})", title_justify="left")
    for column in ("name", "kind", "implementation", "url"):
        table.add_column(column)
    for spec in specs:
        table.add_row(spec.name, spec.kind, spec.implementation, spec.url)
    return table


async def _serve(supervisor: Supervisor, specs: list[ChildSpec], cfg: GymConfig) -> int:
    loop = asyncio.get_running_loop()
    starting = asyncio.create_task(supervisor.start(preflight=lambda: validate_specs(specs, cfg)))

    def on_signal() -> None:
        if not starting.done():
            starting.cancel()
        supervisor.request_stop()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    try:
        await starting
    except asyncio.CancelledError:
        _say("Interrupted during start-up; all servers stopped.")
        return 130
    _say(f"All {len(specs)} servers ready (head registry {supervisor.head_url}). Press Ctrl-C to stop.")
    await supervisor.wait()
    _say("Stopping servers…")
    await supervisor.stop()
    _say("All servers stopped.")
    return 0


@env_app.command("start", context_settings=OVERRIDE_CONTEXT)
def start(
    ctx: typer.Context,
    config: ConfigOpt = None,
    resources_server: ResourcesServerOpt = None,
    model_type: ModelTypeOpt = None,
    agent: AgentOpt = None,
    search_dir: SearchDirOpt = None,
    model: ModelOpt = None,
    model_url: ModelUrlOpt = None,
    model_api_key: ModelApiKeyOpt = None,
    model_api_key_file: ModelApiKeyFileOpt = None,
    log_dir: Annotated[
        Path | None,
        typer.Option(
            "--log-dir",
            help="Directory of the server logs (default: nemo_gym_log_dir, else "
            "~/.cache/rewardgym/logs/head-<head port>).",
        ),
    ] = None,
    startup_timeout: Annotated[
        float, typer.Option("--startup-timeout", help="Seconds each server gets to answer.", min=1)
    ] = 600.0,
    ray: Annotated[
        str | None,
        typer.Option(
            "--ray",
            metavar="[ADDRESS]",
            help="Place each server (replica) in a Ray actor: 'auto' joins the running cluster, an address "
            "joins that one, no value starts a local one. Needs rewardgym[ray] and the shared auth token.",
        ),
    ] = None,
) -> None:
    """Start the configured servers and keep them running until Ctrl-C.

    Overrides: +key=value adds a key, ++key=value adds or replaces one (dotted paths, typed values).
    """
    known = [*CONFIG_OPTION_NAMES, "--agent", "--log-dir", "--startup-timeout", "--ray"]
    overrides = split_overrides(ctx.args, known)
    cfg = load_stack_config(
        overrides=overrides, config=config or [], resources=resources_server or [],
        model_types=model_type or [], agents=agent or [], search_dirs=search_dir or [], model=model,
        model_url=model_url, model_api_key=model_api_key, model_api_key_file=model_api_key_file,
    )  # fmt: skip
    head_host, head_port = cfg.head_server
    logs = log_dir or Path(
        cfg.get("nemo_gym_log_dir") or Path.home() / ".cache/rewardgym/logs" / f"head-{head_port}"
    )
    specs = child_specs(cfg, log_dir=logs.expanduser().resolve())
    upstream_timeout = cfg.get("model_endpoint_readiness_timeout_seconds", DEFAULT_UPSTREAM_TIMEOUT_S)
    options = SupervisorOptions(
        log_dir=logs.expanduser().resolve(),
        head_host=head_host,
        head_port=head_port,
        ready_timeout_s=startup_timeout,
        upstreams=upstream_urls(cfg) if upstream_timeout else [],
        upstream_timeout_s=float(upstream_timeout or 0),
        auth_token=_token(cfg),
    )
    placement = ray_options(cfg.get("ray"), ray)
    supervisor: Supervisor
    if placement is not None:
        from rewardgym.launch.ray_launch import RaySupervisor

        options.network_bind = True
        supervisor = RaySupervisor(specs, options, placement, notify=_say)
        supervisor.check()
        where = placement.address or "a local cluster"
        _say(f"Placing {len(specs)} servers on Ray ({where}); URLs are known once placed")
    else:
        _out.print(_instance_table(specs, f"http://{head_host}:{head_port}"))
        supervisor = Supervisor(specs, options)
    _say(f"Starting {servers_phrase(len(specs))} (logs: {options.log_dir})")
    code = asyncio.run(_serve(supervisor, specs, cfg))
    if code:
        raise typer.Exit(code)


def _token(cfg: GymConfig) -> str | None:
    token = cfg.get("auth_token")
    return str(token) if token else None


def token_headers(token: str | None) -> dict[str, str]:
    """The header that carries the shared auth token to the head registry and the servers."""
    return {"X-Rewardgym-Token": token} if token else {}


def _head_url(ctx: typer.Context, head_url: str | None) -> tuple[str, dict[str, str]]:
    """The head registry's URL and the auth headers (token from ``++auth_token`` / env.yaml)."""
    overrides = split_overrides(ctx.args, ["--head-url", "--json", "--timeout"])
    cfg = load_config([], overrides, require_complete=False, check_keys=True)
    if head_url:
        return head_url.rstrip("/"), token_headers(_token(cfg))
    host, port = cfg.head_server
    return f"http://{host}:{port}", token_headers(_token(cfg))


async def _fetch(url: str, headers: dict[str, str]) -> Any:
    async with HttpClient() as client:
        reply = await client.get(url, timeout_s=5.0, max_attempts=1, headers=headers)
        return reply.json()


def _query(head: tuple[str, dict[str, str]], path: str) -> Any:
    url, headers = head
    try:
        return asyncio.run(_fetch(f"{url}{path}", headers))
    except UpstreamHTTPError as exc:
        if exc.status == 401:
            raise ServerError(
                f"the head registry at {url} requires the shared auth token (++auth_token=… or env.yaml)"
            ) from None
        raise ServerError(f"the head registry at {url} answered HTTP {exc.status}") from None
    except UpstreamError as exc:
        raise ServerError(
            f"no gym servers found: the head registry at {url} does not answer ({exc.kind})"
        ) from None


async def _probe_each(instances: list[dict[str, Any]], headers: dict[str, str]) -> list[dict[str, Any]]:
    """``GET /`` of every instance (2 s, one attempt): any answer below 500 is healthy."""

    async def probe(client: HttpClient, inst: dict[str, Any]) -> dict[str, Any]:
        entry: dict[str, Any] = {"name": inst["name"], "url": inst["url"]}
        try:
            reply = await client.get(
                f"{inst['url']}/", timeout_s=2.0, max_attempts=1, headers=headers, raise_for_status=False
            )
            entry["healthy"] = reply.status < 500
        except UpstreamError as exc:
            entry["healthy"], entry["error"] = False, exc.kind
        return entry

    async with HttpClient() as client:
        return list(await asyncio.gather(*(probe(client, inst) for inst in instances)))


@env_app.command("status", context_settings=OVERRIDE_CONTEXT)
def status(
    ctx: typer.Context,
    head_url: HeadUrlOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Show the running servers and whether each one answers."""
    head = _head_url(ctx, head_url)
    # Ours or a NeMo Gym 0.7.0 head (its records use other field names; launch.head_records).
    instances = [r.model_dump() for r in read_records(_query(head, "/server_instances")) or []]
    servers = _query(head, "/health")
    servers = servers.get("servers") if isinstance(servers, dict) else None
    if not isinstance(servers, list):  # a NeMo Gym head answers one status only: probe each server here
        servers = asyncio.run(_probe_each(instances, head[1]))
    # Keyed by URL: every replica of an instance has its own health entry.
    health = {entry["url"]: entry for entry in servers if isinstance(entry, dict) and "url" in entry}
    rows = [
        {**inst, **{k: v for k, v in health.get(inst["url"], {}).items() if k not in ("url", "name")}}
        for inst in instances
    ]
    healthy = sum(1 for row in rows if row.get("healthy"))
    if as_json:
        typer.echo(
            orjson.dumps({"head": head[0], "healthy": healthy, "total": len(rows), "servers": rows}).decode()
        )
    else:
        table = Table(title=f"Servers of {head[0]}", title_justify="left")
        placed = any(row.get("node_id") for row in rows)
        columns = ["", "name", "kind", "implementation", "url", "pid", "status"]
        for column in columns + (["node"] if placed else []):
            table.add_column(column)
        for row in rows:
            mark = "✓" if row.get("healthy") else "✗"
            name = (
                row["name"] if (row.get("replicas") or 1) == 1 else f"{row['name']}#{row.get('replica', 0)}"
            )
            cells = [
                mark,
                name,
                row["kind"],
                row["implementation"] or "",
                row["url"],
                str(row.get("pid")),
                row["status"] or "",
            ]
            if placed:
                cells.append(f"{row.get('node_ip')} ({str(row.get('node_id') or '')[:12]})")
            table.add_row(*cells)
        _out.print(table)
        _say(f"{healthy} of {len(rows)} servers healthy")
    if healthy < len(rows):
        raise typer.Exit(1)


def _gym_process(pid: int) -> psutil.Process:
    try:
        proc = psutil.Process(pid)
        cmdline = " ".join(proc.cmdline())
        same_user = proc.uids().real == os.getuid()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        raise ServerError(f"the supervisor (pid {pid}) is not running or not ours") from None
    if not same_user or ("gym" not in cmdline and "rewardgym" not in cmdline):
        raise ServerError(f"pid {pid} is not a gym supervisor of this user; not stopping it")
    return proc


@env_app.command("stop", context_settings=OVERRIDE_CONTEXT)
def stop(
    ctx: typer.Context,
    head_url: HeadUrlOpt = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds to wait for the stop.", min=1)] = 30.0,
) -> None:
    """Stop the servers started by `gym env start` (graceful: SIGTERM to the supervisor)."""
    head = _head_url(ctx, head_url)
    info = _query(head, "/supervisor")
    count = len(_query(head, "/server_instances"))
    proc = _gym_process(int(info["pid"]))
    proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
        if time.monotonic() > deadline:
            raise ServerError(f"the supervisor (pid {proc.pid}) did not stop within {timeout:g} s")
        time.sleep(0.05)
    _say(f"Stopped {count} servers (supervisor pid {proc.pid}).")
