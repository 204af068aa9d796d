"""The code blocks of the docs and the README, found the way a reader sees them.

A ```python block runs as it is written, as its own script (in a subprocess, from an
empty folder, with the checkout's package installed). Two HTML comments, invisible on
the page, change that for the block under them:

- ``<!-- skip: why -->``: the block is not run (it needs a key, a browser, a server that
  never stops); the reason is required, so a skip is a decision someone wrote down;
- ``<!-- continue -->``: the block runs after the page's previous block, in the same
  script (a page that builds one example across several blocks).

Written by hand rather than with pytest-markdown-docs: that plugin collects docstrings
of the whole package and runs blocks in-process, where a snippet's ``asyncio.run`` or a
server it starts would share the test run's interpreter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w+-]*)[^\n]*$")
MARK = re.compile(r"^\s*<!--\s*(?P<kind>skip|continue)\s*(?::\s*(?P<why>.*?))?\s*-->\s*$")


@dataclass(frozen=True, slots=True)
class Snippet:
    """One runnable block (with the blocks it continues)."""

    path: Path
    """The Markdown file."""
    line: int
    """The line of its opening fence, from 1."""
    lang: str
    """The fence's language: ``python``, ``js``, ``sh`` ..."""
    code: str
    """The code to run: the block, after the blocks it continues."""
    skip: str | None
    """Why it is not run, or None."""

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def snippets(path: Path, langs: tuple[str, ...] = ("python", "py")) -> list[Snippet]:
    """The blocks of ``path`` in one of ``langs``, in page order."""
    found: list[Snippet] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    mark: tuple[str, str | None] | None = None
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            marked = MARK.match(lines[i])
            if marked is not None:
                mark = (marked["kind"], marked["why"])
            elif lines[i].strip():
                mark = None
            i += 1
            continue
        indent, lang = len(opening["indent"]), opening["lang"]
        body: list[str] = []
        i += 1
        while i < len(lines) and not re.match(rf"^ {{{indent}}}```\s*$", lines[i]):
            body.append(lines[i][indent:])
            i += 1
        start = i - len(body)
        i += 1
        if lang in langs:
            code = "\n".join(body) + "\n"
            kind, why = mark or ("", None)
            if kind == "skip" and not why:
                raise ValueError(f"{path}:{start}: a skip needs a reason (<!-- skip: why -->)")
            if kind == "continue" and found:
                previous = found.pop()
                code = previous.code + code
                found.append(Snippet(path, previous.line, lang, code, previous.skip))
            else:
                found.append(Snippet(path, start, lang, code, why if kind == "skip" else None))
        mark = None
    return found


def documents() -> list[Path]:
    """Every page whose snippets run: the site's pages, the README and DEPLOY.md."""
    pages = sorted((ROOT / "docs").rglob("*.md"))
    return [*pages, ROOT / "README.md", ROOT / "DEPLOY.md"]
