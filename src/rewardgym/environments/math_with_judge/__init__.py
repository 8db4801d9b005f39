"""``math_with_judge``: is the policy's final math answer symbolically equivalent to the gold answer?

math-verify (0.8.0, as pinned by NeMo Gym) compares ``\\boxed{expected}`` with the response text in a
killable child process; an optional LLM judge (off in the default config) rules on library failures.
Modules: :mod:`.verifier` (models + ``verify``), :mod:`.library` (math-verify check), :mod:`.killable` and
:mod:`.fork_worker` (killable children forked from a warm single-threaded helper), :mod:`.judge` (judge
prompt, verdict, ``JudgeError``), :mod:`.metrics` (aggregate-metric intent) and :mod:`.app` (the server,
imported here so that the registry finds ``resources_servers/math_with_judge``).
"""

from rewardgym.environments.math_with_judge.app import MathWithJudgeServer

__all__ = ["MathWithJudgeServer"]
