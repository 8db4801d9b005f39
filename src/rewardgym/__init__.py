"""rewardgym: measure how often an LLM policy succeeds on each task of a verifiable environment.

The public facade. Internals live in sub-packages, one per concept, listed here lowest layer first (a
package imports only lower layers, listed above it; ``tests/test_layers.py`` enforces the layers and
``tests/test_package_map.py`` that this map names every sub-package):

- ``errors``: the error types every layer shares.
- ``stats``: the posterior model, the tests and the design rules every decision rests on.
- ``protocol``: wire types and key names of the NeMo Gym contract.
- ``registry``: named classes for the extension points.
- ``io``: streaming, crash-safe JSONL and whole-file I/O.
- ``config``: YAML files, overrides, the server-instance graph, secret redaction.
- ``observe``: trajectory capture — the model servers' capture files, the agent's record, the collector's
  join (NeMo Gym's observability).
- ``profile``: ``gym eval profile`` — per-task reward profiles, streaming.
- ``http``: the outbound HTTP client of every server and the collector.
- ``metrics``: metrics of verify responses (pass@k, key metrics, aggregates).
- ``servers``: the server framework (config → server object → FastAPI app).
- ``launch``: from a loaded config to supervised server processes.
- ``agents``: servers that play one rollout against a model.
- ``models``: model adapters and model servers.
- ``env``: everything an environment author needs, in one import.
- ``testing``: the test kit for environments.
- ``environments``: the environment library, one sub-package per environment.
- ``collect``: rollout collection (``gym eval run``).
- ``analysis``: ``gym eval analyze`` — what a profile means.
- ``compare``: ``gym eval compare`` — checkpoints over the tasks they share.
- ``export``: ``gym eval export`` — a run's files as tables.
- ``dataset``: ``gym data select`` — reward profiles into training data.
- ``curriculum``: the online curriculum service (``gym curriculum serve``) and its trainer adapters.
- ``cli``: the ``gym`` command line.

Data flows one way: config → servers; rows → collector → rollouts → profiler → reports.

``__version__`` is looked up in the installed package metadata on first access only (``importlib.metadata``
costs tens of milliseconds, which every server process would otherwise pay at start-up).
"""

from __future__ import annotations

from typing import Any

from rewardgym.errors import ConfigError, DataError, RewardGymError, ServerError, UsageError

__all__ = ["ConfigError", "DataError", "RewardGymError", "ServerError", "UsageError", "__version__"]

__version__: str


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("rewardgym")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without install
        return "0.0.0"


def __getattr__(name: str) -> Any:
    if name == "__version__":
        value = _installed_version()
        globals()["__version__"] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
