"""``example_multi_step``: multi-step tool use — look up a term's synonyms' values, report them in order.

The system prompt lists "The term 'X' has a synonym 'Y'" lines; the model must find the synonyms of the term
relevant to the user query, fetch each value with ``get_synonym_value`` and report the values, in list
order, with ``extract_synonym_values``. The reward is 1.0 iff the last reported list equals the expected one.
Pure logic lives in :mod:`.verifier` and :mod:`.tools`; :mod:`.app` serves them (imported here so that the
registry finds ``resources_servers/example_multi_step``).
"""

from rewardgym.environments.example_multi_step.app import ExampleMultiStepServer

__all__ = ["ExampleMultiStepServer"]
