"""Validation against JSON-Schema blueprints and client (front-end) tool schemas, bounded in cost.

A front end sends its tools' schemas with every request, and the arguments checked
against them may come from the same client (a resumed conversation carries the
calls), so neither can be trusted to be cheap. python-jsonschema, used before,
matched ``pattern`` with Python's backtracking ``re`` (``^(a+)+$`` against a
27-character argument held the event loop ~3 s, doubling per character), compared
``uniqueItems`` pairwise (3,000 distinct objects: 15 s) and ran at ~7 µs a value.

So:

- Validation is jsonschema-rs (Rust, MIT licence): its linear-time ``regex``
  engine (``RegexOptions``, not the backtracking fancy-regex), hashed
  ``uniqueItems``, ~0.15 µs a value. Remote ``$ref`` are never fetched
  (``offline``); ``format`` is an annotation, as the 2020-12 default says and as
  callwright did before.
- A pattern the linear engine cannot run (lookahead, lookbehind, backreferences)
  or that compiles too large refuses the schema when the tool is made, with a
  message that names the pattern: for a client tool that is a 4xx
  ``invalid_tool`` error, never a 500. Refusing was chosen over falling back to
  ``re``: the fallback would need a bound that stops it, and a thread cannot stop
  ``re`` (it holds the GIL) nor keep the loop free while it runs.
- One check costs about (values in the arguments) x (subschemas applied to one
  value). The second factor, the schema's *width*, is computed here when the tool
  is made, through ``$ref`` (local pointers and anchors), the in-place
  applicators (allOf, anyOf, oneOf, not, if/then/else, dependentSchemas) and
  ``patternProperties``. A schema wider than ``MAX_WIDTH`` (an anyOf of two
  references nested 20 deep is 2^20 wide: seconds to minutes per check) or with
  more than ``MAX_NODES`` subschemas is refused; so are embedded ``$id`` and
  dynamic references, which would let a schema hide its width. Arguments whose
  values x width exceed ``CHECK_BUDGET`` are refused as too large to check before
  the check starts.
- An invalid call reports its first error only: jsonschema-rs collects all errors
  eagerly (a million wrong items: 14 s), python-jsonschema listed them all.

Validation stays on the event loop: bounded this way one check takes
milliseconds (see RELIABILITY.md), and jsonschema-rs holds the GIL while it
runs, so a worker thread would not keep the loop free anyway.

The width walk is written here because no library computes it: validators apply a
schema, they do not bound what applying it costs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote

import jsonschema_rs

from .call import InvalidArgs

Validator = Callable[[dict[str, Any]], Any]

MAX_NODES = 10_000
"""The most subschemas a tool schema may hold."""
MAX_WIDTH = 128
"""The most subschemas (and ``patternProperties`` patterns) that may apply to one value."""
CHECK_BUDGET = 1_500_000
"""Values x width one check may cost (at most ~0.1 s measured); beyond, arguments are refused."""
CHEAP_WIDTH = 2
"""Up to this width no budget is counted: the check costs about what counting would."""
MAX_MESSAGE = 500
"""Error texts longer than this lose their middle: a bad 1 MB value is not echoed to the model."""

_LINEAR = jsonschema_rs.RegexOptions(size_limit=1 << 20)
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_MANY = ("allOf", "anyOf", "oneOf")
_CHILD_ONE = (
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
_CHILD_MAP = ("properties", "patternProperties", "$defs", "definitions")


def compile_validator(schema: dict[str, Any]) -> Validator:
    """A validator for ``schema``; raises ValueError saying why a schema is refused."""
    width = schema_width(schema)
    try:
        checker = jsonschema_rs.validator_for(
            schema, pattern_options=_LINEAR, offline=True, validate_formats=False
        )
    except ValueError as exc:  # jsonschema_rs.ValidationError, or a value JSON cannot hold
        raise ValueError(f"invalid JSON Schema: {_first_line(str(exc))}") from None
    budget = CHECK_BUDGET // width if width > CHEAP_WIDTH else 0

    def validate(args: dict[str, Any]) -> Any:
        if budget and _count_values(args, budget) > budget:
            raise InvalidArgs("the arguments are too large to check against this tool's schema")
        try:
            checker.validate(args)  # the first error only: collecting all of them is unbounded
        except jsonschema_rs.ValidationError as exc:
            raise InvalidArgs(describe_error(exc)) from None
        except ValueError as exc:  # a value JSON cannot hold
            raise InvalidArgs(str(exc)) from None
        return args

    return validate


def describe_error(error: jsonschema_rs.ValidationError) -> str:
    """``path: message``, the way callwright has always worded a schema error."""
    kind = error.kind
    if isinstance(kind, jsonschema_rs.ValidationErrorKind.Required):
        message = f"{kind.property!r} is a required property"  # python-jsonschema's wording
    else:
        message = error.message
    if len(message) > MAX_MESSAGE:  # the value is quoted first, the rule last: keep both ends
        message = f"{message[: MAX_MESSAGE * 2 // 3]} … {message[-MAX_MESSAGE // 3 :]}"
    where = ".".join(str(p) for p in error.instance_path)
    return f"{where}: {message}" if where else message


def schema_width(schema: Any) -> int:
    """The most subschemas one value can meet; raises ValueError for a refused schema."""
    walk = _Walk(schema)
    try:
        walk.visit_all()
        widths = [walk.width(node) for node in walk.nodes]
    except RecursionError:
        raise ValueError("the schema nests or refers too deeply") from None
    width = max(widths, default=1)
    if width > MAX_WIDTH:
        raise ValueError(
            f"the schema can apply more than {MAX_WIDTH} subschemas to one value "
            "(anyOf/allOf/oneOf through $ref multiply): it cannot be checked in bounded time"
        )
    return width


def _count_values(value: Any, limit: int) -> int:
    """Values in ``value``, counted by containers' lengths; stops once past ``limit``."""
    seen = 1
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            seen += len(item)
            if seen > limit:
                return seen
            stack.extend(v for v in item.values() if isinstance(v, dict | list))
        elif isinstance(item, list):
            seen += len(item)
            if seen > limit:
                return seen
            stack.extend(v for v in item if isinstance(v, dict | list))
    return seen


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0][:MAX_MESSAGE]


class _Walk:
    """Every subschema of one schema, its anchors, and (memoised) each one's width."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.nodes: list[dict[str, Any]] = []
        self.anchors: dict[str, dict[str, Any]] = {}
        self._widths: dict[int, int] = {}
        self._open: set[int] = set()

    def visit_all(self) -> None:
        stack = [self.root]
        seen: set[int] = set()
        while stack:
            node = stack.pop()
            if not isinstance(node, dict) or id(node) in seen:
                continue
            seen.add(id(node))
            self._check_node(node)
            self.nodes.append(node)
            if len(self.nodes) > MAX_NODES:
                raise ValueError(f"the schema has more than {MAX_NODES} subschemas")
            stack.extend(_children(node))

    def _check_node(self, node: dict[str, Any]) -> None:
        if "$id" in node and node is not self.root:
            raise ValueError("an embedded $id is not supported in a tool schema")
        for key in ("$dynamicRef", "$recursiveRef"):
            if key in node:
                raise ValueError(f"{key} is not supported in a tool schema")
        anchor = node.get("$anchor")
        if isinstance(anchor, str):
            self.anchors[anchor] = node
        pattern = node.get("pattern")
        if isinstance(pattern, str):
            check_pattern(pattern)
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            for key in patterns:
                check_pattern(key)

    def width(self, node: Any) -> int:
        """1 + the widths of the subschemas applied in place; a reference cycle adds nothing."""
        if not isinstance(node, dict):
            return 1
        key = id(node)
        if key in self._widths:
            return self._widths[key]
        if key in self._open:
            return 0
        self._open.add(key)
        total = 1 + len(node.get("patternProperties") or ())
        for sub in _in_place(node):
            total += self.width(sub)
            if total > MAX_WIDTH:
                break  # refused anyway: stop before an exponential schema is counted out
        ref = node.get("$ref")
        if isinstance(ref, str) and total <= MAX_WIDTH:
            total += self.width(self._resolve(ref))
        self._open.discard(key)
        self._widths[key] = total
        return total

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None  # remote: refused when the validator is built (offline)
        fragment = unquote(ref[1:])
        if fragment and not fragment.startswith("/"):
            return self.anchors.get(fragment)
        node: Any = self.root
        for part in fragment.split("/")[1:]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict):
                node = node.get(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        return node


def check_pattern(pattern: str) -> None:
    """Refuse a pattern the linear-time engine cannot run, naming it."""
    try:
        jsonschema_rs.validator_for({"pattern": pattern}, pattern_options=_LINEAR)
    except jsonschema_rs.ValidationError:
        raise ValueError(
            f"pattern {pattern[:200]!r} is not supported: patterns are matched in linear time, "
            "so lookahead, lookbehind and backreferences (and very large patterns) are refused"
        ) from None


def _in_place(node: dict[str, Any]) -> Iterator[Any]:
    """Subschemas applied to the same value as ``node``."""
    for key in _IN_PLACE_ONE:
        if key in node:
            yield node[key]
    for key in _IN_PLACE_MANY:
        value = node.get(key)
        if isinstance(value, list):
            yield from value
    for key in ("dependentSchemas", "dependencies"):
        value = node.get(key)
        if isinstance(value, dict):
            yield from (v for v in value.values() if isinstance(v, dict))


def _children(node: dict[str, Any]) -> Iterator[Any]:
    """Every subschema directly under ``node``, in place or applied to its parts."""
    yield from _in_place(node)
    for key in _CHILD_ONE:
        value = node.get(key)
        if isinstance(value, dict):
            yield value
        elif isinstance(value, list):  # draft 2019 and older: items as a list
            yield from value
    for key in _CHILD_MAP:
        value = node.get(key)
        if isinstance(value, dict):
            yield from value.values()
    prefix = node.get("prefixItems")
    if isinstance(prefix, list):
        yield from prefix
