"""The command line's options, shared by its subcommands (``cli.parser`` assembles them).

One vocabulary: ``--journal`` names the run journal wherever it is asked for, and
``--processes`` counts web processes (``callwright worker`` runs tools). The older names
(``--db``, ``--database``, ``--workers``) still work, with one warning line each.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

JOURNAL_ENV = "CALLWRIGHT_JOURNAL"
"""The default of ``--journal`` for ``serve`` and ``worker``."""
DEBUG_ENV = "CALLWRIGHT_DEBUG"
"""Set to 1: an error shows its traceback (as ``--debug`` does)."""
LOG_LEVELS = ("debug", "info", "warning", "error")


class UsageError(Exception):
    """Options that cannot work together: one line, exit code 2 (as argparse's own)."""


class _Deprecated(argparse.Action):
    """An older name of an option: stores into the new one's ``dest`` and says once, on
    stderr, which name to use instead."""

    def __init__(self, option_strings: Sequence[str], dest: str, instead: str, **kw: Any):
        super().__init__(option_strings, dest, **kw)
        self.instead = instead

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        print(
            f"callwright: warning: {option_string} is deprecated, use {self.instead}",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def deprecated(p: argparse.ArgumentParser, old: str, new: str, dest: str, **kw: Any) -> None:
    """``old`` as a hidden alias of ``new`` (kept so that scripts written with it work)."""
    p.add_argument(old, dest=dest, action=_Deprecated, instead=new, help=argparse.SUPPRESS, **kw)


def debug_option(p: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--debug`` on the top parser and on each subcommand (``callwright serve --debug``
    and ``callwright --debug serve`` both work: a subcommand's default leaves it alone)."""
    p.add_argument(
        "--debug",
        action="store_true",
        default=os.environ.get(DEBUG_ENV, "") not in ("", "0") if top else argparse.SUPPRESS,
        help=f"show the traceback of an error (for bug reports; also ${DEBUG_ENV}=1)",
    )


def log_options(p: argparse.ArgumentParser) -> None:
    """``--log-level`` and ``--log-format``, for the commands that log (``_cli_logging``)."""
    p.add_argument(
        "--log-level",
        default="info",
        choices=LOG_LEVELS,
        type=str.lower,
        help="the least severe log lines shown, callwright's and the server's (default: info)",
    )
    p.add_argument(
        "--log-format",
        default="text",
        choices=("text", "json"),
        help="text, or json: one JSON object per line (time, level, logger, message and the "
        "line's fields: run_id, thread_id, call_id, tool_name, status, duration_ms ...)",
    )


def model_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--model",
        default=os.environ.get("CALLWRIGHT_MODEL"),
        help="local | local:/path/model.gguf | openai:<model> | anthropic:<model> | "
        "gemini:<model> (default: $CALLWRIGHT_MODEL or the embedded local model)",
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
    mcp_task_options(s)
    artifact_options(s)
    otel_option(s)


def mcp_task_options(s: argparse.ArgumentParser) -> None:
    """How ``--mcp-path`` serves long calls as MCP tasks (clients that declare tasks)."""
    s.add_argument(
        "--mcp-task-after",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --mcp-path: a call of a client that declares the MCP tasks extension "
        "becomes a task (polled, cancellable) once it has run this long; 0 or less: never "
        "(default: 1)",
    )
    s.add_argument(
        "--mcp-task-ttl",
        type=float,
        default=None,
        metavar="SECONDS",
        help="with --mcp-path: how long a task may run (then it fails) and a finished one "
        "is kept (default: 3600)",
    )
    s.add_argument(
        "--mcp-max-tasks",
        type=int,
        default=None,
        metavar="N",
        help="with --mcp-path: tasks one caller holds at once; past it, calls are answered "
        "without a task (default: 1000)",
    )


def artifact_options(s: argparse.ArgumentParser) -> None:
    """Results too large for the model's context kept as artifacts (``callwright.artifacts``)."""
    s.add_argument(
        "--artifacts",
        nargs="?",
        const="",
        default=None,
        metavar="DIR",
        help="keep tool results too large for the model as artifacts: the model gets a "
        "preview and the read_artifact tool, front ends a download link. Kept in DIR, or "
        "without DIR in the journal's database (with --journal) or a temporary directory",
    )
    s.add_argument(
        "--artifact-threshold",
        type=int,
        default=None,
        metavar="BYTES",
        help="with --artifacts: results larger than this become artifacts (at least 4096; "
        "default: 32768)",
    )


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
    """``serve``'s run journal and web processes."""
    s.add_argument(
        "--journal",
        default=os.environ.get(JOURNAL_ENV) or None,
        metavar="PATH_OR_URL",
        help="the run journal (history, pending approvals, event logs): a SQLite file "
        "(runs.db or sqlite:///runs.db), or postgresql://… shared by durable replicas and "
        "tool workers (a dead replica's runs continue on another, tools marked on_workers "
        f"go to the workers' queue; see DEPLOY.md). Default: ${JOURNAL_ENV}, else none "
        "(runs live in memory)",
    )
    deprecated(s, "--db", "--journal", "journal")
    deprecated(s, "--database", "--journal", "journal")
    s.add_argument(
        "--executor-id",
        default=None,
        metavar="ID",
        help="with a postgresql:// journal: this process's stable executor id (restarted "
        "with the same id, it continues its own runs at once); default: a new one per process",
    )
    s.add_argument(
        "--keep-workflows",
        type=float,
        default=3600.0,
        metavar="SECONDS",
        help="with a postgresql:// journal: delete the DBOS workflows of ended calls on tool "
        "workers after this long (default: an hour)",
    )
    s.add_argument(
        "--worker-wait",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="with a postgresql:// journal: how long a call waits for a tool worker to take it "
        "before it fails with an error the model sees and is withdrawn (the client is told "
        "after 3 s; default: 60)",
    )
    s.add_argument(
        "--processes",
        type=int,
        default=1,
        metavar="N",
        help="web processes on one host (needs --journal: they share it; each owns the runs "
        "it started, and a killed one's runs are settled by the others). Tools marked "
        "on_workers run in callwright worker processes instead",
    )
    deprecated(s, "--workers", "--processes", "processes", type=int)
    s.add_argument(
        "--retention-days",
        type=float,
        default=None,
        metavar="DAYS",
        help="with --journal: delete the event logs (stream replay) of runs finished longer "
        "ago (default: keep them)",
    )


def add_command(sub: Any, name: str, about: str) -> argparse.ArgumentParser:
    """A subcommand whose one-line ``about`` is both its entry in the list and its help's
    opening sentence."""
    parser: argparse.ArgumentParser = sub.add_parser(
        name, help=about, description=about[0].upper() + about[1:] + "."
    )
    return parser
