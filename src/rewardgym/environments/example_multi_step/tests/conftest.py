"""Fixtures of the HTTP tests: servers on real 127.0.0.1 ports (``serve``) and the stub model (``stub``).

They come from the repository's ``tests/stubs``. That folder is outside mypy's checked tree, so it is imported
dynamically (mypy would otherwise type-check it from here); the repository root is put on ``sys.path`` when
pytest was started without it (``pytest src/...`` rather than ``python -m pytest``).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

_REPO = Path(__file__).resolve().parents[5]
if (_REPO / "tests" / "stubs").is_dir() and str(_REPO) not in sys.path:
    sys.path.append(str(_REPO))

_fixtures = importlib.import_module("tests.stubs.fixtures")
serve = _fixtures.serve
stub = _fixtures.stub
