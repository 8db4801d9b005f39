"""Phase 1 of a profile: both files (or in-memory rows) → whole-file columns.

Imports no other phase.
"""
