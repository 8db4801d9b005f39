"""One object that watches a ``profile_files`` run: the single way a caller above the profile (``gym eval
profile --report``'s analysis) takes part in it.

Contract of :class:`ProfileObserver` (subclass it and override what you need; every default does nothing):

- :attr:`~ProfileObserver.row_hook` — a :class:`~rewardgym.profile.read.chunks.RowHook` run by the
  rollouts reader on every row of the profile's own parse (None: none); what it made of each chunk comes
  back to :meth:`~ProfileObserver.after_read`;
- :meth:`~ProfileObserver.while_reading` — called once in this process while the workers read (after they
  are forked: a thread or an import started now is not copied into them);
- :meth:`~ProfileObserver.after_read` ``(parts, input_rows)`` — once both files are read and their rows
  checked, with the row hook's parts; it may return a callable, called right after. With
  :attr:`~ProfileObserver.keep_parts` false the profile drops the parts before that call (the observer
  holds what it needs; a fork then does not keep them alive); true, they are the result's ``row_parts``;
- :meth:`~ProfileObserver.before_writing` — once the profile's own checks (alignment) have passed, before
  its first file is written.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rewardgym.profile.read.chunks import RowHook


class ProfileObserver:
    """Watches one ``profile_files`` run (see module doc); the base class watches nothing."""

    row_hook: RowHook | None = None
    keep_parts: bool = True
    """Whether the row hook's parts stay in the result (``ProfileResult.row_parts``)."""

    def while_reading(self) -> None:
        """Work for this process while the profile's workers read."""

    def after_read(self, parts: tuple[Any, ...], input_rows: int) -> Callable[[], object] | None:
        """Take the row hook's parts (one per rollouts chunk, in file order) and the input row count."""
        return None

    def before_writing(self) -> None:
        """The profile is checked and about to write its first file."""
