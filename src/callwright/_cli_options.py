"""The command line's options, shared by its subcommands (``cli.parser`` assembles them)."""

from __future__ import annotations

import argparse
import os


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
    mcp_option(p)
    agent_option(p)


def mcp_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mcp",
        default=None,
        metavar="SERVERS_JSON",
        help='MCP servers whose tools the agent gets: {"mcpServers": {name: {command, '
        "args, env} | {url, headers}}}",
    )


def agent_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--agent",
        default=None,
        help="your own agent instead of the demo: module:name or path/to/file.py:name "
        "(an Agent, or a function returning one)",
    )


def expose_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--expose-agent",
        action="store_true",
        help="MCP: also serve the agent itself as one tool that runs its loop on a prompt",
    )


def serve_options(s: argparse.ArgumentParser) -> None:
    """Who may call the server, what else it serves, and where its traces go."""
    s.add_argument(
        "--token",
        nargs="?",
        const="",
        default=os.environ.get("CALLWRIGHT_TOKEN"),
        help="require Authorization: Bearer TOKEN on every request (default: "
        "$CALLWRIGHT_TOKEN); --token alone makes one and prints the page's URL with it",
    )
    s.add_argument(
        "--allowed-origin",
        action="append",
        metavar="ORIGIN",
        help="another origin (https://app.example.com) whose pages may call the server "
        "(CORS); repeat for more",
    )
    s.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST",
        help="a Host name the server answers to (name, name:port, *.domain, or *); repeat "
        "for more (default: loopback names on a loopback address, anything otherwise)",
    )
    s.add_argument(
        "--mcp-path",
        default=None,
        metavar="PATH",
        help="also serve the agent's tools over MCP (streamable HTTP) at PATH, e.g. /mcp",
    )
    expose_option(s)
    otel_option(s)


def otel_option(s: argparse.ArgumentParser) -> None:
    """``--otel``, for ``serve`` and ``worker``."""
    s.add_argument(
        "--otel",
        nargs="?",
        const="",
        default=None,
        metavar="URL",
        help="send traces and metrics to an OTLP/HTTP collector (default: "
        "OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318); needs callwright[otel]",
    )


def journal_options(s: argparse.ArgumentParser) -> None:
    """``serve``'s run journal and worker processes."""
    s.add_argument(
        "--db",
        default=None,
        help="a SQLite file for the run journal (history, pending approvals, events)",
    )
    s.add_argument(
        "--database",
        default=None,
        metavar="URL",
        help="postgresql://… : the run journal and DBOS workflows on a Postgres shared by "
        "replicas and tool workers (a dead replica's runs continue on another); see DEPLOY.md",
    )
    s.add_argument(
        "--executor-id",
        default=None,
        metavar="ID",
        help="with --database: this process's stable executor id (restarted with the same id, "
        "it continues its own runs at once); default: a new one per process",
    )
    s.add_argument(
        "--keep-workflows",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="with --database: delete ended DBOS workflows (requests, calls on workers) after "
        "this long (default: an hour)",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=1,
        help="worker processes (needs --db: they share the journal; each owns the runs it "
        "started, and a killed one's runs are settled by the others)",
    )
    s.add_argument(
        "--retention-days",
        type=float,
        default=None,
        metavar="DAYS",
        help="with --db: delete the event logs (stream replay) of runs finished longer ago "
        "(default: keep them)",
    )
