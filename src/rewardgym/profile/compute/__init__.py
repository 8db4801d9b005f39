"""Phase 2 of a profile: columns → every statistic (the join, per task, agent and repeat).

Imports ``read``, never ``write``.
"""
