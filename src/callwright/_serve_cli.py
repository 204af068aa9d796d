"""``callwright serve``: the agent over AG-UI and the AI SDK stream, with its banner.

Kept out of ``cli`` so that module stays small; the server stack (starlette, uvicorn)
is imported only when the command runs, so ``run`` and ``tools`` work without it.
The banner says what runs where (model, journal, processes, tool workers, URLs), on
stdout; log lines go to stderr (``_cli_logging``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._cli_agent import chosen_agent
from ._cli_journal import OpenJournal, open_for_serve
from ._cli_logging import configure_logging
from ._cli_options import UsageError
from .run import Agent

if TYPE_CHECKING:
    from .server import Authenticate

SERVE_ARGS = "CALLWRIGHT_SERVE_ARGS"
"""How ``serve --processes N`` hands its options to its processes (uvicorn starts each
from an import string, so the app is built again there)."""


@dataclass
class Served:
    """The app ``serve`` runs, and what it was built from."""

    app: Any
    """The ASGI app ``create_app`` made (and ``mount_mcp`` extended)."""
    agent: Agent
    """The agent it serves (tools marked ``on_workers`` already proxied)."""
    journal: OpenJournal
    """The journal it was given, and what the banner says about it."""


def serve(args: argparse.Namespace) -> int:
    try:
        import uvicorn  # noqa: F401  (the server extra is installed)

        from .server import create_app  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"callwright serve needs the server extra ({exc}): pip install 'callwright[server]'"
        ) from None
    if args.processes < 1:
        raise UsageError("--processes: give 1 or more")
    if args.processes > 1 and args.executor_id:
        raise UsageError("--executor-id names one process: not with --processes")
    if args.processes > 1 and not args.journal:
        raise UsageError(
            "--processes needs --journal: the processes share one run journal "
            "(approvals asked in one are answered in another)"
        )
    _check_options(args)
    log_config = configure_logging(args.log_level, args.log_format)
    token, generated = _token(args)
    served = build_app(args, token)
    flush = _export_telemetry(args)
    _banner(args, served, token, generated)
    if flush is not None:
        _print(f"  traces and metrics: OTLP/HTTP to {_otlp_endpoint(args)}")
    sys.stdout.flush()
    try:
        _run_server(args, served, token, log_config)
    finally:
        if flush is not None:
            flush()
    return 0


def _print(text: str) -> None:
    """One banner line (rich: markup, and the terminal's width)."""
    from rich.console import Console

    Console(highlight=False, soft_wrap=True).print(text)


def _banner(args: argparse.Namespace, served: Served, token: str | None, generated: bool) -> None:
    host = args.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{shown}:{args.port}"
    what = "agent" if args.agent else "demo agent"
    _print(f"[bold]callwright[/bold] {what} on [cyan]{served.agent.model.name}[/cyan]")
    page = f"{url}/#token={token if generated else '<token>'}" if token is not None else f"{url}/"
    _print(f"  playground: open [bold]{page}[/bold] in a browser")
    _print(f"  AG-UI: POST {url}/agui   AI SDK UI stream: POST {url}/api/chat")
    _print(f"  health: GET {url}/healthz (alive)   GET {url}/readyz (ready for requests)")
    if args.mcp_path:
        _print(f"  MCP (streamable HTTP): {url}{args.mcp_path}")
    if args.artifacts is not None and served.agent.artifacts is not None:
        _print(f"  {_artifacts_line(args, served)}")
    if token is not None:
        _print("  every request needs Authorization: Bearer <token>")
    elif host not in ("127.0.0.1", "localhost", "::1"):
        _print(
            f"  [yellow]anyone who can reach {host}:{args.port} can run the agent's tools: "
            "use --token[/yellow]"
        )
    for line in _journal_lines(served.journal, served.agent):
        _print(f"  {line}")
    count = args.processes
    again = " (uvicorn restarts one that dies)" if count > 1 else ""
    _print(f"  web processes: {count}{again}")


def _journal_lines(opened: OpenJournal, agent: Agent) -> list[str]:
    target = opened.target
    if target is None or target.kind == "sqlite":
        lines = [
            f"run journal: {target.shown} (paused runs survive a restart)"
            if target is not None
            else "run journal: none (runs live in memory: a restart forgets paused runs)"
        ]
        marked = [t.name for t in agent.toolbox if t.on_workers]
        if marked:
            lines.append(
                f"tools marked on_workers run in this process ({', '.join(marked)}): "
                "tool workers need a postgresql:// journal"
            )
        return lines
    lines = [
        f"run journal: {target.shown}, as a durable replica (executor id "
        f"{opened.executor_id}; a dead replica's runs continue on another) with the tool "
        "workers' queue"
    ]
    if opened.worker_tools:
        names = ", ".join(opened.worker_tools)
        lines.append(f"on tool workers (callwright worker): {names}")
    else:
        lines.append("on tool workers: no tool (none is marked on_workers)")
    return lines


def _run_server(
    args: argparse.Namespace, served: Served, token: str | None, log_config: dict[str, Any]
) -> None:
    """uvicorn on the app; with ``--processes N``, on N processes that each build it."""
    import uvicorn

    common: dict[str, Any] = {
        "host": args.host,
        "port": args.port,
        "log_level": args.log_level,
        "log_config": log_config,
    }
    if args.processes == 1:
        uvicorn.run(served.app, **common)
        return
    if served.journal.journal is not None:
        served.journal.journal.close()  # opened to check it; each process opens its own
    os.environ[SERVE_ARGS] = json.dumps({**_plain(args), "token": token})
    uvicorn.run(f"{__name__}:process_app", factory=True, workers=args.processes, **common)


def build_app(args: argparse.Namespace, token: str | None) -> Served:
    """The app ``serve`` runs (the agent, its journal, its options), and its parts."""
    from .server import create_app

    agent = chosen_agent(args)
    if args.artifacts is not None:
        _keep_artifacts(agent, args.artifacts, args.artifact_threshold)
    opened = open_for_serve(
        args.journal,
        agent,
        retention_days=args.retention_days,
        executor_id=args.executor_id,
        keep_workflows=args.keep_workflows,
        worker_wait=args.worker_wait,
    )
    authenticate = _bearer(token) if token is not None else None
    app = create_app(
        agent,
        journal=opened.journal,
        durable=opened.durable,
        authenticate=authenticate,
        allowed_origins=args.allowed_origin or (),
        allowed_hosts=args.allowed_host or None,
    )
    if args.mcp_path:
        from .mcp import mount_mcp

        mount_mcp(
            app,
            agent,
            args.mcp_path,
            expose_agent=args.expose_agent,
            authenticate=authenticate,
            allowed_origins=args.allowed_origin or (),
            allowed_hosts=args.allowed_host or None,
            **_mcp_task_options(args),
        )
    return Served(app, agent, opened)


def _check_options(args: argparse.Namespace) -> None:
    """Refuse options that would be ignored, or values the server cannot take."""
    tasks = [
        name
        for name, value in (
            ("--mcp-task-after", args.mcp_task_after),
            ("--mcp-task-ttl", args.mcp_task_ttl),
            ("--mcp-max-tasks", args.mcp_max_tasks),
        )
        if value is not None
    ]
    if tasks and not args.mcp_path:
        raise UsageError(f"{tasks[0]} needs --mcp-path: it is how the MCP endpoint serves tasks")
    if args.mcp_task_ttl is not None and args.mcp_task_ttl <= 0:
        raise UsageError("--mcp-task-ttl: give a number of seconds above 0")
    if args.mcp_max_tasks is not None and args.mcp_max_tasks < 1:
        raise UsageError("--mcp-max-tasks: give 1 or more")
    if args.artifact_threshold is not None:
        if args.artifacts is None:
            raise UsageError("--artifact-threshold needs --artifacts")
        if args.artifact_threshold < 4096:
            raise UsageError("--artifact-threshold: give 4096 bytes or more")


def _mcp_task_options(args: argparse.Namespace) -> dict[str, Any]:
    """``MCPEndpoint``'s task options that were given (the others keep its defaults)."""
    options: dict[str, Any] = {}
    if args.mcp_task_after is not None:
        options["task_after"] = args.mcp_task_after if args.mcp_task_after > 0 else None
    if args.mcp_task_ttl is not None:
        options["task_ttl"] = args.mcp_task_ttl
    if args.mcp_max_tasks is not None:
        options["max_tasks_per_principal"] = args.mcp_max_tasks
    return options


def _keep_artifacts(agent: Agent, directory: str, threshold: int | None) -> None:
    """``--artifacts [DIR]``: the agent keeps its large results as artifacts (in DIR; with
    none, in the journal's database or a temporary directory: see ``Artifacts.store``)."""
    from .artifacts import Artifacts, FileArtifactStore

    if agent.artifacts is not None:
        raise UsageError(
            "--artifacts: the agent already keeps artifacts (Agent(artifacts=...)); "
            "configure them in your code"
        )
    try:
        store = FileArtifactStore(directory) if directory else None
    except OSError as exc:
        raise UsageError(f"--artifacts {directory}: {exc.strerror or exc}") from None
    config = Artifacts(store=store) if threshold is None else Artifacts(store, threshold)
    agent.artifacts = config
    agent.toolbox.add(config.tool())


def _artifacts_line(args: argparse.Namespace, served: Served) -> str:
    config = served.agent.artifacts
    assert config is not None
    if args.artifacts:
        where = f"in {args.artifacts}"
    elif served.journal.journal is not None:
        where = "in the run journal's database"
    else:
        where = "in a temporary directory (lost on restart)"
    return f"artifacts: results over {config.threshold:,} bytes are kept {where}"


def process_app() -> Any:
    """``serve --processes N``: one process's app, built from the options ``serve`` was
    given (its logging too: uvicorn configures it from the same ``log_config``)."""
    options = json.loads(os.environ[SERVE_ARGS])
    token = options.pop("token")
    return build_app(argparse.Namespace(**options), token).app


def _plain(args: argparse.Namespace) -> dict[str, Any]:
    """The options as JSON-ready values (the handler function left out)."""
    return {k: v for k, v in vars(args).items() if k != "handler"}


def _token(args: argparse.Namespace) -> tuple[str | None, bool]:
    """The access token (``--token T`` or ``CALLWRIGHT_TOKEN``; ``--token`` alone makes one)
    and whether it was made here (only then is it printed: a given one may be in logs)."""
    import secrets

    if args.token is None:
        return None, False
    if args.token == "":
        return secrets.token_urlsafe(24), True
    if len(args.token) < 16:
        raise UsageError("--token: use a token of at least 16 characters")
    return args.token, False


def _bearer(token: str) -> Authenticate:
    from .server import bearer_token

    return bearer_token(token)


def _otlp_endpoint(args: argparse.Namespace) -> str:
    from .telemetry import ENDPOINT_ENV

    return str(args.otel or os.environ.get(ENDPOINT_ENV) or "http://localhost:4318")


def _export_telemetry(args: argparse.Namespace) -> Callable[[], None] | None:
    """``--otel [URL]`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``: traces and metrics over OTLP/HTTP.

    Returns the function that flushes them at exit (None when not asked for).
    """
    from .telemetry import ENDPOINT_ENV, configure_otlp

    if args.otel is None and not os.environ.get(ENDPOINT_ENV):
        return None
    return configure_otlp(args.otel or None)
