"""``code_gen``: competitive programming — does the model's Python solution pass the problem's unit tests?

The last fenced code block of the answer runs against LiveCodeBench-style ``unit_tests`` (stdin/stdout or
function-call tests) in a sandboxed child process (no network, CPU/wall/memory/file-size/process limits,
dedicated uid, private temporary folders); the reward is 1.0 iff every test passes.

Modules: :mod:`.verifier` (verify), :mod:`.config`, :mod:`.grading` (comparisons, in the server),
:mod:`.sandbox` and :mod:`.isolation` (launching and confining runs), :mod:`.sandbox_child` (the confined
child) and :mod:`.lcb_execution` (LiveCodeBench execution inside it); :mod:`.app` is the HTTP server
(imported here so that the registry finds ``resources_servers/code_gen``).
"""

from rewardgym.environments.code_gen.app import CodeGenServer

__all__ = ["CodeGenServer"]
