"""Servers: construction (config → server object → FastAPI app) and process launching.

Layout (one job per module):
- ``config``      — :class:`ServerConfig` (common fields), :class:`HttpClientConfig`, :class:`ServerRef`;
- ``base``        — :class:`BaseServer` and ``build_app`` (liveness, error bodies, session cookie, auth,
  size limit, JSON logs); ``app`` — :class:`ServerApp`, the FastAPI app with direct dispatch of simple
  routes; ``middleware`` — the per-request gate; ``cookies`` — the signed session cookie;
- ``http``        — the pooled outbound client with bounded retries; ``errors`` — what maps to 4xx/5xx;
- ``resources``   — :class:`ResourcesServer` (seed_session / verify / tools / sessions / metrics), with
  ``tools`` (the ``@tool`` decorator), ``sessions`` and ``metrics`` (pass@k …);
- ``model``       — :class:`ModelServer` (OpenAI-compatible endpoints, SSE replay in ``sse``);
  the concrete model servers (``openai_model``, ``vllm_model``, ``embedded_model``) live in
  ``rewardgym.models``;
- ``registry_server`` — the head registry; ``supervisor`` + ``child`` — process launching; ``probe`` — the
  supervisor's start-up probes;
  ``launch`` — uvicorn settings and an in-process runner; ``spec`` — what a child receives.

The full design is documented in ``docs/servers.md``.
"""
