"""The config document our head registry serves at ``/global_config_dict_yaml`` (for NeMo Gym's collector).

NeMo Gym 0.7.0's ``gym eval run --no-serve`` fetches ``GET <head>/global_config_dict_yaml`` — a JSON string
whose text is YAML — and routes every request by instance name from it (docs/reference/nemo_gym_interop.md
§3). NeMo Gym serves its whole resolved config there, API keys included. We serve a document of the same
shape built only from what a collector needs, **with every secret removed**:

* one block per instance, ``<instance>: {<kind>: {<implementation>: {host, port, …settings}}}``, plus
  ``head_server: {host, port}``;
* removed from each instance's settings: every key that names a secret (:func:`~rewardgym.config.secrets.
  is_secret_key`: ``*api_key``, ``*token``, ``*secret``, ``*password``, ``authorization`` …), every
  ``*headers`` block (credentials travel there under arbitrary names), every ``*url`` / ``*urls`` value
  (upstream URLs, which may carry a token in their path), our own plumbing (``peers``,
  ``log_dir``, ``http``), and every value — string or mapping key — that holds a secret value known to the
  supervisor in any encoding, a credential shape (``sk-…``, ``Bearer …``, ``api_key=…``) or a URL with
  ``user:password@``. Removed means absent: no ``***`` placeholder is served;
* for each agent, the **environment-server relay** NeMo Gym 0.7.0's collector requires in front of an agent
  (it dispatches every row to ``<relay>/run`` and asks ``<relay>/aggregate_metrics``): an instance named
  by NeMo Gym's rule (:mod:`rewardgym.launch.relay_names`) of type ``environment_servers`` /
  ``legacy_agent`` whose ``agent_server`` names the agent and whose host and port **are the agent's
  own**. NeMo Gym's ``legacy_agent`` relays both calls to its agent byte for byte, so pointing the relay at
  the agent gives the collector the same answers without an extra process or hop; the agent serves
  ``/run`` and ``/aggregate_metrics`` itself.

String values are escaped so that NeMo Gym's OmegaConf reads them back as the same literal text (``${``
gets a backslash before it). The document is built once per head (the instances and their ports do not
change while it runs).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rewardgym.config.secrets import is_secret_key, redact_text, url_credentials
from rewardgym.launch.child_spec import ChildSpec
from rewardgym.launch.relay_names import environment_server_names

AGENT_KIND = "responses_api_agents"
ENVIRONMENT_KIND = "environment_servers"
RELAY_IMPLEMENTATION = "legacy_agent"
"""NeMo Gym 0.7.0's name of the opaque ``/run`` relay (rows collected through it carry it as
``_ng_result_type``)."""
_PLUMBING_KEYS = frozenset({"peers", "log_dir", "http"})
_DROPPED_SUFFIXES = ("headers", "url", "urls")
"""Header blocks carry credentials under arbitrary names; upstream URLs may hold a token in their path
(``…/key/<token>/v1``), which no pattern can tell from a route. A collector needs neither."""


class _Scrubber:
    """Removes secrets from one instance's settings (see the module docstring)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = frozenset(s for s in secrets if isinstance(s, str) and s)

    def leaks(self, text: str) -> bool:
        """Whether ``text`` holds a known secret value, a credential shape or URL credentials."""
        return redact_text(text, self._secrets) != text or url_credentials(text) is not None

    def _drops(self, key: Any) -> bool:
        if not isinstance(key, str):
            return False
        norm = key.strip().lower().replace("-", "_")
        return is_secret_key(key) or norm.endswith(_DROPPED_SUFFIXES) or self.leaks(key)

    def scrub(self, value: Any) -> tuple[bool, Any]:
        """``(keep, cleaned)`` for one value; ``keep`` is false for a value that must not be served at all."""
        if isinstance(value, Mapping):
            cleaned: dict[str, Any] = {}
            for key, item in value.items():
                if self._drops(key):
                    continue
                keep, scrubbed = self.scrub(item)
                if keep:
                    cleaned[str(key)] = scrubbed
            return True, cleaned
        if isinstance(value, list | tuple):
            items = [self.scrub(item) for item in value]
            return True, [scrubbed for keep, scrubbed in items if keep]
        if isinstance(value, str):
            return not self.leaks(value), _literal(value)
        if value is None or isinstance(value, bool | int | float):
            return True, value
        # Anything else (a path object, …) is served as its text, under the same check.
        text = str(value)
        return not self.leaks(text), _literal(text)


def _literal(text: str) -> str:
    """``text`` as OmegaConf reads it back verbatim: NeMo Gym loads the document with OmegaConf, which would
    take a resolved value containing ``${`` for an interpolation (and fail on resolving it)."""
    return text.replace("${", "\\${")


def config_document(specs: Iterable[ChildSpec], *, head_host: str, head_port: int) -> dict[str, Any]:
    """The NeMo Gym-shaped, secret-free config document of the running instances."""
    specs = list(specs)
    secrets = {secret for spec in specs for secret in spec.secrets}
    scrubber = _Scrubber(secrets)
    document: dict[str, Any] = {"head_server": {"host": head_host, "port": head_port}}
    for spec in specs:
        _keep, settings = scrubber.scrub(
            {k: v for k, v in spec.config.items() if k not in _PLUMBING_KEYS and k != "name"}
        )
        settings["host"] = spec.host
        settings["port"] = spec.port
        implementation = spec.implementation if not scrubber.leaks(spec.implementation) else "server"
        document[spec.name] = {spec.kind: {implementation: settings}}
    agents = {spec.name: spec.implementation for spec in specs if spec.kind == AGENT_KIND}
    known: list[str] = []
    if any(":" in implementation for implementation in agents.values()):  # a module:Class has no type name
        from rewardgym.registry import available

        known = available(AGENT_KIND)
    # The same names our collector writes into its rows (launch.relay_names), NeMo Gym 0.7.0's rule.
    relays = environment_server_names(agents, taken=set(document), known_types=known)
    for spec in specs:
        if spec.kind != AGENT_KIND:
            continue
        relay = relays[spec.name]
        document[relay] = {
            ENVIRONMENT_KIND: {
                RELAY_IMPLEMENTATION: {
                    "host": spec.host,
                    "port": spec.port,
                    "agent_server": {"type": AGENT_KIND, "name": spec.name},
                }
            }
        }
    return document


def document_body(document: Mapping[str, Any]) -> bytes:
    """The HTTP body NeMo Gym's client reads: a JSON string holding the document as YAML."""
    import orjson
    import yaml

    text = yaml.safe_dump(dict(document), sort_keys=False, default_flow_style=False)
    return orjson.dumps(text)
