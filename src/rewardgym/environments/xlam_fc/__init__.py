"""``xlam_fc``: Salesforce xLAM function calling (single turn; the tools are not executed).

:mod:`.verifier` compares the model's function calls with the row's ``expected_answers`` by exact name
and argument-subset equality; reward 1.0 only when every expected call is matched and the model made no
other call. :mod:`.app` serves it (imported here so that the registry finds ``resources_servers/xlam_fc``).
"""

from rewardgym.environments.xlam_fc.app import XlamFcServer

__all__ = ["XlamFcServer"]
