"""Error types shared by every layer.

Contract: any error a *user* can cause (bad file, bad flag, bad config, unreachable server) is raised as a
:class:`RewardGymError` subclass whose message is one readable line (or a short block) that names the file
and line, or the field, at fault. The CLI prints ``Error: <message>`` on stderr and exits with
:attr:`RewardGymError.exit_code` — never a traceback (``--debug`` shows one). Messages must never contain a
secret; :func:`rewardgym.config.secrets.redact_text` is applied by the CLI as a last line of defence.
"""

from __future__ import annotations


class RewardGymError(Exception):
    """Base class for errors caused by input, configuration or environment (not by a bug)."""

    exit_code: int = 1


class UsageError(RewardGymError):
    """The command line itself is wrong (unknown flag, bad value): exit code 2."""

    exit_code = 2


class ConfigError(RewardGymError):
    """The resolved configuration is invalid (malformed YAML, missing values, dangling references)."""


class DataError(RewardGymError):
    """An input data file is malformed (names file and line)."""


class ServerError(RewardGymError):
    """A server could not be started, reached or used."""
