"""The generated reference pages are what the code makes today.

``docs/reference/wire.md`` is recorded from a real server and ``docs/reference/cli.md``
from the argument parser (``tests/docs_gen.py``); a change to a frame, a request shape
or an option makes the committed page stale, and this test says how to rewrite it.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
from pathlib import Path

from starlette.routing import Route

import docs_gen
from callwright.server import create_app


def _stale(path: Path, fresh: str) -> str:
    committed = path.read_text(encoding="utf-8") if path.exists() else ""
    if committed == fresh:
        return ""
    diff = difflib.unified_diff(
        committed.splitlines(), fresh.splitlines(), "committed", "generated", lineterm="", n=1
    )
    shown = "\n".join(list(diff)[:60])
    return (
        f"{path.relative_to(docs_gen.ROOT)} is stale: run `{docs_gen.REGENERATE}` "
        f"(make docs-gen) and commit it\n{shown}"
    )


def test_the_wire_page_is_what_the_server_sends() -> None:
    message = _stale(docs_gen.WIRE_PAGE, docs_gen.wire_page())
    assert not message, message


def test_the_cli_page_is_each_subcommands_help() -> None:
    message = _stale(docs_gen.CLI_PAGE, docs_gen.cli_page())
    assert not message, message


def test_the_wire_page_has_every_flow_on_both_wires() -> None:
    page = docs_gen.WIRE_PAGE.read_text(encoding="utf-8")
    flows = re.findall(r"^## (.+)$", page, flags=re.M)
    assert flows[:-1] == [
        "Text",
        "A server tool",
        "A failing tool",
        "Approval: approve",
        "Approval: deny",
        "Approval: edit",
        "Approval: a policy decides",
        "A front-end tool",
        "Progress and partial output",
        "Files",
        "A tool's question (elicitation)",
        "Resume after a disconnect",
    ]
    for section in re.split(r"^## ", page, flags=re.M)[1:-1]:
        assert "#### AG-UI" in section and "#### AI SDK" in section, section[:40]


def test_no_id_the_server_made_is_left_on_the_page() -> None:
    page = docs_gen.WIRE_PAGE.read_text(encoding="utf-8")
    assert not docs_gen.Placeholders.PATTERN.search(page)
    frames = [line[6:] for line in page.splitlines() if line.startswith("data: {")]
    assert frames and all(isinstance(json.loads(f), dict) for f in frames)


def _refusal_codes() -> set[str]:
    """Every code the server, the wire decoders, the journal and the approval checks refuse a
    request with."""
    found: set[str] = set()
    for folder in ("server", "wire", "store", "approvals"):
        for path in (docs_gen.ROOT / "src" / "callwright" / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", getattr(node.func, "attr", ""))
                if name not in ("WireError", "Rejected"):
                    continue
                code = node.args[1] if len(node.args) > 1 else None
                if isinstance(code, ast.Constant) and isinstance(code.value, str):
                    found.add(code.value)
    return found


def test_the_http_page_names_every_route_and_error_code() -> None:
    page = (docs_gen.ROOT / "docs" / "reference" / "http.md").read_text(encoding="utf-8")
    codes = _refusal_codes()
    assert {"thread_busy", "unknown_approval", "invalid_json"} <= codes
    missing = sorted(code for code in codes if f"`{code}`" not in page)
    assert not missing, f"docs/reference/http.md does not explain {missing}"
    app = create_app(docs_gen.make_agent())
    for route in app.routes:
        assert isinstance(route, Route)
        path = route.path
        for method in sorted((route.methods or set()) - {"HEAD"}):
            assert f"`{method}`" in page and f"`{path}" in page, (method, path)
