"""``gym eval profile``: NeMo Gym 0.7.0-identical reward profiles of a rollout collection, streaming and fast.

Public API::

    result = profile_files(inputs, rollouts, allow_partial=False)   # writes the three files
    result = profile_rows(rows, results, allow_partial=False)       # in memory; result.task_rows
    result = profile_results(verify_results, agent="agent")         # /aggregate_metrics: results only
    result.agent_metrics, result.repeat_level_metrics, result.completion, result.summary

    stats = compute_statistics(table, fan_out)   # the pure statistics layer (see statistics.py)

Layering: this package reads files only (``rewardgym.io``; the key names of ``rewardgym.protocol.keys``
are repeated in :mod:`.extract` so that a profile run does not import pydantic); it never imports
servers or collection code. See ``docs/profile.md`` for the user-facing description of every output.
"""

from rewardgym.profile.align import CompletionSummary
from rewardgym.profile.api import ProfileResult, profile_files, profile_results, profile_rows
from rewardgym.profile.columns import RolloutTable
from rewardgym.profile.output import OutputPaths, output_paths, summary_lines
from rewardgym.profile.profiler import Profile
from rewardgym.profile.report import BAND_LABELS, TaskSummary
from rewardgym.profile.statistics import ProfileStatistics, compute_statistics
from rewardgym.profile.tinterval import t_interval
from rewardgym.profile.tuning import Tuning

__all__ = [
    "BAND_LABELS",
    "CompletionSummary",
    "OutputPaths",
    "Profile",
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
