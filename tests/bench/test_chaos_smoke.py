"""bench/kill_any_one.py (the chaos run) still runs: two cycles, a replica SIGKILLed and a
Postgres restart, under runs on both wires, every replay read by the real clients. It
fails when the harness reports a lost run, a tool run twice or in two processes at once,
or a replay a client rejected (its exit status); no timing is asserted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHAOS = Path(__file__).resolve().parents[2] / "bench" / "kill_any_one.py"


def test_the_chaos_run_loses_nothing_in_two_cycles(tmp_path: Path) -> None:
    command = [sys.executable, str(CHAOS), "--cycles", "2", "--seed", "3"]
    command += ["--faults", "replica,restart", "--keep", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=420)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert "runs lost: 0   non-idempotent tools run twice: 0" in done.stdout, out[-4000:]
    assert "replays rejected by a client: 0 of " in done.stdout, out[-4000:]
    assert "tools running in two processes at once: 0" in done.stdout, out[-4000:]
    assert "cycle 2 " in done.stdout and "agui " in done.stdout and "ai7 " in done.stdout
