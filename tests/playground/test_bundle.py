"""The committed playground bundle is what its source builds to, and the server serves it.

``playground.js`` is committed so that ``make run`` needs no Node.js; this test rebuilds
it with the pinned esbuild from the playground's own npm install (``make test`` runs
``npm ci`` there) and compares the bytes.
"""

from __future__ import annotations

import json
import shlex
import subprocess
from pathlib import Path

import httpx
import pytest

import callwright.playground

PLAYGROUND = Path(callwright.playground.__file__).parent
ESBUILD = PLAYGROUND / "node_modules" / ".bin" / "esbuild"


def test_the_committed_bundle_is_up_to_date(tmp_path: Path) -> None:
    if not ESBUILD.exists():
        pytest.fail(f"{ESBUILD} is missing: run `make test` (it runs npm ci in {PLAYGROUND})")
    command = shlex.split(json.loads((PLAYGROUND / "package.json").read_text())["scripts"]["build"])
    assert command[0] == "esbuild" and "--outfile=playground.js" in command
    out = tmp_path / "playground.js"
    command = [
        str(ESBUILD),
        *(f"--outfile={out}" if a.startswith("--outfile=") else a for a in command[1:]),
    ]
    subprocess.run(command, cwd=PLAYGROUND, check=True, capture_output=True, timeout=120)
    assert out.read_bytes() == (PLAYGROUND / "playground.js").read_bytes(), (
        "playground.js is stale: run `npm run build` in src/callwright/playground and commit it"
    )


def test_the_server_serves_the_page_and_its_bundle(server: object) -> None:
    url = server.url  # type: ignore[attr-defined]
    page = httpx.get(url + "/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/playground.js"></script>' in page.text
    script = httpx.get(url + "/playground.js")
    assert script.status_code == 200
    assert script.headers["content-type"].startswith("text/javascript")
    assert script.content == (PLAYGROUND / "playground.js").read_bytes()
