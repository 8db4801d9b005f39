"""``gym eval export``: a run's JSON files as Parquet or CSV tables for pandas, polars, DuckDB and the like.

Layers (lower never import higher): :mod:`.frames` (typed columns and flattening, pure), :mod:`.tables`
(the tables of one run, read from its files), :mod:`.api` (:func:`export_files`: paths, guards, atomic
writes). See ``docs/analysis.md``, section "Exporting tables".
"""

from rewardgym.export.api import ExportResult, export_files

__all__ = ["ExportResult", "export_files"]
