"""Reading a head registry's ``/server_instances`` answer: ours or NeMo Gym 0.7.0's.

Two shapes describe the same thing (docs/reference/nemo_gym_interop.md §2):

* ours (:class:`~rewardgym.launch.child_spec.InstanceRecord`): ``name`` = the instance, ``kind`` = the server
  kind (``responses_api_agents``, …), ``implementation`` = the implementation, plus ``url``, ``status``,
  ``exit_code`` and a model server's ``model``;
* NeMo Gym's display record: ``process_name`` = the instance, ``server_type`` = the kind, ``name`` = the
  implementation (``simple_agent``), ``url`` (or ``host`` + ``port``), ``pid``, ``start_time`` and a
  ``status`` that is a probe result (``success`` / ``connection_error`` / …) or ``null``.

:class:`HeadRecord` accepts either and exposes ours. A record is read as NeMo Gym's when it has
``server_type`` and no ``kind`` (so a future record carrying both is read as ours). NeMo Gym's probe statuses
say nothing about a process having exited, so they are not mapped onto ours (``status`` stays ``None``).
:func:`read_records` keeps the records that parse and have a URL; anything else in the list is skipped, as a
record we cannot route to is of no use to a collector.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

_OUR_STATUSES = frozenset({"starting", "ready", "exited", "stopping", "stopped"})


class HeadRecord(BaseModel):
    """One running instance, in our field names, whichever head registry described it."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    name: str
    """The instance name (NeMo Gym: ``process_name``)."""
    kind: str
    """The server kind (NeMo Gym: ``server_type``)."""
    implementation: str | None = None
    """The implementation (NeMo Gym: ``name``)."""
    url: str
    pid: int | None = None
    status: str | None = None
    """Ours only (``starting`` … ``stopped``); ``None`` for a NeMo Gym record."""
    exit_code: int | None = None
    model: str | None = None
    """A model server's model name (ours only: NeMo Gym's records carry none)."""
    replica: int = 0
    """Which replica of the instance (ours only; a NeMo Gym record is one replica)."""
    replicas: int = 1
    node_id: str | None = None
    """The Ray node a Ray-placed server runs on (ours only)."""
    node_ip: str | None = None
    restarts: int = 0
    origin: str = "rewardgym"
    """Which shape the record came in: ``rewardgym`` or ``nemo_gym``."""

    @model_validator(mode="before")
    @classmethod
    def _either_shape(cls, data: Any) -> Any:
        if not isinstance(data, dict) or "kind" in data or "server_type" not in data:
            return data
        url = data.get("url")
        if not url and data.get("host") and data.get("port"):
            url = f"http://{data['host']}:{data['port']}"
        return {
            "name": data.get("process_name"),
            "kind": data.get("server_type"),
            "implementation": data.get("name"),
            "url": url,
            "pid": data.get("pid"),
            "status": None,
            "origin": "nemo_gym",
        }

    @model_validator(mode="after")
    def _known_status(self) -> HeadRecord:
        # Only our lifecycle words mean anything to the run guard; anything else is "unknown".
        if self.status is not None and self.status not in _OUR_STATUSES:
            return self.model_copy(update={"status": None})
        return self


def read_records(payload: Any) -> list[HeadRecord] | None:
    """The usable records of a ``/server_instances`` answer; ``None`` when it is not a list at all."""
    if not isinstance(payload, list):
        return None
    records: list[HeadRecord] = []
    for item in payload:
        try:
            records.append(HeadRecord.model_validate(item))
        except ValidationError:
            continue
    return records
