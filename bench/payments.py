"""Side effects exactly once, or honestly in doubt: a fake payments service on
127.0.0.1 that honours ``Idempotency-Key``, an agent whose ``charge`` tool calls it with
``ctx.idempotency_key``, and a ``callwright serve`` (SQLite journal) SIGKILLed while the
charge is in flight, then restarted and the thread resumed; without the tool's
``reconcile`` hook and with it.

``python bench/payments.py [--cycles 100]`` prints, for each mode: charges made twice
(goal 0), calls reported in doubt, calls reconciled, and calls whose outcome was never
reported (dropped, goal 0). Figures go to RELIABILITY.md; a ``--cycles 3`` run is in
tests/bench/test_payments_smoke.py.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).parent))
from _payments_app import RECONCILE_ENV, URL_ENV
from kill_restart import ServerProcess, post

APP = Path(__file__).with_name("_payments_app.py")


class Payments:
    """The service: a charge per idempotency key (a repeated key gets the first charge
    back), every charge logged by order; a charge's response is held back until the
    bench has killed the server that asked for it (``release``)."""

    def __init__(self) -> None:
        self.by_key: dict[str, dict[str, Any]] = {}
        self.charges: Counter[str] = Counter()
        self.replayed = 0
        self.lock = threading.Lock()
        self.charged = threading.Condition(self.lock)
        self.release = threading.Event()
        service = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return None

            def do_POST(self) -> None:
                key = self.headers.get("Idempotency-Key") or ""
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with service.lock:
                    found = service.by_key.get(key)
                    if found is None:
                        found = {"id": f"ch_{len(service.by_key) + 1}", **body, "key": key}
                        service.by_key[key] = found
                        service.charges[body["order"]] += 1
                        service.charged.notify_all()
                        fresh = True
                    else:
                        service.replayed += 1
                        fresh = False
                if fresh:  # in flight until the caller is gone
                    service.release.wait(30)
                with contextlib.suppress(OSError):
                    self._send(200, found)

            def do_GET(self) -> None:
                key = self.path.rsplit("/", 1)[-1]
                with service.lock:
                    found = service.by_key.get(key)
                self._send(404 if found is None else 200, found or {"error": "no such charge"})

            def _send(self, status: int, value: Any) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def wait_charged(self, order: str, timeout: float = 30) -> None:
        with self.charged:
            if not self.charged.wait_for(lambda: self.charges[order] > 0, timeout):
                raise RuntimeError(f"order {order} was never charged")

    def close(self) -> None:
        self.release.set()
        self.http.shutdown()


class PaymentsServer(ServerProcess):
    """``callwright serve`` of the payments agent on a SQLite journal."""

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "callwright.cli", "serve", "--agent", f"{APP}:make_agent",
            "--journal", self.db, "--port", str(self.port), "--log-level", "warning",
        ]  # fmt: skip


@dataclass
class Tally:
    """What the resumed threads reported for their charge."""

    in_doubt: int = 0
    reconciled: int = 0
    dropped: list[str] = field(default_factory=list)


def _post_quietly(url: str, thread: str, text: str) -> None:
    with contextlib.suppress(httpx.HTTPError):  # the server dies under this request
        post(url, thread, text)


def cycle(server: PaymentsServer, payments: Payments, order: str, tally: Tally) -> None:
    """Charge, SIGKILL the server while the charge is in flight, restart, resume."""
    payments.release.clear()
    worker = threading.Thread(target=_post_quietly, args=(server.url, order, f"charge {order} 5"))
    worker.start()
    payments.wait_charged(order)
    server.kill()
    payments.release.set()
    worker.join(30)
    server.start()
    events = post(server.url, order, None)
    results = [e for e in events if e["type"] == "TOOL_CALL_RESULT"]
    if not results:
        tally.dropped.append(order)
    elif results[0].get("metadata", {}).get("callwright", {}).get("errorKind") == "in-doubt":
        tally.in_doubt += 1
    else:
        tally.reconciled += 1


def run_mode(cycles: int, reconcile: bool, payments: Payments, workdir: str) -> Tally:
    os.environ[URL_ENV] = payments.url
    os.environ[RECONCILE_ENV] = "1" if reconcile else "0"
    mode = "with" if reconcile else "without"
    server = PaymentsServer(str(Path(workdir) / f"{mode}.db"), str(Path(workdir) / "unused.log"))
    server.start()
    tally = Tally()
    try:
        for n in range(cycles):
            cycle(server, payments, f"{mode}-{n}", tally)
    finally:
        server.stop()
    return tally


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cycles", type=int, default=100)
    args = parser.parse_args(argv)
    payments = Payments()
    report: dict[str, Any] = {"cycles": args.cycles}
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as workdir:
            for reconcile in (False, True):
                tally = run_mode(args.cycles, reconcile, payments, workdir)
                report["with reconcile" if reconcile else "without reconcile"] = {
                    "in doubt": tally.in_doubt,
                    "reconciled": tally.reconciled,
                    "dropped": tally.dropped,
                }
    finally:
        payments.close()
    report["charges made twice"] = sum(1 for n in payments.charges.values() if n > 1)
    report["charges"] = sum(payments.charges.values())
    report["repeated keys answered with the first charge"] = payments.replayed
    report["seconds"] = round(time.monotonic() - started, 1)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
