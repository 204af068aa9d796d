"""The documentation site builds in strict mode, and every Python snippet in it runs.

``mkdocs build --strict`` fails on a broken link, a missing API reference or any
warning. The snippets (``tests/snippets.py`` says which blocks run and how) run as a
reader would run them: each as its own script, from an empty folder, on the installed
package; a snippet that needs a model uses the embedded one (``"local"``) or a
``ScriptedModel``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from snippets import ROOT, Snippet, documents, snippets

ALL = [s for page in documents() for s in snippets(page)]


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    mkdocs = Path(sys.executable).with_name("mkdocs")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "api" / "index.html").is_file()


def test_the_snippet_finder_reads_marks(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "```python\na = 1\n```\n\n<!-- continue -->\n```python\nprint(a)\n```\n\n"
        "<!-- skip: needs a key -->\n```python\nraise SystemExit(1)\n```\n\n"
        "```js\nconsole.log(1)\n```\n"
    )
    found = snippets(page)
    assert [(s.code, s.skip) for s in found] == [
        ("a = 1\nprint(a)\n", None),
        ("raise SystemExit(1)\n", "needs a key"),
    ]


@pytest.mark.parametrize("snippet", ALL, ids=[s.id for s in ALL])
def test_the_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    if snippet.skip:
        pytest.skip(snippet.skip)
    script = tmp_path / "snippet.py"
    script.write_text(snippet.code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{snippet.id} failed:\n{done.stdout[-2000:]}{done.stderr[-4000:]}"
