"""Trajectory capture (NeMo Gym 0.7.0's observability, docs/reference/health_check.md §1).

:mod:`~rewardgym.observe.capture` is the model servers' per-call record and its file store,
:mod:`~rewardgym.observe.trajectory` the agent's trajectory record, :mod:`~rewardgym.observe.projection`
the collector's join of both onto a rollout row (``ng_model_call_capture``, ``ng_trajectory``,
``ng_perf``). Nothing here imports a server: the layer sits just above ``io``/``config``.
"""
