"""Metrics of verify responses, where people look for them.

- ``pass_at_k``         — pass@k, pass@1[avg-of-k] and majority@k of rollouts grouped by task;
- ``key_metrics``       — the headline entries (a family at its highest k, ``mean/*`` by default);
- ``aggregate_metrics`` — the ``/aggregate_metrics`` answer of a resources server: statistics baseline +
  an environment's ``compute_metrics`` + key metrics (the collector's side of that call is
  ``rewardgym.collect.aggregate``);

Pure functions over the protocol layer (the profiler, for the baseline, is imported lazily); servers and
environments import them, never the other way round.
"""
