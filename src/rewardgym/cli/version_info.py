"""``gym --version --json``: the version and the system it runs on, as one line of JSON (the fields of NeMo
Gym 0.7.0's ``gym --version --json``, ``nemo_gym`` named ``rewardgym``).

Contract: ``{"rewardgym", "python", "python_path", "installation_path", "dependencies": {name: version of
each key dependency that is installed}, "system": {"os", "platform", "architecture", "processor",
"cpu_count", "memory_gb"}}``; nothing that could be a secret (no environment variables, no paths beyond the
interpreter's and the package's).
"""

from __future__ import annotations

import platform
import sys
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as installed_version
from pathlib import Path

import orjson
import psutil

import rewardgym

KEY_DEPENDENCIES = ("aiohttp", "numpy", "omegaconf", "orjson", "pydantic", "pyyaml", "starlette", "typer")


def version_info() -> dict[str, object]:
    """The version document (module docstring)."""
    dependencies = {}
    for name in KEY_DEPENDENCIES:
        try:
            dependencies[name] = installed_version(name)
        except PackageNotFoundError:
            continue
    return {
        "rewardgym": rewardgym.__version__,
        "python": platform.python_version(),
        "python_path": sys.executable,
        "installation_path": str(Path(rewardgym.__file__).resolve().parent),
        "dependencies": dependencies,
        "system": {
            "os": platform.system(),
            "platform": platform.platform(),
            "architecture": platform.machine(),
            "processor": platform.processor(),
            "cpu_count": psutil.cpu_count(),
            "memory_gb": round(psutil.virtual_memory().total / 1024**3, 2),
        },
    }


def version_json() -> str:
    return orjson.dumps(version_info()).decode()
