"""Fixtures for the server tests: the FastAPI example and the wire tests' scenario agent,
loaded from their files (neither is an importable package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conformance import conformance_check  # noqa: F401  (checks the module's streams)

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path, name: str) -> ModuleType:
    """The module in ``path``, imported once under ``name``."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def example() -> ModuleType:
    """examples/fastapi_app.py."""
    return _load(ROOT / "examples" / "fastapi_app.py", "callwright_fastapi_example")


@pytest.fixture(scope="session")
def scenarios() -> ModuleType:
    """tests/wire/conftest.py as a module: the agent whose scenarios tests/js/drive.mjs
    plays (``make_agent``), and where the npm clients live (``NODE``, ``JS_DIR``)."""
    return _load(ROOT / "tests" / "wire" / "conftest.py", "callwright_wire_scenarios")
