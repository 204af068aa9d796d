"""The embedded model's two stages without the model: the route prompt and its scoring,
and strings limited to what the user wrote."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from callwright.compose import solution_schema
from callwright.demo import Sandbox, demo_tools
from callwright.models._local_stages import (
    ANSWER,
    arguments_prompt,
    calibrate,
    copy_strings,
    mean_lean,
    option_scores,
    route_prompt,
    spans,
    ties,
    tool_specs,
)
from callwright.toolbox import Toolbox


@pytest.fixture
def specs(tmp_path: Path) -> dict:
    toolbox = Toolbox(demo_tools(Sandbox(tmp_path)))
    return {s.name: s for s in tool_specs(solution_schema(toolbox.select(None), toolbox))}


def test_specs_carry_the_arguments_schema_and_examples(specs: dict) -> None:
    time = specs["current_time"]
    assert "timezone" in time.arguments["properties"] and time.arguments["required"] == []
    # without the optional argument first, then with it: a small model copies the last
    assert time.examples == [
        ("Get the current date and time", {}),
        ("Get the current date and time: Europe/Paris", {"timezone": "Europe/Paris"}),
    ]
    assert specs["list_files"].arguments["properties"] == {}


def test_the_route_prompt_ends_on_the_request_with_small_talk_last(specs: dict) -> None:
    prompt = route_prompt(list(specs.values()), "What is 2 + 2?", "Be brief.")
    lines = prompt.splitlines()
    assert lines[0] == "Be brief." and lines[-2:] == ["Request: What is 2 + 2?", "Tool:"]
    tools = [line.removeprefix("Tool: ") for line in lines if line.startswith("Tool: ")]
    assert tools == [*reversed(list(specs)), ANSWER, ANSWER]
    forward = route_prompt(list(specs.values()), "x", reverse=False).splitlines()
    assert next(t for t in forward if t.startswith("Tool: ")) == "Tool: calculate"


def test_options_are_scored_by_the_token_that_starts_them() -> None:
    top = [
        {"token": " calculate", "logprob": -0.5},
        {"token": " count", "logprob": -1.0},
        {"token": " c", "logprob": -0.1},  # too short to tell the options apart
        {"token": " answer", "logprob": -2.0},
    ]
    scores = option_scores(top, ["calculate", "count_slowly", "answer", "list_files"])
    assert scores == {"calculate": -0.5, "count_slowly": -1.0, "answer": -2.0, "list_files": -3.0}
    lean = mean_lean([{"a": math.log(0.5), "b": math.log(0.1)}, {"a": math.log(0.3), "b": -9}])
    assert math.isclose(math.exp(lean["a"]), 0.4)
    assert calibrate({"a": -1.0, "b": -1.0}, {"a": -3.0, "b": -1.0}) == {"a": 2.0, "b": 0.0}
    assert ties({"a": 1.0, "b": 1.0, "c": 0.0}) == ["a", "b"]


def test_spans_are_runs_of_words_and_quoted_parts() -> None:
    found = spans("Write 'see you soon' to bye.txt")
    assert {"see you soon", "bye.txt", "Write"} <= set(found)
    assert "soon'" not in found and "soon" in found  # quotes at the ends are dropped
    assert "sqrt(144)" in spans("What is sqrt(144)?")
    assert "(7 + 8) * 2" in spans("Calculate (7 + 8) * 2")


def test_strings_are_copied_from_the_request(specs: dict) -> None:
    write = copy_strings(specs["write_file"].arguments, "Write 'see you soon' to bye.txt")
    assert write["properties"]["path"]["enum"] == ["bye.txt"]  # the only file-shaped span
    assert "see you soon" in write["properties"]["content"]["enum"]
    calc = copy_strings(specs["calculate"].arguments, "Calculate (7 + 8) * 2 please")
    assert calc["properties"]["expression"]["enum"] == ["(7 + 8) * 2"]  # the longest fit
    # nothing fits: a required string keeps its own schema (the model may write "5 * 3")
    words = copy_strings(specs["calculate"].arguments, "what is five times three")
    assert (
        words["properties"]["expression"]
        == specs["calculate"].arguments["properties"]["expression"]
    )


def test_an_optional_argument_is_given_exactly_when_the_request_names_it(specs: dict) -> None:
    named = copy_strings(specs["current_time"].arguments, "Time in Europe/London please")
    assert named["properties"]["timezone"]["enum"] == ["Europe/London"]
    assert named["required"] == ["timezone"]
    unnamed = copy_strings(specs["current_time"].arguments, "What time is it?")
    assert "timezone" not in unnamed["properties"]  # nothing fits: left out
    assert unnamed["required"] == []
    assert specs["current_time"].arguments["required"] == []  # not mutated


def test_the_arguments_prompt_shows_one_tool(specs: dict) -> None:
    prompt = arguments_prompt(specs["read_file"], "Open README.txt")
    assert "write_file" not in prompt and "calculate" not in prompt
    assert prompt.endswith("Request: Open README.txt\nArguments:")
    assert 'Arguments: {"path": "notes.txt"}' in prompt
