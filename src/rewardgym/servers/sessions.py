"""Per-session state of a resources server, keyed by the session cookie's ``session_id``.

Contract:
- :class:`SessionStore` keeps at most ``max_sessions`` live :class:`Session` objects. A session expires
  ``ttl_s`` seconds after its last use; when the cap is reached, the least recently used one is evicted.
  Expiry is checked lazily on access (amortised O(1); no background task).
- ``store.get(sid)`` never creates; ``store.get_or_create(sid)`` does. Both refresh the session's last use.
- ``session.state`` is a plain dict for the environment's own data; ``session.created_at``/``last_used`` are
  monotonic timestamps.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Session:
    """One episode's server-side state."""

    id: str
    state: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    last_used: float = 0.0


class SessionStore:
    """LRU + TTL map of session id → :class:`Session`."""

    def __init__(
        self, *, ttl_s: float, max_sessions: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl_s = ttl_s
        self.max_sessions = max_sessions
        self._clock = clock
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions

    def _expire(self, now: float) -> None:
        sessions = self._sessions
        while sessions:
            oldest = next(iter(sessions.values()))
            if now - oldest.last_used <= self.ttl_s:
                break
            sessions.popitem(last=False)

    def get(self, session_id: str) -> Session | None:
        """The live session ``session_id``, or ``None`` (unknown, expired or evicted)."""
        now = self._clock()
        self._expire(now)
        session = self._sessions.get(session_id)
        if session is not None:
            session.last_used = now
            self._sessions.move_to_end(session_id)
        return session

    def get_or_create(self, session_id: str) -> Session:
        """The live session ``session_id``, created (evicting the least recently used if full) if needed."""
        session = self.get(session_id)
        if session is not None:
            return session
        now = self._clock()
        session = Session(id=session_id, created_at=now, last_used=now)
        self._sessions[session_id] = session
        while len(self._sessions) > self.max_sessions:
            self._sessions.popitem(last=False)
        return session

    def drop(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
