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
from collections.abc import Sequence
from typing import Any

from .call import Decision
from .events import (
    ApprovalRequested,
    ReasoningDelta,
    RunError,
    RunFinished,
    TextDelta,
    TextEnd,
    ToolCallEnd,
    ToolCallResult,
    ToolInputError,
    ToolProgress,
)
from .models.base import Model


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


def _console(stderr: bool = False) -> Any:
    from rich.console import Console

    return Console(stderr=stderr, highlight=False)


# --- serve ---------------------------------------------------------------------------------


def serve(args: argparse.Namespace) -> int:
    console = _console()
    try:
        import uvicorn

        from .server import create_app
    except ImportError as exc:
        console.print(
            f"[red]callwright serve needs the server extra ({exc}).[/red] "
            "Install it with: pip install 'callwright[server]'"
        )
        return 2
    from .demo import demo_agent

    model = build_model(args.model, args.base_url)
    agent = demo_agent(model, sandbox=args.sandbox)
    journal = None
    if args.db:
        from .store import SQLiteJournal

        journal = SQLiteJournal(args.db)
    app = create_app(agent, journal=journal)
    host = args.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    url = f"http://{shown}:{args.port}"
    console.print(f"[bold]callwright[/bold] demo agent on [cyan]{model.name}[/cyan]")
    console.print(f"  open [bold]{url}/[/bold]")
    console.print(f"  AG-UI: POST {url}/agui   AI SDK UI stream: POST {url}/api/chat")
    if journal is not None:
        console.print(f"  run journal: {args.db} (paused runs survive a restart)")
    sys.stdout.flush()
    uvicorn.run(app, host=host, port=args.port, log_level=args.log_level)
    return 0


# --- run -----------------------------------------------------------------------------------


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def run_prompt(args: argparse.Namespace, console: Any) -> int:
    from .demo import demo_agent

    agent = demo_agent(build_model(args.model, args.base_url), sandbox=args.sandbox)
    run = agent.start(args.prompt)
    while True:
        in_text = False
        approvals: list[ApprovalRequested] = []
        async for event in run.events():
            if isinstance(event, TextDelta):
                console.print(event.delta, end="", markup=False)
                in_text = True
                continue
            if isinstance(event, TextEnd):
                if in_text:
                    console.print()
                in_text = False
                continue
            if isinstance(event, ReasoningDelta):
                console.print(f"[dim]{event.delta}[/dim]", end="")
            elif isinstance(event, ToolCallEnd):
                console.print(f"[cyan]→ {event.tool_name}[/cyan] {_short(event.arguments)}")
            elif isinstance(event, ToolInputError):
                console.print(f"[red]✗ {event.tool_name}: {event.error}[/red]")
            elif isinstance(event, ToolProgress):
                fraction = f" ({event.fraction:.0%})" if event.fraction is not None else ""
                console.print(f"  [dim]{event.tool_name}: {event.text}{fraction}[/dim]")
            elif isinstance(event, ToolCallResult):
                if event.state == "output-available":
                    console.print(f"[green]← {event.tool_name}[/green] {_short(event.content)}")
                else:
                    console.print(f"[red]← {event.tool_name} {event.state}: {event.error}[/red]")
            elif isinstance(event, ApprovalRequested):
                approvals.append(event)
            elif isinstance(event, RunError):
                console.print(f"[red]error ({event.code}): {event.message}[/red]")
                return 1
            elif isinstance(event, RunFinished) and event.status not in ("completed", "paused"):
                console.print(f"[yellow]run {event.status}: {event.reason or ''}[/yellow]")
        result = run.result
        if result is None or result.status != "paused" or not approvals:
            return 0
        decisions: dict[str, Decision] = {}
        for request in approvals:
            approved = args.yes
            label = f"{request.tool_name} {_short(request.arguments)}"
            if not approved and sys.stdin.isatty():
                answer = console.input(f"[yellow]approve {label}? [y/N][/yellow] ")
                approved = answer.strip().lower() in ("y", "yes")
            elif not approved:
                console.print(f"[yellow]denied {label} (pass --yes to approve)[/yellow]")
            decisions[request.call_id] = Decision(
                approved, None if approved else "the user did not approve"
            )
        run = agent.start(messages=result.messages, decisions=decisions)


def run(args: argparse.Namespace) -> int:
    console = _console()
    try:
        return asyncio.run(run_prompt(args, console))
    except KeyboardInterrupt:
        console.print("[yellow]cancelled[/yellow]")
        return 130


# --- tools ---------------------------------------------------------------------------------


def tools(args: argparse.Namespace) -> int:
    from rich.panel import Panel
    from rich.syntax import Syntax

    from .demo import demo_tools

    console = _console()
    if args.json:
        blueprints = [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in demo_tools()
        ]
        print(json.dumps(blueprints, indent=2, ensure_ascii=False))
        return 0
    for t in demo_tools():
        title = f"[bold]{t.name}[/bold]"
        if t.requires_approval:
            title += "  [yellow](needs approval)[/yellow]"
        schema = Syntax(json.dumps(t.parameters, indent=2), "json", theme="ansi_dark")
        summary = t.description.split("\n")[0]
        console.print(Panel(schema, title=title, subtitle=summary, expand=False))
    return 0


# --- entry point ---------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="callwright", description=__doc__.split("\n")[0])
    sub = top.add_subparsers(dest="command", required=True)

    def model_options(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--model",
            default=os.environ.get("CALLWRIGHT_MODEL"),
            help="local | local:/path/model.gguf | openai:<model> | anthropic:<model> "
            "(default: $CALLWRIGHT_MODEL or the embedded local model)",
        )
        p.add_argument(
            "--base-url",
            default=None,
            help="an OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio)",
        )
        p.add_argument("--sandbox", default=None, help="the folder the file tools work in")

    s = sub.add_parser("serve", help="serve the demo agent over AG-UI and the AI SDK stream")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000)
    s.add_argument("--log-level", default="info")
    s.add_argument(
        "--db",
        default=None,
        help="a SQLite file for the run journal (history, pending approvals, events)",
    )
    model_options(s)
    s.set_defaults(handler=serve)

    r = sub.add_parser("run", help="run one prompt against the demo agent in the terminal")
    r.add_argument("prompt")
    r.add_argument("--yes", action="store_true", help="approve every approval request")
    model_options(r)
    r.set_defaults(handler=run)

    t = sub.add_parser("tools", help="list the demo agent's tools and their schemas")
    t.add_argument("--json", action="store_true", help="print JSON instead of panels")
    t.set_defaults(handler=tools)
    return top


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    code: int = args.handler(args)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
