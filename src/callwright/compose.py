"""What the model is shown: native tool definitions, or one combined solution schema.

Providers with function calling get ``{name, description, parameters}`` per
tool. Models that only do structured output get the Acts solution schema
``{meta, calls, output}``: ``calls`` items discriminated by a ``_tool`` const,
``output`` nullable ("not done yet"). Latent tools keep ``_output`` so the
model writes the result itself; explicit and client tools lose it, which tells
the model its only job is the inputs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from .call import OUTPUT_TOOL
from .tool import Tool
from .toolbox import Toolbox

META_DESCRIPTION = (
    "Information about the idea itself, like its version. "
    "The AI is expected to update this when it does work."
)
"""The solution schema's ``meta`` description, worded as the Acts seed schemas word it."""


def _is_latent(tool: Tool, toolbox: Toolbox) -> bool:
    return toolbox.kind(tool) == "latent"


def call_properties(
    tool: Tool, toolbox: Toolbox, instances: Sequence[str] = ()
) -> tuple[dict[str, Any], list[str]]:
    """The properties a model writes for one call, meta fields in the Acts order (Q2).

    With instances in the state, every call must name one (spec A7 / Q20).
    """
    model_meta = tool.model_meta()
    if instances:
        model_meta["_instance"] = {"type": "string", "enum": list(instances)}
    props: dict[str, Any] = {}
    for key in ("_reasoningForCall", "_instance", "_scopes", "_delegate"):
        if key in model_meta:
            props[key] = model_meta[key]
    props.update(tool.parameters.get("properties", {}))
    for key in ("_outputPath", "_outputMethod"):
        if key in model_meta:
            props[key] = model_meta[key]
    required = list(tool.parameters.get("required", []))
    if "_instance" in model_meta:
        required.insert(0, "_instance")
    if tool.output_schema is not None and _is_latent(tool, toolbox):
        props["_output"] = tool.output_schema
        required.append("_output")
    return props, required


def native_tools(
    tools: list[Tool], toolbox: Toolbox, instances: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """Function-calling definitions (OpenAI/Anthropic/AG-UI shape)."""
    defs = []
    for t in tools:
        props, required = call_properties(t, toolbox, instances)
        params = {k: v for k, v in t.parameters.items() if k != "properties"}
        params["type"] = "object"
        params["properties"] = props
        if required:
            params["required"] = required
        else:
            params.pop("required", None)
        defs.append({"name": t.name, "description": t.description, "parameters": params})
    return defs


def output_tool(output_schema: dict[str, Any]) -> dict[str, Any]:
    """The tool a function-calling model calls to give a structured final answer."""
    return {
        "name": OUTPUT_TOOL,
        "description": "Give the final answer. Call this once, when the task is done.",
        "parameters": output_schema,
    }


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``type: [t, "null"]`` for a single type (as the 002 seed writes it), else anyOf."""
    result = copy.deepcopy(schema)
    kind = result.get("type")
    if isinstance(kind, str):
        result["type"] = [kind, "null"]
        if kind == "object":
            result.setdefault("additionalProperties", False)
        return result
    return {"anyOf": [result, {"type": "null"}]}


def solution_schema(
    tools: list[Tool],
    toolbox: Toolbox,
    output_schema: dict[str, Any] | None = None,
    *,
    max_calls: int | None = None,
    instances: Sequence[str] = (),
) -> dict[str, Any]:
    """The combined ``{meta, calls, output}`` schema for structured-output models."""
    items = []
    for t in tools:
        props, required = call_properties(t, toolbox, instances)
        item: dict[str, Any] = {"type": "object"}
        if t.description:
            item["description"] = t.description
        item["properties"] = {"_tool": {"const": t.name}, **props}
        item["required"] = ["_tool", *required]
        items.append(item)
    calls: dict[str, Any] = {"type": "array"}
    if len(items) == 1:
        calls["items"] = items[0]
    elif items:
        calls["items"] = {"anyOf": items}
    else:
        calls["maxItems"] = 0
    if max_calls is not None and items:
        calls["maxItems"] = max_calls
    output = nullable(output_schema if output_schema is not None else {"type": "string"})
    return {
        "type": "object",
        "properties": {
            "meta": {
                "type": "object",
                "description": META_DESCRIPTION,
                "properties": {"path": {"type": "string"}, "version": {"type": "string"}},
            },
            "calls": calls,
            "output": output,
        },
        "required": ["meta", "calls", "output"],
    }
