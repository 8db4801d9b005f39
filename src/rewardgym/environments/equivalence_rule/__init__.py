"""``equivalence_rule``: rule-based equivalence of the whole answer text with ``expected_answer``.

Used for long-context MRCR-style retrieval and counting tasks. The rule (``exact``, ``seq_match`` or
``weighted_seq_match``) comes from the environment config; pure logic lives in :mod:`.verifier`, and
:mod:`.app` serves it (imported here so that the registry finds ``resources_servers/equivalence_rule``).
"""

from rewardgym.environments.equivalence_rule.app import EquivalenceRuleServer

__all__ = ["EquivalenceRuleServer"]
