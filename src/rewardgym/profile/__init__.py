"""``gym eval profile``: NeMo Gym 0.7.0-identical reward profiles of a rollout collection, streaming and fast.

Public API::

    result = profile_files(inputs, rollouts, allow_partial=False)   # writes the three files
    result = profile_rows(rows, results, allow_partial=False)       # in memory; result.task_rows
    result = profile_results(verify_results, agent="agent")         # /aggregate_metrics: results only
    result.agent_metrics, result.repeat_level_metrics, result.completion, result.summary

    stats = compute_statistics(table, fan_out)   # the pure statistics layer (compute/statistics.py)

Layering: this package reads files only (``rewardgym.io``; the key names of ``rewardgym.protocol.keys``,
which loads no pydantic model); it never imports
servers or collection code. See ``docs/profile.md`` for the user-facing description of every output.

Layout, by phase (a phase imports only earlier ones): ``read/`` (both files → columns: ``reader``,
``scan_inputs``, ``scan_results``, ``extract``, ``row_layouts``, ``chunks``, ``columns``, ``magnitude``,
``observer``),
``compute/`` (columns → statistics: ``profiler``, ``statistics`` (the statistics layer), ``kernels`` (its
columnar numpy kernels), ``repeats``, ``grouping``, ``align``, ``report``) and ``write/``
(statistics → the three files: ``output``, ``lines``, ``writer``); ``api`` and ``tuning`` on top.
"""

from rewardgym.profile.api import ProfileResult, profile_files, profile_results, profile_rows
from rewardgym.profile.compute.align import CompletionSummary
from rewardgym.profile.compute.profiler import Profile
from rewardgym.profile.compute.report import BAND_LABELS, TaskSummary
from rewardgym.profile.compute.statistics import ProfileStatistics, compute_statistics
from rewardgym.profile.read.columns import RolloutTable
from rewardgym.profile.read.observer import ProfileObserver
from rewardgym.profile.tuning import Tuning
from rewardgym.profile.write.output import OutputPaths, output_paths, summary_lines
from rewardgym.stats.tinterval import t_interval

__all__ = [
    "BAND_LABELS",
    "CompletionSummary",
    "OutputPaths",
    "Profile",
    "ProfileObserver",
    "ProfileResult",
    "ProfileStatistics",
    "RolloutTable",
    "TaskSummary",
    "Tuning",
    "compute_statistics",
    "output_paths",
    "profile_files",
    "profile_results",
    "profile_rows",
    "summary_lines",
    "t_interval",
]
