"""``callwright serve | run | tools | mcp | worker``: an agent from a terminal.

argparse (standard library) parses, rich prints. ``serve`` imports the server
stack lazily so ``run`` and ``tools`` work without starlette or uvicorn.

Every error a command meets is one line on stderr (``callwright: error: ...``, exit
code 1; 2 for options that cannot work together, as argparse's own); ``--debug`` or
``CALLWRIGHT_DEBUG=1`` shows the traceback instead, for a bug report.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from typing import Any

from ._cli_agent import AgentLoadError, build_model, chosen_agent, chosen_toolbox, load_agent
from ._cli_journal import JournalError, open_sqlite, redacted
from ._cli_options import (
    UsageError,
    add_command,
    agent_option,
    debug_option,
    expose_option,
    journal_options,
    log_options,
    mcp_option,
    model_options,
    serve_options,
)
from ._serve_cli import SERVE_ARGS, build_app, process_app, serve
from ._worker_cli import worker_parser
from .tool import Tool

__all__ = [
    "SERVE_ARGS",
    "AgentLoadError",
    "JournalError",
    "build_app",
    "build_model",
    "chosen_agent",
    "chosen_toolbox",
    "load_agent",
    "main",
    "open_sqlite",
    "parser",
    "process_app",
]


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


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
        raise ImportError(
            f"callwright mcp needs the mcp extra ({exc}): pip install 'callwright[mcp]'"
        ) from None
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

    top = argparse.ArgumentParser(
        prog="callwright",
        description="Serve, run and inspect a callwright agent: the demo agent on the embedded "
        "model unless --agent names yours.",
    )
    top.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    debug_option(top, top=True)
    sub = top.add_subparsers(dest="command", required=True)

    s = add_command(
        sub, "serve", "serve an agent over AG-UI and the AI SDK stream, with the playground page"
    )
    s.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)"
    )
    s.add_argument("--port", type=int, default=8000, help="the port (default: 8000)")
    log_options(s)
    journal_options(s)
    serve_options(s)
    model_options(s)
    s.set_defaults(handler=serve)

    r = add_command(
        sub, "run", "run one prompt against an agent in the terminal, asking before approvals"
    )
    r.add_argument("prompt", help="what to ask the agent")
    r.add_argument("--yes", action="store_true", help="approve every approval request")
    model_options(r)
    r.set_defaults(handler=run)

    m = add_command(sub, "mcp", "serve the agent's tools to an MCP client over stdio")
    expose_option(m)
    model_options(m)
    m.set_defaults(handler=mcp)

    t = add_command(sub, "tools", "list an agent's tools and their schemas")
    t.add_argument("--json", action="store_true", help="print JSON instead of panels")
    agent_option(t)
    mcp_option(t)
    t.set_defaults(handler=tools)

    worker_parser(sub, model_options)
    for command in sub.choices.values():
        debug_option(command)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; its errors end as one line on stderr, not a traceback."""
    args = parser().parse_args(argv)
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        return 130
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            raise
        return _failed(args, exc, str(exc.code), 1)
    except UsageError as exc:
        return _failed(args, exc, str(exc), 2)
    except Exception as exc:
        return _failed(args, exc, _message(exc), 1)
    return code


def _message(exc: Exception) -> str:
    """The error's own words; its type's name when they would not say what failed."""
    text = str(exc).strip()
    if isinstance(exc, AgentLoadError | JournalError | ImportError | ValueError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _failed(args: argparse.Namespace, exc: BaseException, message: str, code: int) -> int:
    if getattr(args, "debug", False):
        raise exc
    line = " ".join(redacted(message).split())  # one line, and never a URL's password
    print(f"callwright: error: {line}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
