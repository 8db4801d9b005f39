"""``example_session_state_mgmt``: a stateful counter kept per session (per rollout) on the server.

``seed_session`` starts the counter at the row's ``initial_count``; the model adds to it with
``increment_counter`` and reads it with ``get_counter_value``; the reward is 1.0 iff the final counter equals
the row's ``expected_count``. It demonstrates the session-cookie plumbing between agent and environment.
Pure logic lives in :mod:`.verifier` and :mod:`.tools` (state is the per-session ``dict`` the server keeps);
:mod:`.app` serves them (imported here so that the registry finds
``resources_servers/example_session_state_mgmt``).
"""

from rewardgym.environments.example_session_state_mgmt.app import ExampleSessionStateMgmtServer

__all__ = ["ExampleSessionStateMgmtServer"]
