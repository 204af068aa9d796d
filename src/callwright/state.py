"""The run's shared state document and ``_outputPath`` writes, as JSON Patch.

A write is turned into RFC 6902 operations first and then applied, so the
patch a client receives is exactly what changed the server's copy. The
operations are computed by hand rather than by diffing with ``jsonpatch``: a
diff would cost O(size of the state) per write, these cost O(size of the value).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Literal

from ._errors import CallwrightError

OutputMethod = Literal["set", "merge", "assign", "push", "concat"]
"""How an ``_outputMethod`` combines a call's output with what the path already holds."""
OUTPUT_METHODS: tuple[OutputMethod, ...] = ("set", "merge", "assign", "push", "concat")
REF_MARK = "†"
"""Marks a string argument as a reference to the state (``†state.a.b``), not a literal."""

Patch = list[dict[str, Any]]
"""RFC 6902 operations, as sent to clients in ``StateDelta``."""


class StatePathError(CallwrightError, ValueError):
    """An output path or reference that cannot name a place in the state."""


@dataclass(slots=True)
class Ref:
    """A parsed ``†kind.dot.path``."""

    kind: str
    """What the reference points into; a run keeps only ``state``."""
    path: tuple[str, ...]
    """The keys (or list indexes) from the root down."""

    @property
    def pointer(self) -> str:
        """The path as a JSON Pointer, as patches address it."""
        return "".join("/" + _escape(p) for p in self.path)


def parse_ref(text: str) -> Ref:
    """``†state.a.b`` -> Ref("state", ("a","b")); a bare ``a.b`` means ``†state.a.b`` (Q9)."""
    body = text.strip()
    if body.startswith(REF_MARK):
        body = body[len(REF_MARK) :]
        kind, _, rest = body.partition(".")
    else:
        kind, rest = "state", body
    if not kind or not rest or any(not p for p in rest.split(".")):
        raise StatePathError(f"not a state path: {text!r}")
    return Ref(kind, tuple(rest.split(".")))


def output_targets(path: str) -> list[list[Ref]]:
    """An ``_outputPath``: its ``||`` alternatives, each a ``&&`` fan-out of refs."""
    return [
        [parse_ref(target) for target in alternative.split("&&")]
        for alternative in path.split("||")
    ]


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _pointer(path: tuple[str, ...]) -> str:
    return "".join("/" + _escape(p) for p in path)


_MISSING = object()


@dataclass(slots=True)
class RunState:
    """A JSON object shared by a run's calls; every change goes through a patch."""

    data: dict[str, Any] = field(default_factory=dict)
    """The document itself; change it only through ``write`` so clients get every change."""
    version: int = 0
    """How many writes the document has had: a journal stores it again only when this moved."""

    def get(self, path: tuple[str, ...], default: Any = None) -> Any:
        """The value at ``path`` (list indexes as digit strings), or ``default`` if absent."""
        node: Any = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return default
        return node

    def instance_ids(self) -> list[str]:
        """The instances the state holds (``_instances`` keys); every call names one then."""
        instances = self.data.get("_instances")
        return list(instances) if isinstance(instances, dict) else []

    def has(self, path: tuple[str, ...]) -> bool:
        """Whether ``path`` holds a value (None counts): a reference to it can resolve."""
        return self.get(path, _MISSING) is not _MISSING

    def write(self, path: tuple[str, ...], value: Any, method: OutputMethod = "set") -> Patch:
        """Compute the patch for one write, apply it, and return it."""
        if method not in OUTPUT_METHODS:
            raise StatePathError(f"unknown output method {method!r}")
        if not path:
            raise StatePathError("cannot write the whole state")
        ops = self._parents(path)
        ops += _ops_for(path, self.get(path, _MISSING), copy.deepcopy(value), method)
        apply_patch(self.data, ops)
        self.version += 1
        return ops

    def _parents(self, path: tuple[str, ...]) -> Patch:
        ops: Patch = []
        node: Any = self.data
        for i, part in enumerate(path[:-1]):
            child = node.get(part, _MISSING) if isinstance(node, dict) else _MISSING
            if not isinstance(child, dict):
                ops.append({"op": "add", "path": _pointer(path[: i + 1]), "value": {}})
                node = {}
            else:
                node = child
        return ops


def _ops_for(path: tuple[str, ...], existing: Any, value: Any, method: OutputMethod) -> Patch:
    pointer = _pointer(path)
    if method == "push":
        if isinstance(existing, list):
            return [{"op": "add", "path": pointer + "/-", "value": value}]
        start = [] if existing is _MISSING else [existing]
        return [{"op": "add", "path": pointer, "value": [*start, value]}]
    if method == "concat":
        items = value if isinstance(value, list) else [value]
        if isinstance(existing, list):
            return [{"op": "add", "path": pointer + "/-", "value": v} for v in items]
        start = [] if existing is _MISSING else [existing]
        return [{"op": "add", "path": pointer, "value": [*start, *items]}]
    if method in ("merge", "assign") and isinstance(existing, dict) and isinstance(value, dict):
        ops: Patch = []
        for key, sub in value.items():
            child = existing.get(key, _MISSING)
            if method == "merge" and isinstance(child, dict) and isinstance(sub, dict):
                ops += _ops_for((*path, key), child, sub, "merge")
            else:
                ops.append({"op": "add", "path": _pointer((*path, key)), "value": sub})
        return ops
    return [{"op": "add", "path": pointer, "value": value}]


def apply_patch(doc: dict[str, Any], ops: Patch) -> None:
    """Apply the add/replace/remove operations callwright emits, in place."""
    for op in ops:
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in op["path"].split("/")[1:]]
        parent: Any = doc
        for token in tokens[:-1]:
            parent = parent[int(token)] if isinstance(parent, list) else parent[token]
        last = tokens[-1]
        kind = op["op"]
        value = copy.deepcopy(op.get("value"))  # the document must not alias emitted patches
        if isinstance(parent, list):
            if kind == "remove":
                del parent[int(last)]
            elif last == "-":
                parent.append(value)
            elif kind == "add":
                parent.insert(int(last), value)
            else:
                parent[int(last)] = value
        elif kind == "remove":
            del parent[last]
        else:
            parent[last] = value
