"""Servers: the server framework (config → server object → FastAPI app).

Layout (one job per module):
- ``config``      — :class:`ServerConfig` (common fields) and :class:`ServerRef`;
- ``base``        — :class:`BaseServer` and ``build_app`` (liveness, error bodies, session cookie, auth,
  size limit, JSON logs in ``logs``); ``app`` — :class:`ServerApp`, the FastAPI app with direct dispatch
  of simple routes; ``middleware`` — the per-request gate; ``cookies`` — the signed session cookie;
  ``deadline`` — the request read deadline; ``wire`` — bodies parsed and answered by pydantic-core;
- ``errors``      — :class:`ApiError` (a handler's deliberate 4xx/5xx) and :class:`JudgeError`;
- ``resources``   — :class:`ResourcesServer` (seed_session / verify / tools / sessions / metrics), with
  ``tools`` (the ``@tool`` decorator) and ``sessions``; its metrics (pass@k …) are ``rewardgym.metrics``;
- ``model``       — :class:`ModelServer` (OpenAI-compatible endpoints, SSE replay in ``sse``);
  the concrete model servers (``openai_model``, ``vllm_model``, ``embedded_model``) live in
  ``rewardgym.models``.

Neighbours: the outbound HTTP client is ``rewardgym.http`` (below this package); process launching
(supervisor, fork server, head registry, ``ThreadedServer``) is ``rewardgym.launch`` (above it). The full
design is documented in ``docs/servers.md``.
"""
