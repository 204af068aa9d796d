"""What a structured-output model is shown: the fitted and bounded schema, the
conversation as solution documents, and few-shot examples from the tool schemas."""

from __future__ import annotations

import json
from pathlib import Path

from callwright.compose import solution_schema
from callwright.demo import Sandbox, demo_tools
from callwright.messages import AssistantMessage, ToolCallPart, ToolResultMessage, UserMessage
from callwright.models._solution import conversation, describe_tools, fit_schema, tool_items
from callwright.models.base import ModelRequest
from callwright.models.local import LocalModel, example_call, few_shot
from callwright.toolbox import Toolbox


def schema_for(tmp_path: Path) -> dict:
    toolbox = Toolbox(demo_tools(Sandbox(tmp_path)))
    return solution_schema(toolbox.select(None), toolbox)


def test_tool_choice_narrows_the_schema(tmp_path: Path) -> None:
    schema = schema_for(tmp_path)
    none = fit_schema(schema, "none")
    assert none["properties"]["calls"] == {"type": "array", "maxItems": 0}
    assert none["properties"]["output"]["type"] == "string"  # an answer must be given
    required = fit_schema(schema, "required")["properties"]["calls"]
    assert required["minItems"] == 1 and len(required["items"]["anyOf"]) == 6
    only = fit_schema(schema, "read_file")["properties"]["calls"]
    assert only["items"]["properties"]["_tool"] == {"const": "read_file"} and only["minItems"] == 1
    assert fit_schema(schema, "auto") == schema
    assert schema["properties"]["output"]["type"] == ["string", "null"]  # not mutated


def test_tools_are_described_in_one_line_each(tmp_path: Path) -> None:
    lines = describe_tools(schema_for(tmp_path)).splitlines()
    assert lines[0] == "- calculate(expression: string): Calculate an arithmetic expression."
    assert lines[1].startswith("- current_time(timezone?: string|null): Get the current")


def test_conversation_shows_the_models_own_documents_and_groups_results() -> None:
    turns = conversation(
        [
            UserMessage("2+2 and 3+3?"),
            AssistantMessage(
                "",
                [
                    ToolCallPart("a", "calculate", {"expression": "2+2"}),
                    ToolCallPart("b", "calculate", {"expression": "3+3"}),
                ],
            ),
            ToolResultMessage("a", "calculate", "4"),
            ToolResultMessage("b", "calculate", "no", is_error=True),
            AssistantMessage("4 and an error."),
        ]
    )
    assert [t["role"] for t in turns] == ["user", "assistant", "user", "assistant"]
    assert json.loads(turns[1]["content"]) == {
        "meta": {},
        "calls": [
            {"_tool": "calculate", "expression": "2+2"},
            {"_tool": "calculate", "expression": "3+3"},
        ],
        "output": None,
    }
    assert turns[2]["content"] == "Tool calculate result: 4\nTool calculate error: no"
    assert json.loads(turns[3]["content"])["output"] == "4 and an error."


def test_examples_come_from_the_schemas(tmp_path: Path) -> None:
    items = {i["properties"]["_tool"]["const"]: i for i in tool_items(schema_for(tmp_path))}
    request, call = example_call(items["calculate"])
    assert request == "Calculate an arithmetic expression: 12 * (3 + 4)"
    assert call == {"_tool": "calculate", "expression": "12 * (3 + 4)"}
    assert example_call(items["list_files"])[1] == {"_tool": "list_files"}
    assert example_call(items["count_slowly"])[1] == {"_tool": "count_slowly", "n": 5}


def test_few_shot_order_depends_on_the_step(tmp_path: Path) -> None:
    schema = schema_for(tmp_path)
    calling = few_shot(schema)
    assert json.loads(calling[-1]["content"])["output"] == "You are welcome!"
    assert json.loads(calling[-3]["content"])["calls"][0]["_tool"] == "count_slowly"
    answering = few_shot(schema, answering=True)
    assert answering[-2]["content"].startswith("Tool calculate result:")
    assert json.loads(answering[-1]["content"])["calls"] == []


def test_after_a_result_the_local_model_must_answer(tmp_path: Path) -> None:
    model = LocalModel()
    schema = schema_for(tmp_path)
    messages = [
        UserMessage("2+2?"),
        AssistantMessage("", [ToolCallPart("a", "calculate", {"expression": "2+2"})]),
        ToolResultMessage("a", "calculate", "4"),
    ]
    body = model.body(ModelRequest(messages, mode="structured", solution_schema=schema))
    assert body["json_schema"]["properties"]["calls"]["maxItems"] == 0
    assert body["messages"][-1] == {"role": "user", "content": "Tool calculate result: 4"}
    first = model.body(ModelRequest(messages[:1], mode="structured", solution_schema=schema))
    assert first["json_schema"]["properties"]["calls"]["maxItems"] == 1
    assert first["json_schema"]["properties"]["meta"]["additionalProperties"] is False
