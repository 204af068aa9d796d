"""``callwright serve | run | tools``: the demo agent from a terminal.

argparse (standard library) parses, rich prints. ``serve`` imports the server
stack lazily so ``run`` and ``tools`` work without starlette or uvicorn.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ._cli_options import (
    agent_option,
    expose_option,
    journal_options,
    mcp_option,
    model_options,
    serve_options,
)
from ._worker_cli import worker_parser
from .models.base import Model
from .run import Agent
from .tool import Tool

if TYPE_CHECKING:
    from .server import Authenticate
    from .toolbox import Toolbox


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
            raise SystemExit("--base-url is for OpenAI-compatible servers: --model openai:<name>")
        name = name if provider == "openai" else (spec or "default")
        return OpenAIModel(name or "default", base_url=base_url)
    return resolve_model(spec)


def load_agent(spec: str) -> Agent:
    """``--agent module:name`` or ``--agent path/to/file.py:name``: an ``Agent``, or a
    function of no arguments that returns one (so the file can build it when asked)."""
    import importlib
    import importlib.util
    from pathlib import Path

    target, sep, name = spec.rpartition(":")
    if not sep or not target or not name:
        raise SystemExit(f"--agent {spec!r}: use module:name or path/to/file.py:name")
    if target.endswith(".py"):
        path = Path(target)
        module_spec = importlib.util.spec_from_file_location(path.stem, path)
        if module_spec is None or module_spec.loader is None or not path.is_file():
            raise SystemExit(f"--agent {spec!r}: no Python file at {target}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_spec.name] = module
        module_spec.loader.exec_module(module)
    else:
        module = importlib.import_module(target)
    found = getattr(module, name, None)
    agent = found() if callable(found) and not isinstance(found, Agent) else found
    if not isinstance(agent, Agent):
        raise SystemExit(f"--agent {spec!r}: {name} is not an Agent or a function returning one")
    return agent


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


def _add_mcp_servers(args: argparse.Namespace, box: Toolbox) -> None:
    if not getattr(args, "mcp", None):
        return
    try:
        from .mcp import load_mcp_config
    except ImportError as exc:
        raise SystemExit(f"--mcp needs the mcp extra ({exc})") from None
    try:
        servers = load_mcp_config(args.mcp)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--mcp {args.mcp}: {exc}") from None
    for server in servers:
        box.add_toolset(server)


def _given_agent(args: argparse.Namespace) -> Agent:
    if getattr(args, "agent", None):
        return load_agent(args.agent)
    from .demo import demo_agent

    agent: Agent = demo_agent(build_model(args.model, args.base_url), sandbox=args.sandbox)
    return agent


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


# --- serve ---------------------------------------------------------------------------------


def serve(args: argparse.Namespace) -> int:
    console = _console()
    try:
        import uvicorn  # noqa: F401  (the server extra is installed)

        from .server import create_app  # noqa: F401
    except ImportError as exc:
        console.print(
            f"[red]callwright serve needs the server extra ({exc}).[/red] "
            "Install it with: pip install 'callwright[server]'"
        )
        return 2
    if args.workers > 1 and args.executor_id:
        console.print("[red]--executor-id names one process: not with --workers[/red]")
        return 2
    if args.workers > 1 and not (args.db or args.database):
        console.print(
            "[red]--workers needs --db: the workers share one run journal "
            "(approvals asked in one are answered in another)[/red]"
        )
        return 2
    token, generated = _token(args, console)
    try:
        app, agent, journal = build_app(args, token)
    except JournalError as exc:
        console.print(f"[red]{exc}[/red]")
        return 2
    host = args.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{shown}:{args.port}"
    what = "agent" if args.agent else "demo agent"
    console.print(f"[bold]callwright[/bold] {what} on [cyan]{agent.model.name}[/cyan]")
    page = f"{url}/#token={token if generated else '<token>'}" if token is not None else f"{url}/"
    console.print(f"  playground: open [bold]{page}[/bold] in a browser")
    console.print(f"  AG-UI: POST {url}/agui   AI SDK UI stream: POST {url}/api/chat")
    if token is not None:
        console.print("  every request needs Authorization: Bearer <token>")
    elif host not in ("127.0.0.1", "localhost", "::1"):
        console.print(
            f"  [yellow]anyone who can reach {host}:{args.port} can run the agent's tools: "
            "use --token[/yellow]"
        )
    if args.mcp_path:
        console.print(f"  MCP (streamable HTTP): {url}{args.mcp_path}")
    if journal is not None:
        _journal_banner(args, console)
    flush = _export_telemetry(args, console)
    sys.stdout.flush()
    try:
        _run_server(args, app, journal, token)
    finally:
        if flush is not None:
            flush()
    return 0


def _journal_banner(args: argparse.Namespace, console: Any) -> None:
    if args.database:  # never the URL: it may hold a password
        executor = args.executor_id or "new for this process"
        console.print(
            f"  run journal and DBOS workflows on Postgres (--database), executor id: "
            f"{executor}; a dead replica's runs continue on another"
        )
    else:
        console.print(f"  run journal: {args.db} (paused runs survive a restart)")
    if args.workers > 1:
        console.print(f"  {args.workers} worker processes on one journal")


def _run_server(args: argparse.Namespace, app: Any, journal: Any, token: str | None) -> None:
    """uvicorn on the app; with ``--workers N``, on N processes that each build it."""
    import uvicorn

    if args.workers == 1:
        uvicorn.run(app, host=args.host, port=args.port, log_level=args.log_level)
        return
    if journal is not None:
        journal.close()  # opened to check it; each worker opens its own
    os.environ[WORKER_ARGS] = json.dumps({**_plain(args), "token": token})
    uvicorn.run(
        f"{__name__}:worker_app",
        factory=True,
        workers=args.workers,
        host=args.host,
        port=args.port,
        log_level=args.log_level,
    )


WORKER_ARGS = "CALLWRIGHT_SERVE_ARGS"
"""How ``serve --workers N`` hands its options to the worker processes (uvicorn starts
each worker from an import string, so the app is built again there)."""


class JournalError(Exception):
    """``--db`` names a file that cannot serve as the run journal."""


def build_app(args: argparse.Namespace, token: str | None) -> tuple[Any, Agent, Any]:
    """The app ``serve`` runs (the agent, its journal, its options), and its parts."""
    from .server import create_app

    agent = chosen_agent(args)
    journal, durable = _journal(args, agent)
    app = create_app(
        agent,
        journal=journal,
        durable=durable,
        authenticate=_bearer(token) if token is not None else None,
        allowed_origins=args.allowed_origin or (),
        allowed_hosts=args.allowed_host or None,
    )
    if args.mcp_path:
        from .mcp import mount_mcp

        authenticate = _bearer(token) if token is not None else None
        mount_mcp(
            app,
            agent,
            args.mcp_path,
            expose_agent=args.expose_agent,
            authenticate=authenticate,
            allowed_origins=args.allowed_origin or (),
            allowed_hosts=args.allowed_host or None,
        )
    return app, agent, journal


def _journal(args: argparse.Namespace, agent: Agent) -> tuple[Any, Any]:
    """The run journal ``--db`` or ``--database`` names, and with ``--database`` the durable
    runtime that shares its Postgres database (the executor id is the journal's owner id)."""
    if not args.database:
        return (open_journal(args.db, args.retention_days) if args.db else None), None
    from .durable import DurableRuntime, new_executor_id, use_tool_workers
    from .store import open_journal as open_store

    executor = args.executor_id or new_executor_id()
    try:
        journal = open_store(
            args.database,
            owner_id=executor,
            settle_gone=False,
            retention_days=args.retention_days,
        )
    except Exception as exc:  # the URL may hold a password: name the error, not the URL
        raise JournalError(
            f"--database: cannot open the run journal ({type(exc).__name__})"
        ) from None
    use_tool_workers(agent, args.database)  # tools marked on_workers: callwright worker
    runtime = DurableRuntime(
        agent, journal, args.database, executor, keep_workflows=args.keep_workflows
    )
    return journal, runtime


def open_journal(path: str, retention_days: float | None = None) -> Any:
    """The SQLite journal at ``path``, or a ``JournalError`` saying in one line why not."""
    import sqlite3

    from .store import SQLiteJournal

    try:
        return SQLiteJournal(path, retention_days=retention_days)
    except (sqlite3.Error, OSError) as exc:
        raise JournalError(f"--db {path}: cannot use it as the run journal ({exc})") from None


def worker_app() -> Any:
    """``serve --workers N``: one worker's app, built from the options ``serve`` was given."""
    options = json.loads(os.environ[WORKER_ARGS])
    token = options.pop("token")
    app, _, _ = build_app(argparse.Namespace(**options), token)
    return app


def _plain(args: argparse.Namespace) -> dict[str, Any]:
    """The options as JSON-ready values (the handler function left out)."""
    return {k: v for k, v in vars(args).items() if k != "handler"}


def _token(args: argparse.Namespace, console: Any) -> tuple[str | None, bool]:
    """The access token (``--token T`` or ``CALLWRIGHT_TOKEN``; ``--token`` alone makes one)
    and whether it was made here (only then is it printed: a given one may be in logs)."""
    import secrets

    if args.token is None:
        return None, False
    if args.token == "":
        return secrets.token_urlsafe(24), True
    if len(args.token) < 16:
        console.print("[red]--token: use a token of at least 16 characters[/red]")
        raise SystemExit(2)
    return args.token, False


def _bearer(token: str) -> Authenticate:
    from .server import bearer_token

    return bearer_token(token)


def _export_telemetry(args: argparse.Namespace, console: Any) -> Callable[[], None] | None:
    """``--otel [URL]`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``: traces and metrics over OTLP/HTTP.

    Returns the function that flushes them at exit (None when not asked for).
    """
    from .telemetry import ENDPOINT_ENV, configure_otlp

    if args.otel is None and not os.environ.get(ENDPOINT_ENV):
        return None
    try:
        flush = configure_otlp(args.otel or None)
    except RuntimeError as exc:
        console.print(f"[red]{exc}[/red]")
        raise SystemExit(2) from None
    where = args.otel or os.environ.get(ENDPOINT_ENV) or "http://localhost:4318"
    console.print(f"  traces and metrics: OTLP/HTTP to {where}")
    return flush


# --- run -----------------------------------------------------------------------------------


async def run_prompt(args: argparse.Namespace, console: Any) -> int:
    from ._terminal import TerminalRun

    async with chosen_agent(args) as agent:  # closes its MCP sessions (stdio servers exit)
        return await TerminalRun(agent, console, yes=args.yes)(args.prompt)


def run(args: argparse.Namespace) -> int:
    console = _console()
    try:
        return asyncio.run(run_prompt(args, console))
    except KeyboardInterrupt:
        console.print("[yellow]cancelled[/yellow]")
        return 130


# --- mcp -----------------------------------------------------------------------------------


def mcp(args: argparse.Namespace) -> int:
    """Serve the agent's tools to an MCP client on stdin/stdout (stdout is the protocol's:
    nothing else is printed there)."""
    try:
        from .mcp import serve_stdio
    except ImportError as exc:
        _console(stderr=True).print(f"[red]callwright mcp needs the mcp extra ({exc})[/red]")
        return 2
    agent = chosen_agent(args)
    asyncio.run(serve_stdio(agent, expose_agent=args.expose_agent))
    return 0


# --- tools ---------------------------------------------------------------------------------


def tools(args: argparse.Namespace) -> int:
    """The agent's tools, an MCP server's among them once listed (``--mcp``, or the
    agent's own toolsets), with approval, idempotence and the server's annotations."""
    from rich.panel import Panel
    from rich.syntax import Syntax

    from .toolbox import ToolsetUnavailable

    console = _console()
    try:
        listed, origins = _tools_of(args)
    except ToolsetUnavailable as exc:  # a server that cannot be reached or listed
        _console(stderr=True).print(f"[red]{exc}[/red]")
        return 1
    if args.json:
        print(json.dumps([_blueprint(t, origins.get(t.name)) for t in listed], indent=2))
        return 0
    for t in listed:
        title = f"[bold]{t.name}[/bold]"
        if t.requires_approval:
            title += "  [yellow](needs approval)[/yellow]"
        origin = origins.get(t.name)
        if origin is not None:
            hints = ", ".join(f"{k}={json.dumps(v)}" for k, v in origin["annotations"].items())
            title += f"  [dim]MCP {origin['server']}" + (f": {hints}" if hints else "") + "[/dim]"
        schema = Syntax(json.dumps(t.parameters, indent=2), "json", theme="ansi_dark")
        summary = t.description.split("\n")[0]
        console.print(Panel(schema, title=title, subtitle=summary, expand=False))
    return 0


def _blueprint(t: Tool, origin: dict[str, Any] | None) -> dict[str, Any]:
    approval = t.requires_approval
    shown: dict[str, Any] = {"name": t.name, "description": t.description}
    shown["parameters"] = t.parameters
    shown["requiresApproval"] = approval if isinstance(approval, bool) else "by arguments"
    shown["idempotent"] = t.idempotent
    return {**shown, "mcp": origin} if origin is not None else shown


def _tools_of(args: argparse.Namespace) -> tuple[list[Tool], dict[str, dict[str, Any]]]:
    """The tools, and what the MCP servers among their sources said about theirs."""
    box = chosen_toolbox(args)
    if not box.toolsets:
        return list(box), {}
    from .mcp._listing import list_toolsets, mcp_origins

    asyncio.run(list_toolsets(box))
    return list(box), mcp_origins(box)


# --- entry point ---------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    from . import __version__

    top = argparse.ArgumentParser(prog="callwright", description=__doc__.split("\n")[0])
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = top.add_subparsers(dest="command", required=True)

    s = sub.add_parser("serve", help="serve the demo agent over AG-UI and the AI SDK stream")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--log-level", default="info")
    journal_options(s)
    serve_options(s)
    model_options(s)
    s.set_defaults(handler=serve)

    r = sub.add_parser("run", help="run one prompt against the demo agent in the terminal")
    r.add_argument("prompt")
    r.add_argument("--yes", action="store_true", help="approve every approval request")
    model_options(r)
    r.set_defaults(handler=run)

    m = sub.add_parser("mcp", help="serve the agent's tools to an MCP client over stdio")
    expose_option(m)
    model_options(m)
    m.set_defaults(handler=mcp)

    t = sub.add_parser("tools", help="list the demo agent's tools and their schemas")
    t.add_argument("--json", action="store_true", help="print JSON instead of panels")
    agent_option(t)
    mcp_option(t)
    t.set_defaults(handler=tools)

    worker_parser(sub, model_options)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
