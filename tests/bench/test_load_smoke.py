"""bench/load.py still runs: five concurrent AG-UI runs against the in-memory callwright
server, every one streamed to the end. No timing is asserted (the figures are for
BENCHMARKS.md, on a machine that is not running the test suite)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LOAD = Path(__file__).resolve().parents[2] / "bench" / "load.py"


def test_load_bench_runs_every_stream_to_the_end(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    command = [sys.executable, str(LOAD), "--cases", "callwright", "--runs", "5"]
    command += ["--repeats", "1", "--source", "worktree", "--timeout", "60"]
    command += ["--max-seconds", "90", "--json", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    [row] = json.loads(out.read_text())
    assert row["case"] == "callwright" and row["n"] == 5
    assert row["runs_ok"] == 5
    assert row["fewest_frames"] > 0
    assert row["events_per_s"] > 0 and row["peak_rss_mb"] > 0
    assert "| callwright | 5 |" in done.stdout
