"""Toolbox registry rules and what the model is shown (native and combined schema)."""

import pytest

from callwright import Tool, Toolbox, ToolConflict, tool
from callwright.compose import native_tools, solution_schema

SENTIMENT = {
    "type": "object",
    "description": "Analyzes text sentiment",
    "properties": {
        "_tool": {"type": "string", "const": "sentimentAnalysis"},
        "text": {"type": "string", "description": "Text to analyze"},
        "_output": {
            "type": "object",
            "properties": {"sentiment": {"type": "string"}, "confidence": {"type": "number"}},
        },
    },
}


def test_greet_user_combined_schema_matches_the_002_seed() -> None:
    greet = Tool.from_schema(
        {
            "type": "object",
            "properties": {"userName": {"type": "string"}},
            "required": ["userName"],
        },
        name="greetUser",
    )
    box = Toolbox([greet])
    output = {
        "type": "object",
        "properties": {"summary": {"type": "string"}},
        "required": ["summary"],
    }
    assert solution_schema(list(box), box, output) == {
        "type": "object",
        "properties": {
            "meta": {
                "type": "object",
                "description": "Information about the idea itself, like its version. "
                "The AI is expected to update this when it does work.",
                "properties": {"path": {"type": "string"}, "version": {"type": "string"}},
            },
            "output": {
                "type": ["object", "null"],
                "properties": {"summary": {"type": "string"}},
                "required": ["summary"],
                "additionalProperties": False,
            },
            "calls": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"_tool": {"const": "greetUser"}, "userName": {"type": "string"}},
                    "required": ["_tool", "userName"],
                },
            },
        },
        "required": ["meta", "calls", "output"],
    }


def test_latent_keeps_output_explicit_loses_it() -> None:
    box = Toolbox([Tool.from_schema(SENTIMENT)])
    schema = solution_schema(list(box), box)
    item = schema["properties"]["calls"]["items"]
    assert item["properties"]["_output"] == SENTIMENT["properties"]["_output"]
    assert item["required"] == ["_tool", "_output"]

    box.add_activity("sentimentAnalysis", lambda call, ctx: {"sentiment": "positive"})
    assert box.kind(box.get("sentimentAnalysis")) == "explicit"  # type: ignore[arg-type]
    item = solution_schema(list(box), box)["properties"]["calls"]["items"]
    assert "_output" not in item["properties"]
    assert native_tools(list(box), box)[0]["parameters"]["properties"] == {
        "text": {"type": "string", "description": "Text to analyze"}
    }


def test_several_tools_are_an_anyof_discriminated_by_tool() -> None:
    @tool
    def a(x: int) -> int:
        """A."""
        return x

    @tool
    def b(y: str) -> str:
        """B."""
        return y

    box = Toolbox([a, b])
    items = solution_schema(list(box), box, max_calls=4)["properties"]["calls"]
    assert items["maxItems"] == 4
    assert [i["properties"]["_tool"] for i in items["items"]["anyOf"]] == [
        {"const": "a"},
        {"const": "b"},
    ]


def test_last_definition_wins_in_place_and_removal() -> None:
    @tool
    def search(q: str) -> str:
        """Old search."""
        return q

    @tool
    def other(q: str) -> str:
        """Other."""
        return q

    box = Toolbox([search, other])
    newer = Tool.from_schema({"name": "search", "description": "New search", "parameters": {}})
    box.add(newer)
    assert box.names == ["other", "search"]
    defs = native_tools(list(box), box)
    assert [d["description"] for d in defs] == ["Other.", "New search"]
    box.remove("search")
    assert box.names == ["other"]


def test_activities_by_name_and_by_activity_field() -> None:
    box = Toolbox([Tool.from_schema(SENTIMENT)])
    t = box.get("sentimentAnalysis")
    assert t is not None
    assert box.kind(t) == "latent"
    bound = Tool.from_schema({**SENTIMENT, "_activity": "nlp"})
    box.add(bound)
    assert box.kind(bound) == "latent"  # no activity named nlp yet
    box.add_activity("nlp", lambda call, ctx: "ok")
    assert box.kind(bound) == "explicit"


def test_client_overlay_and_conflicts() -> None:
    @tool
    def calculate(expression: str) -> str:
        """Calculate."""
        return expression

    box = Toolbox([calculate])
    confirm = Tool.from_schema({"name": "confirmAction", "parameters": {"type": "object"}})
    run_box = box.with_client_tools([confirm])
    assert run_box.names == ["calculate", "confirmAction"]
    assert box.names == ["calculate"]  # the agent's toolbox is untouched
    assert run_box.kind(confirm) == "client"
    shadow = Tool.from_schema({"name": "calculate", "parameters": {"type": "object"}})
    with pytest.raises(ToolConflict, match="calculate"):
        box.with_client_tools([shadow])
    assert box.with_client_tools([shadow], allow_override=True).kind(shadow) == "client"
