"""``gym eval analyze``: what a profile means — per-task uncertainty and bands, the GRPO zero-signal
forecast, reward versus length, health verdicts and a self-contained HTML report.

Layers (lower never import higher):

- pure statistics, numpy in / plain values out: :mod:`.columns`, :mod:`.uncertainty` (section 1),
  :mod:`.grpo` (section 2), :mod:`.length` (section 3), :mod:`.health` + :mod:`.findings` (section 4),
  :mod:`.document` (the ``<stem>_analysis.json`` document);
- reading: :mod:`.extract` (one parsed row, pure), :mod:`.scan` (a rollouts file, in parallel),
  :mod:`.sidecars` (failures, inputs count, neighbours);
- writing: :mod:`.health_output`, :mod:`.report` (HTML), :mod:`.api` (:func:`analyze_files`).

See ``docs/analysis.md`` for every output field.

The facade's names load on first use (PEP 562): a command that only needs a light module of the package
(e.g. the check ids ``gym eval run`` validates before it starts) does not import the whole analysis stack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rewardgym.analysis.api import AnalyzeResult, analyze_files
    from rewardgym.analysis.document import Analysis, RunFacts, Settings, analyze_columns

_PUBLIC = {
    "Analysis": "document",
    "AnalyzeResult": "api",
    "RunFacts": "document",
    "Settings": "document",
    "analyze_columns": "document",
    "analyze_files": "api",
}
__all__ = ["Analysis", "AnalyzeResult", "RunFacts", "Settings", "analyze_columns", "analyze_files"]


def __getattr__(name: str) -> Any:
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
