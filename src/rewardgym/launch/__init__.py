"""Process launching: from a loaded config to supervised server processes.

Layout (one job per module):
- ``from_config``  — a :class:`~rewardgym.config.GymConfig` → one :class:`~.child_spec.ChildSpec` per
  instance (and the pre-flight validation); ``child_spec`` — what a child receives, and the head
  registry's instance records;
- ``supervisor``   — starts, probes, supervises and stops the children; ``probe`` — its start-up probes;
- ``forking`` + ``zygote`` — the fork server that imports the server stack once and forks each instance;
  ``child`` — the spawn fallback's entry point (``python -m rewardgym.launch.child``);
- ``registry_server`` — the head registry (a small Starlette app served by the supervisor process);
  ``embedded_head`` — serving it in the supervisor's loop; ``binding`` — where a server may listen;
- ``colocate``     — several instances served by one process (``colocate: true``): a child that serves
  them together, or the supervisor's own process (a serving ``gym eval run``);
- ``serve``        — uvicorn settings, a port check, and :class:`~.serve.ThreadedServer` (in-process
  runner for tests and tools).

It sits above the server framework (``rewardgym.servers``), which never imports it. The full design is
documented in ``docs/servers.md``.
"""
