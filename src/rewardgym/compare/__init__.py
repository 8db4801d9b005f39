"""``gym eval compare``: checkpoint A vs B (vs C …) over the tasks they share, with the uncertainty of
every answer — built on the analysis layer (its reader, Jeffreys posteriors and bands).

Layers (lower never import higher): :mod:`.identity` (what makes two rows the same task, pure),
:mod:`.runs` (one run's per-task counts and keys), :mod:`.match` (tasks across runs), :mod:`.stats`
(per-task tests, Benjamini–Hochberg, paired bootstrap, minimum detectable difference; pure),
:mod:`.document` (``compare.json``), :mod:`.charts` + :mod:`.page` + :mod:`.report` (``compare.html``),
:mod:`.api` (:func:`compare_files`). See ``docs/decide.md``.
"""

from rewardgym.compare.api import CompareResult, compare_files
from rewardgym.compare.document import Settings

__all__ = ["CompareResult", "Settings", "compare_files"]
