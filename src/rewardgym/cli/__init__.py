"""The ``gym`` command-line interface.

Ctrl-C in the first moments of ``gym`` (while its modules are imported, before :func:`.main.main` has its
handlers in place) ends the command with ``Interrupted.`` and exit code 130, as later, not with a
traceback: when this package is imported by the ``gym`` / ``ng`` console scripts or ``python -m rewardgym``, a
SIGINT handler that does just that is installed first; :func:`.main.main` puts Python's own back once it
can turn the ``KeyboardInterrupt`` into that message itself. Imported as a library, nothing changes.
"""

import os
import signal
import sys
from types import FrameType


def _interrupted_early(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("Interrupted.\n")
    os._exit(130)


_ENTRY = sys.argv[0] if sys.argv else ""
if os.path.basename(_ENTRY) in ("gym", "ng") or _ENTRY.endswith(os.path.join("rewardgym", "__main__.py")):
    signal.signal(signal.SIGINT, _interrupted_early)
