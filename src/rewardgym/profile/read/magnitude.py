"""Metric values too large to profile: refused by file:line instead of written as ``null`` statistics.

Contract of :func:`check_magnitudes(results, path)`: when a measured metric value of the rollouts lies
outside ``±MAX_MAGNITUDE``, raise a :class:`~rewardgym.errors.DataError` naming ``path:line``, the field
and the value (the first such value in file order); otherwise do nothing.

Why: the statistics square deviations, sum whole columns and widen intervals by Student's t, so values
near the largest double (``1e308``) overflow to infinity — NeMo Gym 0.7.0 then writes ``std`` as ``null``,
a mean of ``null`` and an interval of ``-inf..inf`` without a word. Up to ``1e100`` no statistic can
overflow for any realistic number of rollouts (a squared deviation is at most ``4e200``), and below the
limit the computation is NeMo Gym's, bit for bit. Real metrics (rewards, token counts, seconds) are many
orders of magnitude smaller, so a value beyond it is a bug upstream, reported rather than averaged.

Cost: two numpy reductions over the value column (a few ms for a million rollouts); the rows are only
searched when a value is out of range.
"""

from __future__ import annotations

import numpy as np

from rewardgym.errors import DataError
from rewardgym.profile.read.columns import ResultColumns

MAX_MAGNITUDE = 1e100


def check_magnitudes(results: ResultColumns, path: str) -> None:
    """Raise a :class:`DataError` for the first metric value beyond ``±MAX_MAGNITUDE`` (see module doc)."""
    values = results.values
    if len(values) == 0 or (values.max() <= MAX_MAGNITUDE and values.min() >= -MAX_MAGNITUDE):
        return
    first = int(np.argmax(np.abs(values) > MAX_MAGNITUDE))
    # The row whose values hold ``first``: the last one starting at or before it (a row without values
    # starts where the next one does, so it comes first among equal starts).
    row = int(np.searchsorted(results.value_start, first, side="right")) - 1
    field = results.shapes[int(results.shape[row])][first - int(results.value_start[row])]
    raise DataError(
        f"{path}:{int(results.line[row])}: '{field}' is {float(values[first])!r}, beyond ±{MAX_MAGNITUDE:g}: "
        "the statistics of such values overflow a double (NeMo Gym would write them as null)"
    )
