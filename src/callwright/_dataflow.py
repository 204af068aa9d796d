"""The Acts dataflow inside one step: ``†`` references in arguments, the paths
calls write through ``_outputPath``, the order that follows, and resolution.

A call that reads a path another call of the same step writes runs after it;
cycles and references that nothing can satisfy are errors before anything runs
(spec Q11). Scheduling is by levels of the dependency graph: simple to reason
about, and at most one level of concurrency is lost against a fully dynamic
scheduler. The standard library's ``graphlib`` finds the order and the cycles.
"""

from __future__ import annotations

import copy
import graphlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .call import Call, InvalidArgs, ToolError
from .state import REF_MARK, Ref, RunState, StatePathError, output_targets, parse_ref

INSTANCES = "_instances"
"""The state key under which each instance keeps its own values."""


@dataclass(slots=True)
class Expr:
    """A reference expression: one ref, ``a || b`` (first present) or ``a && b`` (all, last)."""

    refs: list[Ref]
    """The references in the order written."""
    op: str
    """``""`` for a single reference, else ``"||"`` or ``"&&"``."""


def parse_expr(text: str) -> Expr:
    """Parse a reference string; mixing ``||`` and ``&&`` is refused as ambiguous."""
    if "||" in text and "&&" in text:
        raise StatePathError(f"mix of || and && in {text!r}")
    op = "||" if "||" in text else "&&" if "&&" in text else ""
    parts = [p.strip() for p in text.split(op)] if op else [text]
    return Expr([parse_ref(p) for p in parts], op)


def is_ref(value: Any) -> bool:
    """Whether an argument value is a state reference rather than a literal string."""
    return isinstance(value, str) and value.lstrip().startswith(REF_MARK)


def find_refs(value: Any) -> Iterator[str]:
    """Every reference string inside an argument value, depth first."""
    if is_ref(value):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from find_refs(v)
    elif isinstance(value, list):
        for v in value:
            yield from find_refs(v)


def instance_path(path: tuple[str, ...], instance: str | None) -> tuple[str, ...]:
    """Where ``path`` lives for a call that names an instance (unchanged for none)."""
    return (INSTANCES, instance, *path) if instance else path


def reads(call: Call) -> list[tuple[str, ...]]:
    """State paths the call's arguments read (instance-scoped where the call names one)."""
    instance = call.meta.get("_instance")
    paths = []
    for text in find_refs(call.arguments or {}):
        for ref in parse_expr(text).refs:
            paths.append(instance_path(ref.path, instance))
            if instance:
                paths.append(ref.path)  # reads fall back to the global value
    return paths


def writes(call: Call) -> list[tuple[str, ...]]:
    """State paths the call's ``_outputPath`` may write: every alternative and fan-out target."""
    path = call.meta.get("_outputPath")
    if not isinstance(path, str):
        return []
    instance = call.meta.get("_instance")
    return [
        instance_path(ref.path, instance)
        for alternative in output_targets(path)
        for ref in alternative
    ]


def _overlaps(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


@dataclass(slots=True)
class Plan:
    """The order of a step's runnable calls, and the ones that cannot run now."""

    levels: list[list[Call]]
    """Each level may run concurrently, after the ones before."""
    errors: dict[str, ToolError]
    """Calls refused before anything runs (a cycle, a reference nothing satisfies), by id."""
    blocked: set[str]
    """Ids of calls that wait for a call waiting on a human or a client: they run on resume."""


def plan_levels(calls: list[Call], state: RunState, waiting: Sequence[Call] = ()) -> Plan:
    """Order calls by their data dependencies.

    ``waiting`` are calls of the same step that wait for an approval or a
    client: a call that reads what one of them writes is *blocked* (it stays
    open and runs when the run resumes), not refused.
    """
    errors: dict[str, ToolError] = {}
    writers = [*calls, *waiting]
    written = {c.id: writes(c) for c in writers}
    deps: dict[str, set[str]] = {}
    for call in calls:
        needs: set[str] = set()
        for path in reads(call):
            needs.update(
                other.id
                for other in writers
                if other is not call and any(_overlaps(path, w) for w in written[other.id])
            )
        deps[call.id] = needs
        missing = _unsatisfiable(call, state, writers, written)
        if missing is not None:
            errors[call.id] = InvalidArgs(
                f"{missing} is not in the state and no call in this step writes it"
            )
    for cycle in _cycles(deps):
        names = " -> ".join(cycle + cycle[:1])
        for call_id in cycle:
            errors.setdefault(call_id, InvalidArgs(f"dependency cycle between calls: {names}"))
    _fail_dependents(deps, errors)
    blocked = _blocked(deps, {c.id for c in waiting}, errors)
    return Plan(_levels(calls, deps, set(errors) | blocked), errors, blocked)


def _levels(calls: list[Call], deps: dict[str, set[str]], excluded: set[str]) -> list[list[Call]]:
    """Batches of ``graphlib``'s topological order: each batch runs after the ones before.

    Only dependencies between the calls that run count: a dependency on a refused
    call already refused its dependents, and one on a waiting call blocked them.
    """
    by_id = {c.id: c for c in calls if c.id not in excluded}
    sorter = graphlib.TopologicalSorter({i: deps[i] & by_id.keys() for i in by_id})
    sorter.prepare()
    levels: list[list[Call]] = []
    while sorter.is_active():
        ready = set(sorter.get_ready())
        levels.append([c for c in by_id.values() if c.id in ready])  # in call order
        sorter.done(*ready)
    return levels


def _blocked(
    deps: dict[str, set[str]], waiting: set[str], errors: dict[str, ToolError]
) -> set[str]:
    """Calls that depend, directly or through others, on a waiting call."""
    blocked: set[str] = set()
    changed = True
    while changed:
        changed = False
        for call_id, needs in deps.items():
            if call_id not in blocked and call_id not in errors and needs & (waiting | blocked):
                blocked.add(call_id)
                changed = True
    return blocked


def _unsatisfiable(
    call: Call, state: RunState, calls: list[Call], written: dict[str, list[tuple[str, ...]]]
) -> str | None:
    instance = call.meta.get("_instance")
    for text in find_refs(call.arguments or {}):
        expr = parse_expr(text)
        available = [
            state.has(instance_path(r.path, instance))
            or (instance is not None and state.has(r.path))
            or any(
                _overlaps(instance_path(r.path, instance), w)
                for other in calls
                if other is not call
                for w in written[other.id]
            )
            for r in expr.refs
        ]
        ok = any(available) if expr.op == "||" else all(available)
        if not ok:
            return text.strip()
    return None


def _cycles(deps: dict[str, set[str]]) -> list[list[str]]:
    """Each dependency cycle once: ``graphlib`` names one per try, so remove it and retry."""
    graph = {node: set(needs) for node, needs in deps.items()}
    found: list[list[str]] = []
    while True:
        try:
            graphlib.TopologicalSorter(graph).prepare()
        except graphlib.CycleError as exc:
            cycle: list[str] = list(dict.fromkeys(exc.args[1]))
            found.append(cycle)
            for node in cycle:
                graph.pop(node, None)
            for needs in graph.values():
                needs.difference_update(cycle)
        else:
            return found


def _fail_dependents(deps: dict[str, set[str]], errors: dict[str, ToolError]) -> None:
    changed = True
    while changed:
        changed = False
        for call_id, needs in deps.items():
            if call_id in errors:
                continue
            failed = needs & set(errors)
            if failed:
                errors[call_id] = InvalidArgs(
                    "depends on a call that cannot run: " + ", ".join(sorted(failed))
                )
                changed = True


# --- resolution --------------------------------------------------------------------


_MISSING = object()


def _read(state: RunState, ref: Ref, instance: str | None) -> Any:
    if ref.kind != "state":
        raise InvalidArgs(f"unknown reference kind †{ref.kind} (only †state is kept by a run)")
    if instance:
        value = state.get(instance_path(ref.path, instance), _MISSING)
        if value is not _MISSING:
            return value
    return state.get(ref.path, _MISSING)


def resolve_expr(text: str, state: RunState, instance: str | None) -> Any:
    """The value of one reference string now: the first present for ``||``, the last for ``&&``."""
    expr = parse_expr(text)
    values = [_read(state, ref, instance) for ref in expr.refs]
    if expr.op == "||":
        for value in values:
            if value is not _MISSING:
                return value
    elif all(v is not _MISSING for v in values):
        return values[-1]
    raise InvalidArgs(f"{text.strip()} has no value in the state")


def resolve(value: Any, state: RunState, instance: str | None) -> Any:
    """The argument value with every reference replaced by what the state holds now."""
    if is_ref(value):
        return resolve_expr(value, state, instance)
    if isinstance(value, dict):
        return {k: resolve(v, state, instance) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, state, instance) for v in value]
    return value


# --- scopes ------------------------------------------------------------------------


def scope_for(call: Call, state: RunState, input_text: str) -> dict[str, Any]:
    """The parts of the parent context a call's ``_scopes`` lets through (spec A8).

    ``state`` is the call's instance state over the global one, ``input`` the
    run's first user message, and a ``†state.x`` entry that one value.
    """
    scopes = call.meta.get("_scopes")
    if not scopes:
        return {}
    if isinstance(scopes, str):
        scopes = [scopes]
    instance = call.meta.get("_instance")
    scope: dict[str, Any] = {}
    for entry in scopes:
        if entry == "state":
            scope["state"] = _instance_view(state, instance)
        elif entry == "input":
            scope["input"] = input_text
        elif is_ref(entry):
            ref = parse_ref(entry)
            value = _read(state, ref, instance)
            scope[".".join(ref.path)] = None if value is _MISSING else value
    return scope


def _instance_view(state: RunState, instance: str | None) -> dict[str, Any]:
    glob = {k: v for k, v in state.data.items() if k != INSTANCES}
    if not instance:
        return copy.deepcopy(glob)
    own = state.get((INSTANCES, instance), {})
    return copy.deepcopy({**glob, **(own if isinstance(own, dict) else {})})
