"""The errors of the curriculum: each one line naming the task, field or file at fault.

Every check runs before any state changes, so a refused call leaves the curriculum exactly as it was
(the in-process API and the HTTP service alike; the service answers them with HTTP 400).
"""

from __future__ import annotations

from rewardgym.errors import DataError


class CurriculumError(DataError):
    """A call the curriculum refuses (unknown task, duplicate report, bad reward, torn state file)."""


class UnknownTask(CurriculumError):
    """A task index outside ``0 … N − 1``."""


class DuplicateReport(CurriculumError):
    """A report for a task that has no served group waiting for its rewards."""


class BadReward(CurriculumError):
    """A reward that is NaN, infinite, outside the declared range, or an empty group."""


class StateFileError(CurriculumError):
    """A state file or journal that is torn, foreign (another dataset) or of an unknown version."""
