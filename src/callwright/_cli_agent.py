"""The agent a command runs: ``--agent module:name`` or ``path/file.py:name``, or the
demo agent on ``--model``, with ``--mcp``'s servers as toolsets.

Every way this fails is a one-line ``AgentLoadError`` naming the module and the error:
an agent module is the user's code, and its traceback is theirs to ask for (``--debug``).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING

from ._errors import ConfigurationError
from .models.base import Model
from .run import Agent

if TYPE_CHECKING:
    from .toolbox import Toolbox


class AgentLoadError(Exception):
    """``--agent`` names no agent, or its module failed to import."""


def build_model(spec: str | None, base_url: str | None = None) -> Model:
    """A model from ``--model`` and ``--base-url``.

    ``--base-url`` means an OpenAI-compatible server: ``--model openai:<name>``
    (or a bare ``<name>``) picks the model it serves.
    """
    from .models import resolve_model

    if base_url:
        from .models.openai import OpenAIModel

        provider, _, name = (spec or "openai:default").partition(":")
        if provider not in ("openai", "") and name:
            raise ValueError("--base-url is for OpenAI-compatible servers: --model openai:<name>")
        name = name if provider == "openai" else (spec or "default")
        return OpenAIModel(name or "default", base_url=base_url)
    return resolve_model(spec)


def load_agent(spec: str) -> Agent:
    """``--agent module:name`` or ``--agent path/to/file.py:name``: an ``Agent``, or a
    function of no arguments that returns one (so the file can build it when asked).

    A module is imported from the current directory first, as ``uvicorn`` and ``python
    -m`` do, so ``callwright serve --agent myapp.agent:agent`` works where ``myapp`` is.
    """
    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise AgentLoadError(f"--agent {spec}: use module:name or path/to/file.py:name")
    if target.endswith(".py"):
        path = Path(target)
        if not path.is_file():
            raise AgentLoadError(f"--agent {spec}: no Python file at {target}")
        module = _run_file(spec, path)
    else:
        module = _import(spec, target)
    found = getattr(module, name, None)
    if found is None:
        raise AgentLoadError(f"--agent {spec}: {target} defines no {name!r}")
    try:
        agent = found() if callable(found) and not isinstance(found, Agent) else found
    except Exception as exc:
        raise AgentLoadError(f"--agent {spec}: {name}() raised {_said(exc, None)}") from exc
    if not isinstance(agent, Agent):
        raise AgentLoadError(f"--agent {spec}: {name} is not an Agent or a function returning one")
    return agent


def _import(spec: str, module_name: str) -> object:
    cwd = os.getcwd()
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if module_name == missing or module_name.startswith(missing + "."):  # the module itself
            raise AgentLoadError(
                f"--agent {spec}: no module named {exc.name!r} in {cwd} or on the Python path"
            ) from exc
        raise AgentLoadError(f"--agent {spec}: importing {module_name} failed: {exc}") from exc
    except Exception as exc:
        raise AgentLoadError(
            f"--agent {spec}: importing {module_name} raised {_said(exc, module_name)}"
        ) from exc


def _run_file(spec: str, path: Path) -> object:
    module_spec = importlib.util.spec_from_file_location(path.stem, path)
    if module_spec is None or module_spec.loader is None:
        raise AgentLoadError(f"--agent {spec}: {path} is not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[module_spec.name] = module
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        raise AgentLoadError(f"--agent {spec}: {path} raised {_said(exc, str(path))}") from exc
    return module


def _said(exc: BaseException, where: str | None) -> str:
    """``KeyError: 'x' (agent.py, line 12)``: the error, and the line of the user's module
    that raised it when that is in the traceback."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, SyntaxError) or where is None:
        return text
    frames = traceback.extract_tb(exc.__traceback__)
    stem = Path(where).name if where.endswith(".py") else where.rpartition(".")[2] + ".py"
    mine = [f for f in frames if Path(f.filename).name == stem]
    return f"{text} ({Path(mine[-1].filename).name}, line {mine[-1].lineno})" if mine else text


def chosen_agent(args: argparse.Namespace) -> Agent:
    """The agent given with ``--agent``, or the demo agent on ``--model``; the MCP servers
    of ``--mcp servers.json`` join it as toolsets."""
    agent = _given_agent(args)
    _add_mcp_servers(args, agent.toolbox)
    return agent


def chosen_toolbox(args: argparse.Namespace) -> Toolbox:
    """``--agent``'s toolbox, or the demo's tools (no model is made), with ``--mcp``'s
    servers as toolsets."""
    from .toolbox import Toolbox

    if args.agent:
        box = load_agent(args.agent).toolbox
    else:
        from .demo import demo_tools

        box = Toolbox(demo_tools())
    _add_mcp_servers(args, box)
    return box


def _demo_only(args: argparse.Namespace) -> None:
    """Refuse the demo agent's options beside ``--agent``: they would be ignored silently
    (``--model`` from ``$CALLWRIGHT_MODEL`` is a default, not a choice, and passes)."""
    from ._cli_options import UsageError

    given = [
        name
        for name, value in (
            ("--model", args.model if args.model != os.environ.get("CALLWRIGHT_MODEL") else None),
            ("--base-url", args.base_url),
            ("--sandbox", args.sandbox),
        )
        if value
    ]
    if given:
        raise UsageError(
            f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for the demo agent: "
            f"--agent {args.agent} brings its own model and tools (set them in your code)"
        )


def _add_mcp_servers(args: argparse.Namespace, box: Toolbox) -> None:
    if not getattr(args, "mcp", None):
        return
    try:
        from .mcp import load_mcp_config
    except ImportError as exc:
        raise ImportError(
            f"--mcp needs the mcp extra ({exc}): pip install 'callwright[mcp]'"
        ) from None
    try:
        servers = load_mcp_config(args.mcp)
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"--mcp {args.mcp}: {exc}") from None
    for server in servers:
        box.add_toolset(server)


def _given_agent(args: argparse.Namespace) -> Agent:
    if getattr(args, "agent", None):
        _demo_only(args)
        return load_agent(args.agent)
    from .demo import demo_agent

    agent: Agent = demo_agent(build_model(args.model, args.base_url), sandbox=args.sandbox)
    return agent
