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
"""

from rewardgym.analysis.api import AnalyzeResult, analyze_files
from rewardgym.analysis.document import Analysis, RunFacts, Settings, analyze_columns

__all__ = ["Analysis", "AnalyzeResult", "RunFacts", "Settings", "analyze_columns", "analyze_files"]
