"""Model adapters and model servers.

- Pure logic (no sockets): the Responses ⇄ Chat Completions translation (:mod:`.chat_adapter`), the
  pass-through request builders (:mod:`.passthrough`), their configuration (:mod:`.config`).
- The embedded local model: fetch + llama.cpp child launcher (:mod:`rewardgym.models.embedded`).
- The model servers, found by the registry by convention (``rewardgym.models.<type>``): :mod:`.openai_model`,
  :mod:`.vllm_model` and :mod:`.embedded_model` (HTTP shells around the pure logic, built on
  :class:`rewardgym.servers.model.ModelServer`; shared parts in :mod:`.chat_server` and :mod:`.upstream`).
"""
