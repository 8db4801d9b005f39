"""``instruction_following``: does the answer follow IFEval/IFBench-style verifiable instructions?

Each row lists instruction ids (word counts, titles, no commas, paragraph layout, ...) with arguments;
:mod:`.verifier` checks the last output item's text against each with the registry in
:mod:`.instructions` and returns 1.0 when all are followed (``binary``) or the share followed
(``fraction``). :mod:`.app` serves it (imported here so that the registry finds
``resources_servers/instruction_following``).
"""

from rewardgym.environments.instruction_following.app import InstructionFollowingServer

__all__ = ["InstructionFollowingServer"]
