"""Errors raised by the model layer.

Contract: every error here is a :class:`~rewardgym.errors.RewardGymError`, so the CLI prints it as one line.
A model *server* maps :class:`UnsupportedRequestError` to HTTP 400 (the caller sent something the adapter
cannot translate) and :class:`UpstreamReplyError` to HTTP 502 (the upstream model replied with garbage).
Messages name the offending field (``input[3].content[0]``, ``metadata.extra_body``) and never hold a secret.
"""

from __future__ import annotations

from rewardgym.errors import DataError, RewardGymError, ServerError


class UnsupportedRequestError(DataError):
    """A Responses request uses something the Chat Completions adapter cannot translate."""


class UpstreamReplyError(ServerError):
    """The upstream model server answered with something that is not a usable Chat Completion."""


class ModelFetchError(RewardGymError):
    """The embedded model file could not be downloaded, extracted or verified."""
