"""``python -m rewardgym`` and the ``gym`` / ``ng`` console scripts.

A Ctrl-C that lands while the CLI's modules are still being imported — before any handler of ours is in
place — ends the command with ``Interrupted.`` and exit code 130, as it does later, not with a traceback.
"""

import sys


def run() -> None:
    try:
        from rewardgym.cli.main import main

        code = main()
    except KeyboardInterrupt:  # before main's own handler, or one main re-raised from a callback late
        sys.stderr.write("Interrupted.\n")
        sys.exit(130)
    sys.exit(code)


if __name__ == "__main__":
    run()
