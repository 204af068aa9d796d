"""The Acts blueprint rules, in one place: meta fields, output paths, ``†`` references,
``_instance``, ``_scopes`` and latent ``_output``.

The loop calls two hooks: :func:`complete_input` when a call's arguments are complete
(split the ``_`` meta fields off, check them against the blueprint and the state, and
decide whether validation waits for references), and :func:`after_result` when a call
has its result (write it through ``_outputPath``, or where an Acts data message says).
The executor asks :func:`plan` for the dataflow order of a step and :func:`resolve`
for a deferred call's arguments; both live in ``_dataflow``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._dataflow import Plan, find_refs, instance_path, parse_expr, plan_levels, resolve, scope_for
from .call import Call, InvalidArgs, ToolResult, split_meta
from .events import StateDelta
from .state import OUTPUT_METHODS, REF_MARK, RunState, output_targets
from .tool import Tool
from .toolbox import Toolbox

__all__ = [
    "Plan",
    "after_result",
    "answer_latent",
    "complete_input",
    "plan",
    "resolve",
    "restore_input",
    "scope_for",
]

plan = plan_levels


def complete_input(
    call: Call,
    parsed: dict[str, Any],
    text: str,
    toolbox: Toolbox,
    instances: Sequence[str],
) -> None:
    """Hook 1: the call's arguments are complete and parsed (a JSON object).

    ``text`` is the raw argument JSON: scanning it for ``"_`` and ``†`` first keeps
    the common call (no meta, no references) free of any walk over its arguments.
    Raises ``ToolError`` for meta or references the blueprint does not allow.
    """
    params, meta = split_meta(parsed) if '"_' in text else (parsed, {})
    call.meta = meta
    call.arguments = params
    tool = call.tool
    if tool is None:
        return
    if tool.meta:
        call.meta = {**meta, **tool.fixed_meta()}
    maybe_refs = REF_MARK in text or "\\u2020" in text  # † or its JSON escape
    has_refs = maybe_refs and any(True for _ in find_refs(params))
    if call.meta or has_refs or instances:
        _check_meta(call, tool, toolbox, instances, has_refs)
    if has_refs:
        call.deferred = True  # validated when the references are resolved
    else:
        call.validated = tool.validate(params)


def restore_input(call: Call, arguments: dict[str, Any]) -> None:
    """A call read back from history (resuming): meta split off, fixed meta restored.

    Validation that fails here fails the call; references defer it as in a live step.
    """
    call.arguments, call.meta = split_meta(arguments)
    tool = call.tool
    if tool is None:
        return
    if tool.meta:
        call.meta = {**call.meta, **tool.fixed_meta()}
    if any(True for _ in find_refs(call.arguments)):
        call.deferred = True
    else:
        call.validated = tool.validate(call.arguments)


def answer_latent(call: Call) -> None:
    """A latent tool is answered by the model itself, in the call's ``_output``."""
    if "_output" not in call.meta:
        call.fail(InvalidArgs(f"{call.tool_name} is answered by you: fill `_output`"))
    else:
        call.succeed(ToolResult(call.meta["_output"]))


def after_result(call: Call, state: RunState) -> list[StateDelta]:
    """Hook 2: store a successful result at the call's ``_outputPath``, as a state delta.

    An activity may instead return an Acts data message
    (``{"type": "data", "kind": "state", "data": {...}}``) to choose where its
    result goes, e.g. the failure branch of ``†state.ok || †state.missing``.
    """
    if call.result is None or not (call.meta or isinstance(call.result.content, dict)):
        return []
    instance = call.meta.get("_instance")
    content = call.result.content
    patch: list[dict[str, Any]] = []
    if _is_data_message(content):
        for key, value in content["data"].items():
            patch += state.write(instance_path((key,), instance), value, "merge")
        return [StateDelta(patch)] if patch else []
    path = call.meta.get("_outputPath")
    if not path or not isinstance(path, str):
        return []
    method = call.meta.get("_outputMethod", "set")
    for ref in output_targets(path)[0]:  # a plain value goes to the first alternative
        patch += state.write(instance_path(ref.path, instance), content, method)
    return [StateDelta(patch)]


def _check_meta(
    call: Call, tool: Tool, toolbox: Toolbox, instances: Sequence[str], has_refs: bool
) -> None:
    """Model-chosen meta must fit the blueprint, name a known instance, and a usable path."""
    tool.validate_meta(call.meta)
    _check_output_path(call.meta)
    instance = call.meta.get("_instance")
    if instances and instance not in instances:
        raise InvalidArgs(f"_instance must be one of {', '.join(instances)}")
    if not instances and instance is not None:
        raise InvalidArgs("_instance given but the state holds no instances")
    path = call.meta.get("_outputPath")
    if isinstance(path, str) and "||" in path and toolbox.kind(tool) == "latent":
        raise InvalidArgs("_outputPath: choose one of the alternatives, not all of them")
    for text in find_refs(call.arguments or {}) if has_refs else ():
        try:
            parse_expr(text)
        except ValueError as exc:
            raise InvalidArgs(str(exc)) from None


def _check_output_path(meta: dict[str, Any]) -> None:
    """Reject an unusable ``_outputPath`` or ``_outputMethod`` before anything runs."""
    path = meta.get("_outputPath")
    if path is None:
        return
    if not isinstance(path, str):
        raise InvalidArgs("_outputPath must be a string")
    try:
        output_targets(path)
    except ValueError as exc:
        raise InvalidArgs(str(exc)) from None
    method = meta.get("_outputMethod", "set")
    if method not in OUTPUT_METHODS:
        raise InvalidArgs(f"_outputMethod must be one of {', '.join(OUTPUT_METHODS)}")


def _is_data_message(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and value.get("type") == "data"
        and value.get("kind", "state") == "state"
        and isinstance(value.get("data"), dict)
    )
