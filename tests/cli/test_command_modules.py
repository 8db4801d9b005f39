"""The CLI's command-module list: a module that does not exist is an error, never silently skipped."""

from __future__ import annotations

import pytest

from rewardgym.cli import main


def test_every_listed_command_module_is_imported() -> None:
    main._load_commands(None)  # raises if any listed module is missing


def test_a_missing_command_module_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(main, "_COMMAND_MODULES", (*main._COMMAND_MODULES, "rewardgym.cli.no_such_cmd"))
    with pytest.raises(ModuleNotFoundError, match="no_such_cmd"):
        main._load_commands(None)


def test_group_and_command_tables_name_only_listed_modules() -> None:
    listed = set(main._COMMAND_MODULES)
    assert set(main._MODULE_GROUPS) <= listed
    assert set(main._MODULE_COMMANDS) <= listed
