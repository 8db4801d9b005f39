"""Implementation registry: named classes for the extension points (servers, metrics, backends, …).

A *kind* is any string naming an extension point; the server kinds use the config spelling
(``resources_servers``, ``responses_api_models``, ``responses_api_agents``). Higher layers contribute
implementations; this module imports nothing of them (only :mod:`rewardgym.errors`).

How :func:`lookup` finds ``(kind, name)``, first match wins:

1. a class registered with ``@register(kind, name)`` (or :func:`register_class`);
2. a lazy entry ``register_lazy(kind, name, "module.path:Class")``: the module is imported only now;
3. the naming convention of the kind (:func:`register_convention`): for the server kinds the packages
   ``rewardgym.environments``, ``rewardgym.models`` and ``rewardgym.agents``. The convention package is
   imported first (its ``__init__`` is the cheap place for ``register_lazy`` calls), then, if still unknown,
   the module ``<package>.<name>``, which registers itself on import with ``@register``;
4. a user class when ``name`` is written ``module.path:Class`` (the module must be importable, from
   ``sys.path`` or else from the working directory).

Anything else is a :class:`~rewardgym.errors.ConfigError` listing the available names. :func:`available`
and :func:`is_known` never import implementation modules (only the convention package itself).
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
import pkgutil
import re
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar, overload

from rewardgym.errors import ConfigError

T = TypeVar("T")

_lock = threading.Lock()
_registered: dict[str, dict[str, type[Any]]] = {}
_lazy: dict[str, dict[str, str]] = {}
_conventions: dict[str, str] = {
    "resources_servers": "rewardgym.environments",
    "responses_api_models": "rewardgym.models",
    "responses_api_agents": "rewardgym.agents",
}
_loaded_packages: set[str] = set()
_TARGET_RE = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$")
_NAME_RE = re.compile(r"^[A-Za-z_][\w]*$")


def register_class(kind: str, name: str, cls: type[Any]) -> None:
    """Register ``cls`` as ``(kind, name)``; re-registering the same class (e.g. a reload) is allowed."""
    with _lock:
        existing = _registered.setdefault(kind, {}).get(name)
        if existing is not None and existing is not cls and _qualname(existing) != _qualname(cls):
            raise ValueError(f"{kind} {name!r} is already registered to {_qualname(existing)}")
        _registered[kind][name] = cls


def register(kind: str, name: str) -> Callable[[type[T]], type[T]]:
    """Class decorator: ``@register("resources_servers", "mcqa")``."""

    def decorate(cls: type[T]) -> type[T]:
        register_class(kind, name, cls)
        return cls

    return decorate


def register_lazy(kind: str, name: str, target: str) -> None:
    """Declare ``(kind, name)`` as ``"module.path:Class"`` without importing it yet."""
    if not _TARGET_RE.match(target):
        raise ValueError(f"lazy target {target!r} must be written 'module.path:Class'")
    with _lock:
        _lazy.setdefault(kind, {})[name] = target


def register_convention(kind: str, package: str) -> None:
    """Declare that implementations of ``kind`` live in ``<package>.<name>`` (see the module docstring)."""
    with _lock:
        _conventions[kind] = package
        _loaded_packages.discard(package)


def unregister(kind: str, name: str) -> None:
    """Forget ``(kind, name)`` (registered and lazy); for tests and plugin reloads."""
    with _lock:
        _registered.get(kind, {}).pop(name, None)
        _lazy.get(kind, {}).pop(name, None)


def _qualname(cls: type[Any]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _is_missing_module(exc: ModuleNotFoundError, module: str) -> bool:
    """True when ``exc`` says ``module`` itself (or one of its parents) does not exist."""
    return exc.name is not None and (exc.name == module or module.startswith(exc.name + "."))


def _load_package(kind: str) -> str | None:
    """Import the convention package of ``kind`` once (cheap: it may hold ``register_lazy`` calls)."""
    package = _conventions.get(kind)
    if package is None or package in _loaded_packages:
        return package
    try:
        importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if not _is_missing_module(exc, package):
            raise
    _loaded_packages.add(package)
    return package


def _convention_names(package: str) -> set[str]:
    try:
        spec = importlib.util.find_spec(package)
    except ModuleNotFoundError:
        return set()
    if spec is None or not spec.submodule_search_locations:
        return set()
    return {
        info.name
        for info in pkgutil.iter_modules(list(spec.submodule_search_locations))
        if not info.name.startswith("_") and info.name not in ("configs", "tests")
    }


def available(kind: str) -> list[str]:
    """Every name of ``kind`` that :func:`lookup` knows without ``module:Class``, sorted."""
    package = _load_package(kind)
    names = set(_registered.get(kind, {})) | set(_lazy.get(kind, {}))
    if package is not None:
        names |= _convention_names(package)
    return sorted(names)


def is_known(kind: str, name: str) -> bool:
    """True when :func:`lookup` would find ``name`` (``module:Class`` trusted; nothing imported)."""
    return (":" in name and _TARGET_RE.match(name) is not None) or name in available(kind)


def _import_user_module(module_name: str) -> Any:
    """Import ``module_name``; when its top-level package is not importable, look in the working directory too
    (as ``python -m`` does), so an environment folder written by ``gym env new`` works without installing."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        if not _is_missing_module(exc, module_name) or cwd in sys.path:
            raise
        sys.path.append(cwd)
        return importlib.import_module(module_name)


def _import_target(kind: str, name: str, target: str) -> type[Any]:
    module_name, _, attr_path = target.partition(":")
    try:
        module = _import_user_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"{kind} {name!r}: cannot import module {module_name!r}: {exc}") from None
    obj: Any = module
    for attr in attr_path.split("."):
        if not hasattr(obj, attr):
            raise ConfigError(f"{kind} {name!r}: module {module_name!r} has no attribute {attr_path!r}")
        obj = getattr(obj, attr)
    if not isinstance(obj, type):
        raise ConfigError(f"{kind} {name!r}: {target!r} is not a class")
    return obj


def _from_convention(kind: str, name: str, package: str) -> type[Any] | None:
    if not _NAME_RE.match(name):
        return None
    module_name = f"{package}.{name}"
    try:
        importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _is_missing_module(exc, module_name):
            return None  # no such implementation module
        raise ConfigError(f"{kind} {name!r}: importing {module_name} failed: {exc}") from None
    except ImportError as exc:
        raise ConfigError(f"{kind} {name!r}: importing {module_name} failed: {exc}") from None
    found = _registered.get(kind, {}).get(name)
    if found is None:
        raise ConfigError(
            f"{kind} {name!r}: module {module_name} does not register an implementation {name!r}"
        )
    return found


def _find(kind: str, name: str) -> type[Any]:
    found = _registered.get(kind, {}).get(name)
    if found is not None:
        return found
    package = _load_package(kind)
    found = _registered.get(kind, {}).get(name)
    if found is not None:
        return found
    target = _lazy.get(kind, {}).get(name)
    if target is not None:
        cls = _import_target(kind, name, target)
        register_class(kind, name, cls)
        return cls
    if package is not None and (cls_or_none := _from_convention(kind, name, package)) is not None:
        return cls_or_none
    if ":" in name:
        if not _TARGET_RE.match(name):
            raise ConfigError(f"{kind} {name!r}: a user class is written 'module.path:ClassName'")
        cls = _import_target(kind, name, name)
        register_class(kind, name, cls)
        return cls
    names = available(kind)
    message = f"unknown {kind} implementation {name!r}"
    hint = difflib.get_close_matches(name, names, n=1, cutoff=0.5)
    if hint:
        message += f" (did you mean {hint[0]!r}?)"
    message += "; available: " + (", ".join(names) if names else "none")
    message += "; or give a class of your own as 'module.path:ClassName'"
    raise ConfigError(message)


@overload
def lookup(kind: str, name: str) -> type[Any]: ...
@overload
def lookup(kind: str, name: str, base: type[T]) -> type[T]: ...
def lookup(kind: str, name: str, base: type[Any] | None = None) -> type[Any]:
    """The class for ``(kind, name)`` (see the module docstring); with ``base``, it must subclass it."""
    cls = _find(kind, name)
    if base is not None and not issubclass(cls, base):
        raise ConfigError(f"{kind} {name!r}: {_qualname(cls)} is not a subclass of {_qualname(base)}")
    return cls
