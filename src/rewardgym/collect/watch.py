"""Noticing that a server died during a collection, so the run stops cleanly instead of failing every row.

Contract:
- A :class:`StackGuard` is what the runner asks about the servers: :meth:`~StackGuard.alarm` (a rollout
  attempt just failed in a way a dead server would cause: look now), :meth:`~StackGuard.healthy` (awaited
  before a transient failure is recorded as final: ``False`` means a server is gone, and the rollout is left
  for ``--resume`` instead of being written to the failures file) and :attr:`~StackGuard.death` (what died,
  once known).
- :class:`HeadWatch` guards a ``--no-serve`` run through the head registry of its ``gym env start``: it
  polls ``GET /server_instances`` every ``poll_s`` and, on an alarm or a ``healthy()`` call, also
  ``GET /health``. A server is dead when the registry reports it ``exited`` (named with its exit code),
  when ``/health`` finds it refusing connections (named with its URL; the instance table is asked again
  first, since by then it usually shows which server exited), or when the registry itself refuses
  connections (its ``gym env start`` is gone) or times out ``head_timeouts`` times in a row. A timed-out
  probe of a busy server is not a death. On the first death ``on_death(message)`` is called once.
- :class:`AgentDirectory` is the agent name → URL mapping handed to the runner; it also says where the
  agents came from (``head_url``) or which guard watches them (``guard``), so the runner guards every run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from rewardgym.http.client import HttpClient
from rewardgym.http.errors import UpstreamConnectionError, UpstreamError, UpstreamTimeout
from rewardgym.launch.head_records import read_records


class StackGuard(Protocol):
    """What the runner asks about the servers of a collection (see the module docstring)."""

    resume_hint: str
    """What to do after a death (printed with it)."""

    @property
    def death(self) -> str | None: ...

    def alarm(self) -> None: ...

    async def healthy(self) -> bool: ...


class AgentDirectory(dict[str, str]):
    """Agent name → base URL, plus where they were found (``head_url``) or who watches them (``guard``)."""

    def __init__(
        self,
        urls: Mapping[str, str],
        *,
        head_url: str | None = None,
        guard: StackGuard | None = None,
        models: Mapping[str, Mapping[str, Any]] | None = None,
        replicas: Mapping[str, list[str]] | None = None,
        agent_types: Mapping[str, str | None] | None = None,
        instance_names: Iterable[str] = (),
        relays: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(urls)
        self.replicas = {name: list(found) for name, found in (replicas or {}).items()}
        """Agent name → the base URL of every replica, for the agents that have several."""
        self.head_url = head_url
        self.guard = guard
        self.models = dict(models) if models is not None else None
        """Model server name → ``{implementation, model}`` as the head registry reports them (no-serve)."""
        self.agent_types: dict[str, str | None] = dict(agent_types or {})
        """Agent name → implementation, where known (names the rows' ``_ng_environment_server``)."""
        self.instance_names = frozenset(instance_names)
        """Every server instance name known (a generated relay name must not clash with one)."""
        self.relays: dict[str, str] = dict(relays or {})
        """Agent name → the environment-server relay in front of it, as the head's config names it (a NeMo
        Gym stack); agents not in it get the name NeMo Gym's rule gives (``launch.relay_names``)."""


def describe_records(records: list[dict[str, Any]]) -> str | None:
    """The death a head registry's instance table shows, or ``None`` when every server is up.

    An instance is dead when all its replicas are (a lost replica costs only its in-flight rollouts)."""
    alive = {r.get("name") for r in records if r.get("status") != "exited"}
    exited = [r for r in records if r.get("status") == "exited" and r.get("name") not in alive]
    if exited:
        return "; ".join(
            f"server {r.get('name')!r} ({r.get('kind')}) exited (exit code {r.get('exit_code')})"
            for r in exited
        )
    stopping = [r for r in records if r.get("status") in ("stopping", "stopped")]
    if stopping:
        names = ", ".join(repr(r.get("name")) for r in stopping)
        return f"the servers are being stopped ({names}: 'gym env start' was stopped)"
    return None


def describe_health(health: Any, records: list[dict[str, Any]] | None = None) -> str | None:
    """The servers ``/health`` finds refusing connections (a timeout is a busy server, not a dead one).

    An instance with a replica still answering is alive; so is one placed on Ray (its records carry a
    ``node_id``): Ray restarts its replicas, and only its records saying every replica ``exited`` is a
    death (:func:`describe_records`)."""
    servers = health.get("servers") if isinstance(health, dict) else None
    if not isinstance(servers, list):
        return None
    entries = [s for s in servers if isinstance(s, dict)]
    refused = UpstreamConnectionError.kind
    alive = {s.get("name") for s in entries if s.get("healthy") or s.get("error") != refused}
    alive |= {r.get("name") for r in records or () if r.get("node_id")}
    dead = [
        s
        for s in entries
        if not s.get("healthy") and s.get("error") == refused and s.get("name") not in alive
    ]
    if not dead:
        return None
    return "; ".join(f"server {s.get('name')!r} at {s.get('url')} refuses connections" for s in dead)


class HeadWatch:
    """Guards a ``--no-serve`` run through its head registry (see the module docstring)."""

    resume_hint = (
        "Restart the servers (the same 'gym env start' command), then run the same command plus --resume "
        "to continue."
    )

    def __init__(
        self,
        head_url: str,
        *,
        on_death: Callable[[str], None],
        headers: Mapping[str, str] | None = None,
        poll_s: float = 0.25,
        timeout_s: float = 5.0,
        head_timeouts: int = 3,
        check_interval_s: float = 0.25,
    ) -> None:
        self.head_url = head_url.rstrip("/")
        self._on_death = on_death
        self._client = HttpClient(headers=headers)
        self._poll_s = poll_s
        self._timeout_s = timeout_s
        self._head_timeouts = head_timeouts
        self._check_interval_s = check_interval_s
        self._timeouts = 0
        self._wake = asyncio.Event()
        self._poller: asyncio.Task[None] | None = None
        self._check: asyncio.Task[None] | None = None
        self._checked_at = -1e9
        self.death: str | None = None
        self.checks = 0
        """Full checks (``/server_instances`` + ``/health``) made so far."""

    async def __aenter__(self) -> HeadWatch:
        self._poller = asyncio.create_task(self._poll())
        return self

    async def __aexit__(self, *exc: object) -> None:
        for task in (self._poller, self._check):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        await self._client.close()

    # ------------------------------------------------------------------ the guard
    def alarm(self) -> None:
        """A rollout attempt failed: check the servers soon (at most once per ``check_interval_s``)."""
        if self.death is None:
            self._wake.set()

    async def healthy(self) -> bool:
        """Check the servers now (sharing a check already under way); ``False`` once one is dead."""
        if self.death is None:
            await self._full_check()
        return self.death is None

    # ------------------------------------------------------------------ checks
    def _died(self, message: str) -> None:
        if self.death is None:
            self.death = message
            self._on_death(message)

    async def _get(self, path: str) -> Any:
        reply = await self._client.get(f"{self.head_url}{path}", timeout_s=self._timeout_s, max_attempts=1)
        return reply.json()

    async def _records(self) -> list[dict[str, Any]] | None:
        """The instance table; ``None`` when the head could not be asked (and the death is recorded)."""
        try:
            records = await self._get("/server_instances")
        except UpstreamTimeout:
            self._timeouts += 1
            if self._timeouts >= self._head_timeouts:
                self._died(
                    f"the head registry at {self.head_url} stopped answering ({self._timeouts} timeouts)"
                )
            return None
        except UpstreamConnectionError:
            self._died(
                f"the head registry at {self.head_url} refuses connections: its 'gym env start' has exited "
                "(its output names the server that died)"
            )
            return None
        except UpstreamError:
            return None
        self._timeouts = 0
        # Our records or a NeMo Gym head's, read into our field names (a NeMo Gym record has no lifecycle
        # status, so only a refused connection or /health can show a death there).
        return [r.model_dump() for r in read_records(records) or []]

    async def _inspect(self, *, full: bool) -> None:
        records = await self._records()
        if records is None or self.death is not None:
            return
        found = describe_records(records)
        if found is None and full:
            try:
                found = describe_health(await self._get("/health"), records)
            except UpstreamError:
                found = None
            if found is not None:
                # Servers refuse connections: the supervisor has probably seen which one exited first by
                # now (and is stopping the others); its table names the culprit better than the probes.
                try:
                    again = await self._get("/server_instances")
                except UpstreamError:
                    again = None
                if isinstance(again, list):
                    found = describe_records([r.model_dump() for r in read_records(again) or []]) or found
        if found is not None:
            self._died(found)

    async def _full_check(self) -> None:
        if self._check is None or self._check.done():
            if time.monotonic() - self._checked_at < self._check_interval_s:
                return
            self._checked_at = time.monotonic()
            self.checks += 1
            self._check = asyncio.create_task(self._inspect(full=True))
        await asyncio.shield(self._check)

    async def _poll(self) -> None:
        while self.death is None:
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self._poll_s)
            except TimeoutError:
                await self._inspect(full=False)
                continue
            self._wake.clear()
            await self._full_check()
