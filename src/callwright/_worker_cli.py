"""``callwright worker``: a process that runs the tools marked ``on_workers`` for the
replicas of ``serve --journal postgresql://…`` (``callwright.durable._workers``).

Kept out of ``cli`` so that module stays small; DBOS is imported only when the
command runs, so the other commands work without the durable extra. It says on start
what it serves (database, queue, tools, executor id, concurrency) and when it stops.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from ._cli_agent import chosen_agent
from ._cli_journal import journal_target
from ._cli_logging import configure_logging
from ._cli_options import (
    JOURNAL_ENV,
    UsageError,
    add_command,
    deprecated,
    log_options,
    otel_option,
)
from .run import Agent


def worker_parser(sub: Any, model_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``worker`` to the subcommands; ``model_options`` adds --agent and the model's."""
    w = add_command(
        sub, "worker", "run the tools marked on_workers for serve --journal postgresql://…"
    )
    w.add_argument(
        "--journal",
        default=os.environ.get(JOURNAL_ENV) or None,
        metavar="URL",
        help="the journal the replicas share (postgresql://…; sqlite:///… on one host); "
        f"default: ${JOURNAL_ENV}",
    )
    deprecated(w, "--database", "--journal", "journal")
    w.add_argument(
        "--executor-id",
        default=None,
        metavar="ID",
        help="this worker's stable DBOS executor id (restarted with the same id, it takes "
        "its unfinished calls back); default: a new one per process",
    )
    w.add_argument("--concurrency", type=int, default=8, help="calls one worker runs at once")
    w.add_argument(
        "--drain",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="on SIGTERM, take no new calls and let running ones finish this long (default 20)",
    )
    w.add_argument("--quiet", action="store_true", help="print nothing on start and stop")
    log_options(w)
    otel_option(w)
    model_options(w)
    w.set_defaults(handler=worker)


def worker(args: argparse.Namespace) -> int:
    """Serve the tools queue until SIGTERM or SIGINT."""
    if not args.journal:
        raise UsageError(f"callwright worker needs --journal URL (or ${JOURNAL_ENV})")
    if args.concurrency < 1:
        raise UsageError("--concurrency: give 1 or more")
    target = journal_target(args.journal)
    try:
        from .durable import run_worker
        from .durable._crossing import TOOLS_QUEUE
        from .durable._worker import default_executor_id
    except ImportError as exc:
        raise ImportError(
            f"callwright worker needs the durable extra ({exc}): pip install 'callwright[durable]'"
        ) from None
    configure_logging(args.log_level, args.log_format)
    agent = chosen_agent(args)
    executor_id = args.executor_id or default_executor_id()
    flush = _telemetry(args.otel)
    say = _nothing if args.quiet else _say
    say(f"callwright worker {executor_id} on {target.shown}")
    say(f"  queue {TOOLS_QUEUE}: {_tools_line(agent)}")
    say(f"  concurrency {args.concurrency}; on SIGTERM, running calls get {args.drain:g} s")

    def stopping() -> None:
        say(f"callwright worker stopping: no new calls, running ones get {args.drain:g} s")

    try:
        run_worker(
            agent,
            target.dbos_url,
            executor_id=executor_id,
            concurrency=args.concurrency,
            drain=args.drain,
            ready=lambda: say("callwright worker ready"),
            stopping=stopping,
        )
    finally:
        if flush is not None:
            flush()
    say("callwright worker stopped")
    return 0


def _tools_line(agent: Agent) -> str:
    """The tools the worker is there for (any of the agent's tools runs if a replica
    sends it: all of them with ``CALLWRIGHT_ALL_TOOLS_ON_WORKERS=1`` in the replicas)."""
    marked = [t.name for t in agent.toolbox if t.on_workers]
    if marked:
        return "tools " + ", ".join(marked) + " (marked on_workers)"
    return (
        "no tool is marked on_workers; it runs what replicas send with "
        "CALLWRIGHT_ALL_TOOLS_ON_WORKERS=1"
    )


def _say(line: str) -> None:
    print(line, flush=True)


def _nothing(line: str) -> None:
    pass


def _telemetry(otel: str | None) -> Callable[[], None] | None:
    """``--otel [URL]`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``: the worker's spans (children of
    the replicas' ``execute_tool`` spans) and metrics over OTLP/HTTP."""
    from .telemetry import ENDPOINT_ENV, configure_otlp

    if otel is None and not os.environ.get(ENDPOINT_ENV):
        return None
    return configure_otlp(otel or None, service_name="callwright-worker")
