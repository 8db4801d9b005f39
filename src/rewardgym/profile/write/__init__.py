"""Phase 3 of a profile: statistics → the three output files, crash-safely.

Imports ``read`` and ``compute``.
"""
