"""Servers: construction (config → server object → FastAPI app) and process launching.

Layout (one job per module):
- ``config``      — :class:`ServerConfig` (common fields), :class:`HttpClientConfig`, :class:`ServerRef`;
- ``base``        — :class:`BaseServer` and ``build_app`` (liveness, error bodies, session cookie, auth,
  size limit, JSON logs);
- ``http``        — the pooled outbound client with bounded retries; ``errors`` — what maps to 4xx/5xx;
- ``resources``   — :class:`ResourcesServer` (seed_session / verify / tools / sessions / metrics), with
  ``tools`` (the ``@tool`` decorator), ``sessions`` and ``metrics`` (pass@k …);
- ``model``       — :class:`ModelServer` (OpenAI-compatible endpoints, SSE replay in ``sse``);
  ``openai_model`` — the pass-through model server;
- ``registry_server`` — the head registry; ``supervisor`` + ``child`` — process launching;
  ``launch`` — uvicorn settings and an in-process runner; ``spec`` — what a child receives.

The full design is documented in ``docs/servers.md``.
"""
