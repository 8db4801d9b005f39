"""The implementation registry: decorator, lazy entries, naming convention and user module:Class."""

from __future__ import annotations

import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from rewardgym import registry
from rewardgym.errors import ConfigError


def _kind() -> str:
    return f"test_kind_{uuid.uuid4().hex[:8]}"


def _module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str, name: str | None = None) -> str:
    """Write a module into a fresh sys.path entry and return its name (unique per test)."""
    name = name or f"rg_user_mod_{uuid.uuid4().hex[:8]}"
    root = tmp_path / "pkgroot"
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    (root / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))
    return name


def test_register_and_lookup() -> None:
    kind = _kind()

    @registry.register(kind, "alpha")
    class Alpha:
        pass

    assert registry.lookup(kind, "alpha") is Alpha
    assert registry.available(kind) == ["alpha"]
    assert registry.is_known(kind, "alpha")
    assert not registry.is_known(kind, "beta")


def test_registering_a_different_class_under_a_taken_name_fails() -> None:
    kind = _kind()
    registry.register_class(kind, "a", int)
    with pytest.raises(ValueError, match="already registered"):
        registry.register_class(kind, "a", str)


def test_unknown_name_lists_available_and_suggests() -> None:
    kind = _kind()
    registry.register_class(kind, "simple_agent", dict)
    with pytest.raises(ConfigError) as err:
        registry.lookup(kind, "simple_agnt")
    message = str(err.value)
    assert "did you mean 'simple_agent'" in message
    assert "available: simple_agent" in message
    assert "module.path:ClassName" in message


def test_user_class_module_colon_class(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _module(
        tmp_path, monkeypatch, "class Base:\n    pass\n\nclass Mine(Base):\n    class Inner:\n        pass\n"
    )
    kind = _kind()
    cls = registry.lookup(kind, f"{mod}:Mine")
    assert cls.__name__ == "Mine"
    assert cls.__module__ == mod
    assert registry.lookup(kind, f"{mod}:Mine.Inner").__qualname__ == "Mine.Inner"
    base = sys.modules[mod].Base
    assert registry.lookup(kind, f"{mod}:Mine", base) is cls
    with pytest.raises(ConfigError, match="is not a subclass of"):
        registry.lookup(kind, f"{mod}:Mine.Inner", base)


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        (":Nope", "written 'module.path:ClassName'"),
        ("rg_no_such_module_xyz:Thing", "cannot import module 'rg_no_such_module_xyz'"),
    ],
)
def test_bad_user_targets(target: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        registry.lookup(_kind(), target)


def test_user_target_missing_attribute_or_not_a_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mod = _module(tmp_path, monkeypatch, "VALUE = 3\n")
    with pytest.raises(ConfigError, match="has no attribute 'Missing'"):
        registry.lookup(_kind(), f"{mod}:Missing")
    with pytest.raises(ConfigError, match="is not a class"):
        registry.lookup(_kind(), f"{mod}:VALUE")


def test_lazy_entry_imports_only_on_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _module(tmp_path, monkeypatch, "class Lazy:\n    pass\n")
    kind = _kind()
    registry.register_lazy(kind, "lazy", f"{mod}:Lazy")
    assert registry.available(kind) == ["lazy"]
    assert registry.is_known(kind, "lazy")
    assert mod not in sys.modules
    assert registry.lookup(kind, "lazy").__name__ == "Lazy"
    assert mod in sys.modules
    with pytest.raises(ValueError, match=r"module\.path:Class"):
        registry.register_lazy(kind, "bad", "no_colon")


def test_convention_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = f"rg_conv_pkg_{uuid.uuid4().hex[:8]}"
    kind = _kind()
    root = tmp_path / "convroot"
    (root / pkg).mkdir(parents=True)
    (root / pkg / "__init__.py").write_text(
        f"from rewardgym import registry\nregistry.register_lazy({kind!r}, 'declared', '{pkg}.declared:D')\n"
    )
    (root / pkg / "declared.py").write_text("class D:\n    pass\n")
    (root / pkg / "self_registering.py").write_text(
        f"from rewardgym import registry\n\n"
        f"@registry.register({kind!r}, 'self_registering')\nclass S:\n    pass\n"
    )
    (root / pkg / "silent.py").write_text("class Nothing:\n    pass\n")
    (root / pkg / "_private.py").write_text("")
    monkeypatch.syspath_prepend(str(root))
    registry.register_convention(kind, pkg)

    assert registry.available(kind) == ["declared", "self_registering", "silent"]
    assert f"{pkg}.self_registering" not in sys.modules  # listing imports nothing but the package
    assert registry.lookup(kind, "self_registering").__name__ == "S"
    assert registry.lookup(kind, "declared").__name__ == "D"
    with pytest.raises(ConfigError, match="does not register an implementation 'silent'"):
        registry.lookup(kind, "silent")
    with pytest.raises(ConfigError, match=r"unknown test_kind_\w+ implementation 'absent'"):
        registry.lookup(kind, "absent")


def test_convention_module_with_broken_dependency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = f"rg_conv_pkg_{uuid.uuid4().hex[:8]}"
    kind = _kind()
    root = tmp_path / "convroot"
    (root / pkg).mkdir(parents=True)
    (root / pkg / "__init__.py").write_text("")
    (root / pkg / "needs_dep.py").write_text("import rg_missing_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(root))
    registry.register_convention(kind, pkg)
    with pytest.raises(
        ConfigError, match=r"importing \S+\.needs_dep failed: No module named 'rg_missing_dependency_xyz'"
    ):
        registry.lookup(kind, "needs_dep")


def test_server_kinds_list_builtin_packages_without_importing_them() -> None:
    from rewardgym.config.assets import PACKAGE_ROOT

    shipped = {p.parent.name for p in PACKAGE_ROOT.glob("environments/*/__init__.py")}
    before = set(sys.modules)
    assert shipped <= set(registry.available("resources_servers"))
    imported = {m for m in set(sys.modules) - before if m.startswith("rewardgym.environments.")}
    assert imported == set()
