"""``gym data select``: reward profiles into training data, with a manifest to rebuild it exactly.

Built on the analysis layer: per-task pass rates, Jeffreys intervals, bands and "settled" come from
:mod:`rewardgym.analysis.uncertainty`; health flags from the analysis' quality summary.

Layers (lower never import higher): :mod:`.options` (the settings), :mod:`.sources` (profiles and health
files → tasks merged by content), :mod:`.select` (filters, quotas, stratification, orders and schedules;
pure), :mod:`.build` (the dataset's bytes and counts), :mod:`.api` (writing, the manifest, ``--check``).
See ``docs/decide.md``.
"""

from rewardgym.dataset.api import CheckResult, Written, check_manifest, manifest_path, select_files
from rewardgym.dataset.options import SelectOptions

__all__ = ["CheckResult", "SelectOptions", "Written", "check_manifest", "manifest_path", "select_files"]
