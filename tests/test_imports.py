"""Every module imports first thing in a fresh interpreter, and ``import callwright``
imports the model adapters eagerly: no import cycle is held apart by a lazy hook."""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import json
import os
import pkgutil
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

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


SRC = Path(callwright.__file__).parent


def _module_of(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(path: Path, *, runtime: bool) -> set[str]:
    """The callwright modules ``path`` imports: all of them, lazy imports in functions
    and those only type checkers see included; ``runtime``: those importing ``path``
    runs (at module level, not under ``if TYPE_CHECKING:``)."""
    module = _module_of(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    if runtime:
        for node in ast.walk(tree):
            typing_only = isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            if typing_only or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m.startswith("callwright.") and _exists(m)}


def _exists(module: str) -> bool:
    relative = Path(*module.split(".")[1:])
    return (SRC / relative).with_suffix(".py").exists() or (SRC / relative).is_dir()


def _room(name: str) -> list[Path]:
    return sorted((SRC / name).glob("*.py"))


def _climbs(paths: list[Path], above: set[str], *, runtime: bool = False) -> list[str]:
    return sorted(
        f"{path.relative_to(SRC)}: {module}"
        for path in paths
        for module in _imported(path, runtime=runtime)
        if module.split(".")[1] in above
    )


def test_the_store_imports_nothing_above_it() -> None:
    """The journal sits below the run: it gives a segment's ``RunStart`` and recorder,
    and the run is made above it (``callwright._journaled``)."""
    assert _climbs(_room("store"), {"run", "server", "wire", "durable", "_journaled"}) == []


def test_what_the_store_imports_imports_nothing_above_it_either() -> None:
    """Followed module to module, as importing the store runs them: a climb through a
    module beside the store counts too. (The toolbox's delegate tool makes an ``Agent``
    for an anonymous sub-agent, in a function: the run's own doing, not the store's.)"""
    above = {"run", "server", "wire", "durable", "_journaled"}
    seen: set[str] = set()
    todo = [_module_of(p) for p in _room("store")]
    climbs = []
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        relative = Path(*module.split(".")[1:])
        path = (SRC / relative).with_suffix(".py")
        path = path if path.exists() else SRC / relative / "__init__.py"
        for imported in _imported(path, runtime=True):
            if imported.split(".")[1] in above:
                climbs.append(f"{module}: {imported}")
            elif imported != "callwright":
                todo.append(imported)
    assert climbs == []


def test_the_durable_layer_does_not_import_the_server() -> None:
    assert _climbs(_room("durable"), {"server"}) == []


def test_the_layer_check_sees_a_climb() -> None:
    """The check above is not vacuous: the server's start does climb to the run."""
    assert "server/_start.py: callwright.run" in _climbs(_room("server"), {"run"})
