"""``xlam_fc``: Salesforce xLAM function calling (single turn; the tools are not executed).

:mod:`.verifier` compares the model's function calls with the row's ``expected_answers`` by exact name
and argument-subset equality; reward 1.0 only when every expected call is matched and the model made no
other call. Registration as a server is added separately on top of these pure modules.
"""
