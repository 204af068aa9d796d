"""``src/callwright`` uses its dependencies only through their public names.

A private module or name of a dependency (``dbos._core``, ``from mcp import _x``,
``DBOS._recover_pending_workflows``) may change in any release, and a user's upgrade
would break callwright silently: such a use must fail here. An AST walk of every module
finds imports of private modules or names of other packages, and attribute access of a
private name on a name bound to one of their imports. Dunder names (``__version__``)
are public. The one place for an exception is ``ALLOWED``, each with its reason.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).parents[1] / "src" / "callwright"
OWN = "callwright"

ALLOWED: dict[tuple[str, str], str] = {}
"""``(module path under src/callwright, the private name as reported)`` → why it is
needed. Empty: no module uses a dependency's private name."""


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _foreign(module: str | None, level: int) -> bool:
    """Whether an import is of another package (not relative, not callwright's own, not
    the standard library's own private modules such as ``_thread``)."""
    if level or module is None:
        return False
    top = module.split(".")[0]
    return top != OWN and top not in sys.stdlib_module_names


def private_uses(tree: ast.AST) -> Iterator[str]:
    """Every private module or name of another package the module's code reaches."""
    bound: dict[str, str] = {}  # local name -> the foreign module or name it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _foreign(alias.name, 0):
                    continue
                if any(_private(part) for part in alias.name.split(".")):
                    yield alias.name
                if alias.asname:
                    bound[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    bound[top] = top
        elif isinstance(node, ast.ImportFrom) and _foreign(node.module, node.level):
            module = node.module or ""
            if any(_private(part) for part in module.split(".")):
                yield module
            for alias in node.names:
                if _private(alias.name):
                    yield f"{module}.{alias.name}"
                bound[alias.asname or alias.name] = f"{module}.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in bound:
                yield f"{bound[base.id]}...{node.attr}"


def _modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_the_walk_finds_each_kind_of_private_use() -> None:
    code = """
import dbos._core
import psycopg.pq as pq
from dbos import DBOS, _get_dbos_instance
from dbos._context import DBOSContext
from . import _own
from ._own import _also_own
import _thread
DBOS._recover_pending_workflows([])
pq.PGconn._raw
x.__version__
"""
    assert set(private_uses(ast.parse(code))) == {
        "dbos._context",
        "dbos._core",
        "dbos._get_dbos_instance",
        "dbos.DBOS..._recover_pending_workflows",
        "psycopg.pq..._raw",
    }


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_of_a_dependency(path: Path) -> None:
    where = str(path.relative_to(SRC))
    used = set(private_uses(ast.parse(path.read_text(), str(path))))
    unexplained = sorted(name for name in used if (where, name) not in ALLOWED)
    assert not unexplained, f"{where} uses private names of a dependency: {unexplained}"


def test_every_exception_is_still_needed() -> None:
    """An exception nobody uses any more goes (so the list says what is true)."""
    used = {
        (str(path.relative_to(SRC)), name)
        for path in _modules()
        for name in private_uses(ast.parse(path.read_text(), str(path)))
    }
    assert set(ALLOWED) <= used, sorted(set(ALLOWED) - used)
