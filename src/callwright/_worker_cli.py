"""``callwright worker``: a process that runs the tools marked ``on_workers`` for the
replicas of ``serve --database`` (``callwright.durable._workers``).

Kept out of ``cli`` so that module stays small; DBOS is imported only when the
command runs, so the other commands work without the durable extra.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

from ._cli_options import otel_option


def worker_parser(sub: Any, model_options: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add ``worker`` to the subcommands; ``model_options`` adds --agent and the model's."""
    w = sub.add_parser("worker", help="run the tools marked on_workers for serve --database")
    w.add_argument(
        "--database",
        required=True,
        metavar="URL",
        help="the database the replicas share (postgresql://…; sqlite:///… on one host)",
    )
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
    w.add_argument("--quiet", action="store_true", help="print nothing when ready")
    otel_option(w)
    model_options(w)
    w.set_defaults(handler=worker)


def worker(args: argparse.Namespace) -> int:
    """Serve the tools queue until SIGTERM or SIGINT."""
    from .cli import chosen_agent

    try:
        from .durable import run_worker
    except ImportError as exc:
        print(f"callwright worker needs the durable extra ({exc})")
        return 2
    flush = _telemetry(args.otel)
    ready = None if args.quiet else lambda: print("callwright worker ready", flush=True)
    try:
        run_worker(
            chosen_agent(args),
            args.database,
            executor_id=args.executor_id,
            concurrency=args.concurrency,
            drain=args.drain,
            ready=ready,
        )
    finally:
        if flush is not None:
            flush()
    return 0


def _telemetry(otel: str | None) -> Callable[[], None] | None:
    """``--otel [URL]`` or ``OTEL_EXPORTER_OTLP_ENDPOINT``: the worker's spans (children of
    the replicas' ``execute_tool`` spans) and metrics over OTLP/HTTP."""
    from .telemetry import ENDPOINT_ENV, configure_otlp

    if otel is None and not os.environ.get(ENDPOINT_ENV):
        return None
    try:
        return configure_otlp(otel or None, service_name="callwright-worker")
    except RuntimeError as exc:
        raise SystemExit(str(exc)) from None
