"""Every exported class and function says what it is for, and every field a user reads
says what it holds.

Checked on the source with ``ast``: a dataclass without a docstring still has a
``__doc__`` (its generated signature), and attribute docstrings (the string under
a field) exist only in the source. Each test lists every offender at once.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
from pathlib import Path
from typing import Any

PACKAGE = importlib.import_module("callwright")
EVENTS = importlib.import_module("callwright.events")
SRC = Path(inspect.getfile(PACKAGE)).parent.parent


@functools.cache
def _tree(path: str) -> ast.Module:
    return ast.parse(Path(path).read_text(encoding="utf-8"))


def _where(obj: Any) -> str:
    path = inspect.getsourcefile(obj)
    assert path is not None, f"no source for {obj!r}"
    return path


def _class_node(cls: type) -> ast.ClassDef:
    """The ``class`` statement that made ``cls``, found by its qualified name."""
    body: list[ast.stmt] = _tree(_where(cls)).body
    node: ast.ClassDef | None = None
    for part in cls.__qualname__.split("."):
        node = next(
            (n for n in reversed(body) if isinstance(n, ast.ClassDef) and n.name == part), None
        )
        assert node is not None, f"class {cls.__qualname__} not found in {_where(cls)}"
        body = node.body
    assert node is not None
    return node


def _function_node(func: Any) -> ast.FunctionDef | ast.AsyncFunctionDef:
    """The ``def`` that made ``func`` (the implementation, not an ``@overload``)."""
    func = inspect.unwrap(func)
    first_line = func.__code__.co_firstlineno
    for node in ast.walk(_tree(_where(func))):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name == func.__name__
            and min([node.lineno, *(d.lineno for d in node.decorator_list)]) == first_line
        ):
            return node
    raise AssertionError(f"def {func.__qualname__} not found in {_where(func)}")


def _label(obj: Any, name: str = "") -> str:
    path = Path(_where(obj)).relative_to(SRC)
    return f"{path}: {obj.__qualname__}{'.' + name if name else ''}"


def _exported() -> list[Any]:
    return [getattr(PACKAGE, name) for name in PACKAGE.__all__]


def _documented_classes() -> list[type]:
    """Dataclasses exported at the top level, and every dataclass of ``callwright.events``."""
    found = [obj for obj in _exported() if inspect.isclass(obj)]
    found += [obj for _, obj in inspect.getmembers(EVENTS, inspect.isclass)]
    return list(
        dict.fromkeys(
            cls
            for cls in found
            if dataclasses.is_dataclass(cls) and cls.__module__.startswith("callwright")
        )
    )


def _field_owner(cls: type, name: str) -> type:
    """The class in the MRO whose body declares the field (a subclass may inherit it)."""
    for klass in cls.__mro__:
        if name in vars(klass).get("__annotations__", {}):
            return klass
    raise AssertionError(f"{cls.__qualname__}.{name} is declared nowhere")


def _has_attribute_docstring(owner: type, name: str) -> bool:
    body = _class_node(owner).body
    for i, node in enumerate(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == name
        ):
            following = body[i + 1] if i + 1 < len(body) else None
            return (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
                and bool(following.value.value.strip())
            )
    raise AssertionError(f"{owner.__qualname__}.{name} has no annotated assignment")


def _undocumented_fields() -> list[str]:
    """``ClassVar``s (an event's ``type``) are not fields; ``_`` fields are private."""
    offenders = []
    for cls in _documented_classes():
        for item in dataclasses.fields(cls):
            if item.name.startswith("_"):
                continue
            owner = _field_owner(cls, item.name)
            if not _has_attribute_docstring(owner, item.name):
                offenders.append(_label(owner, item.name))
    return sorted(set(offenders))


def test_exported_classes_and_functions_have_docstrings() -> None:
    offenders = []
    for obj in _exported():
        if inspect.isclass(obj):
            node: ast.AST = _class_node(obj)
        elif inspect.isfunction(obj):
            node = _function_node(obj)
        else:
            continue  # constants, type aliases, adapters and modules document themselves
        assert isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        docstring = ast.get_docstring(node)
        if not docstring or not docstring.strip():
            offenders.append(_label(obj))
    assert not offenders, "no docstring:\n  " + "\n  ".join(sorted(offenders))


def test_exported_dataclass_fields_have_attribute_docstrings() -> None:
    offenders = _undocumented_fields()
    assert not offenders, "no attribute docstring:\n  " + "\n  ".join(offenders)


@dataclasses.dataclass
class _Sample:
    documented: int = 0
    """Says what it holds."""
    bare: int = 0


def test_the_checks_see_what_they_should() -> None:
    """Guards the checks themselves: they walk the intended classes and catch a bare field."""
    classes = {cls.__name__ for cls in _documented_classes()}
    assert {"Call", "Tool", "PendingCall", "ToolCallResult", "RunStarted", "Custom"} <= classes
    assert "type" not in {f.name for f in dataclasses.fields(EVENTS.RunStarted)}
    assert _has_attribute_docstring(_Sample, "documented")
    assert not _has_attribute_docstring(_Sample, "bare")
