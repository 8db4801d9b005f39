"""Spreading calls over the replicas of one server instance.

Contract:
- :class:`Replicas` holds the base URLs of one instance's replicas. :meth:`Replicas.acquire` picks the
  live replica with the fewest requests outstanding (ties taken in turn, so a sequential caller still
  spreads), counts the request until :meth:`Replicas.release`.
- **Affinity.** A replica that answers with a cookie (a session it created) is bound to that cookie
  (``name=value``) by :meth:`Replicas.bind`; a later call carrying the cookie goes to the same replica. In a
  *sticky* group (a resources server: its sessions live in the replica's memory) the session never moves:
  when its replica is down the call fails at once (:class:`ReplicaDown`) and the caller retries the whole
  episode. In other groups (agents, model servers: stateless) the binding is a preference only. The key
  map is bounded (least recently used keys are forgotten first).
- **Down replicas.** :meth:`Replicas.mark_down` (after a connection error: refused, reset) skips a replica
  for ``down_s`` seconds, doubling per consecutive failure up to ``max_down_s``; after that one call is let
  through as a probe and a success (:meth:`Replicas.mark_up`) brings it back. When every replica is down,
  the one whose down period ends first is tried (the caller's retry budget bounds the attempts).
- :class:`Router` maps the base URL its callers know for an instance (its first replica's URL) to the
  instance's :class:`Replicas`, so an existing ``f"{peer_url}/path"`` call is spread without changes.

Pure bookkeeping, no I/O: one event loop calls it, so it needs no lock.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence

MAX_AFFINITY_KEYS = 65_536
DOWN_S = 1.0
MAX_DOWN_S = 30.0


class ReplicaDown(Exception):
    """The replica holding a sticky session is down: the session is gone with it."""

    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(f"the replica {url} that holds this session is down")


def base_of(url: str) -> str:
    """``scheme://host:port`` of a URL (its part before the path)."""
    cut = url.find("/", url.find("//") + 2) if "//" in url else -1
    return url if cut < 0 else url[:cut]


class Replicas:
    """The replicas of one instance (see the module docstring)."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        sticky: bool = False,
        down_s: float = DOWN_S,
        max_down_s: float = MAX_DOWN_S,
    ) -> None:
        if not urls:
            raise ValueError("an instance needs at least one replica URL")
        self.urls = [u.rstrip("/") for u in urls]
        self.sticky = sticky
        self._down_s = down_s
        self._max_down_s = max_down_s
        self.outstanding = dict.fromkeys(self.urls, 0)
        self.served = dict.fromkeys(self.urls, 0)
        """Requests each replica was given (for tests and benchmarks)."""
        self._down_until = dict.fromkeys(self.urls, 0.0)
        self._failures = dict.fromkeys(self.urls, 0)
        self._affinity: OrderedDict[str, str] = OrderedDict()
        self._turn = 0

    def is_up(self, url: str, now: float | None = None) -> bool:
        return self._down_until[url] <= (time.monotonic() if now is None else now)

    def _bound(self, keys: Iterable[str]) -> str | None:
        for key in keys:
            url = self._affinity.get(key)
            if url is not None:
                self._affinity.move_to_end(key)
                return url
        return None

    def pick(self, keys: Iterable[str] = ()) -> str:
        """The replica for a call carrying the affinity ``keys`` (cookie pairs); see the module docstring."""
        now = time.monotonic()
        bound = self._bound(keys)
        if bound is not None:
            if self.is_up(bound, now):
                return bound
            if self.sticky:
                raise ReplicaDown(bound)
        urls = self.urls
        count = len(urls)
        start = self._turn % count
        self._turn += 1
        best: str | None = None
        for i in range(count):
            url = urls[(start + i) % count]
            if self._down_until[url] <= now and (
                best is None or self.outstanding[url] < self.outstanding[best]
            ):
                best = url
        if best is None:  # all down: try the one that comes back first
            best = min(urls, key=self._down_until.__getitem__)
        return best

    def acquire(self, keys: Iterable[str] = ()) -> str:
        url = self.pick(keys)
        self.outstanding[url] += 1
        self.served[url] += 1
        return url

    def release(self, url: str) -> None:
        self.outstanding[url] -= 1

    def bind(self, cookies: Mapping[str, str], url: str) -> None:
        """Remember that ``url`` set ``cookies`` (its sessions stay there)."""
        for name, value in cookies.items():
            key = f"{name}={value}"
            self._affinity[key] = url
            self._affinity.move_to_end(key)
        while len(self._affinity) > MAX_AFFINITY_KEYS:
            self._affinity.popitem(last=False)

    def mark_down(self, url: str) -> None:
        failures = self._failures[url] = self._failures[url] + 1
        pause = min(self._max_down_s, self._down_s * 2 ** (failures - 1))
        self._down_until[url] = time.monotonic() + pause

    def mark_up(self, url: str) -> None:
        if self._failures[url]:
            self._failures[url] = 0
            self._down_until[url] = 0.0

    def live(self) -> list[str]:
        now = time.monotonic()
        return [u for u in self.urls if self._down_until[u] <= now]


def affinity_keys(cookies: Mapping[str, str] | None) -> list[str]:
    return [f"{name}={value}" for name, value in cookies.items()] if cookies else []


class Router:
    """Base URL an instance is known by → its :class:`Replicas` (see the module docstring)."""

    def __init__(self) -> None:
        self._groups: dict[str, Replicas] = {}

    def __bool__(self) -> bool:
        return bool(self._groups)

    def add(self, urls: Sequence[str], *, sticky: bool = False) -> Replicas:
        group = Replicas(urls, sticky=sticky)
        self._groups[group.urls[0]] = group
        return group

    def route(self, url: str) -> tuple[Replicas, str] | None:
        """The group a URL's base belongs to and the URL's path (``None`` for a URL outside every group)."""
        base = base_of(url)
        group = self._groups.get(base)
        return None if group is None else (group, url[len(base) :])

    def groups(self) -> dict[str, Replicas]:
        return dict(self._groups)
