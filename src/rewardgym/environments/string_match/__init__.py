"""``string_match``: does the policy's free-form answer match ``expected_answer``?

The answer is extracted by the row's ``extraction_mode`` (boxed, final answer line, last line, whole text)
and compared with the NeMo RL string-match grader (normalised, numeric and LaTeX-tolerant; no format reward).
Pure logic: :mod:`.verifier` (models, extraction, ``verify``) and :mod:`.grader`; :mod:`.app` serves them
(imported here so that the registry finds ``resources_servers/string_match``).
"""

from rewardgym.environments.string_match.app import StringMatchServer

__all__ = ["StringMatchServer"]
