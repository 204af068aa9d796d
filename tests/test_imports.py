"""Every module imports first thing in a fresh interpreter, and ``import callwright``
imports the model adapters eagerly: no import cycle is held apart by a lazy hook."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
from packaging.requirements import Requirement

import callwright
import callwright.models


def all_modules() -> list[str]:
    def fail(name: str) -> None:
        raise ImportError(f"cannot walk {name}")

    found = pkgutil.walk_packages(callwright.__path__, "callwright.", onerror=fail)
    return sorted(m.name for m in found)


def optional_packages() -> set[str]:
    """Import names of the packages callwright's extras bring (``pip install callwright[x]``)."""
    names = set()
    for line in importlib.metadata.requires("callwright") or []:
        requirement = Requirement(line)
        if requirement.marker is not None and "extra" in str(requirement.marker):
            names.add(requirement.name.replace("-", "_").lower())
    return names


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
MODULES = all_modules()


@pytest.fixture(scope="module")
def imports() -> dict[str, subprocess.CompletedProcess[str]]:
    """Each module imported first in its own interpreter, as many at a time as there are cores."""
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        done = pool.map(lambda module: fresh(f"import {module}; import callwright"), MODULES)
        return dict(zip(MODULES, done, strict=True))


@pytest.mark.parametrize("module", MODULES)
def test_every_module_imports_first_in_a_fresh_interpreter(
    module: str, imports: dict[str, subprocess.CompletedProcess[str]]
) -> None:
    done = imports[module]
    if done.returncode != 0:
        missing = MISSING.search(done.stderr)
        package = missing.group(1).split(".")[0] if missing else None
        if package in optional_packages() and importlib.util.find_spec(package or "") is None:
            pytest.skip(f"{module} needs the optional package {package}, not installed here")
    assert done.returncode == 0, done.stderr


def test_import_callwright_imports_every_model_adapter_eagerly() -> None:
    expected = sorted(
        f"callwright.models.{m.name}" for m in pkgutil.iter_modules(callwright.models.__path__)
    )
    code = (
        "import json, sys, callwright\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('callwright.models.'))\n"
        "hook = '__getattr__' in vars(sys.modules['callwright.models'])\n"
        "print(json.dumps({'loaded': loaded, 'hook': hook}))"
    )
    done = fresh(code)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["hook"] is False
    assert report["loaded"] == expected


def test_the_models_import_without_their_sdks_and_name_the_extra_when_made() -> None:
    code = (
        "import sys\n"
        "for sdk in ('openai', 'anthropic', 'google.genai', 'xllamacpp'):\n"
        "    sys.modules[sdk] = None  # as if not installed: importing it raises\n"
        "import callwright\n"
        "from callwright.models import AnthropicModel, GeminiModel, OpenAIModel\n"
        "for adapter in (OpenAIModel, AnthropicModel, GeminiModel):\n"
        "    try:\n"
        "        adapter()\n"
        "    except ImportError as exc:\n"
        "        print(exc)\n"
    )
    done = fresh(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "OpenAIModel needs the openai package: pip install 'callwright[openai]'",
        "AnthropicModel needs the anthropic package: pip install 'callwright[anthropic]'",
        "GeminiModel needs the google-genai package: pip install 'callwright[gemini]'",
    ]
