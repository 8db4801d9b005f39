"""The ``gym`` command-line interface."""
