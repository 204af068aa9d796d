"""The payments benchmark in small (``bench/payments.py --cycles 3``): a real server
SIGKILLed mid-charge and restarted, three times without ``reconcile`` and three with.
Nothing is charged twice; without the hook every call is reported in doubt, none
dropped; with it none is left in doubt. No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

PAYMENTS = Path(__file__).resolve().parents[2] / "bench" / "payments.py"


def test_payments_bench_charges_once_and_reports_every_call() -> None:
    command = [sys.executable, str(PAYMENTS), "--cycles", "3"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert report["charges made twice"] == 0
    assert report["charges"] == 6
    assert report["without reconcile"] == {"in doubt": 3, "reconciled": 0, "dropped": []}
    assert report["with reconcile"] == {"in doubt": 0, "reconciled": 3, "dropped": []}
