"""The embedded SmolLM2 model, for real: constrained decoding, a tool call that parses,
validates and executes, the answer after it, and cancellation."""

from __future__ import annotations

import json
import time
from pathlib import Path

from callwright import Agent, CancelToken
from callwright.compose import solution_schema
from callwright.demo import Sandbox, demo_tools
from callwright.events import (
    RunFinished,
    TextDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from callwright.messages import UserMessage
from callwright.models.base import ModelRequest, TextPart, ToolCallDeltaPart, ToolCallStartPart
from callwright.models.local import LocalModel, bound_schema, default_model_path
from callwright.toolbox import Toolbox


def test_the_model_file_comes_from_the_model_package() -> None:
    path = default_model_path()
    assert path.suffix == ".gguf" and "callwright_smollm2" in str(path)
    assert path.stat().st_size > 50_000_000


async def test_a_tool_call_parses_validates_executes_and_is_answered(tmp_path: Path) -> None:
    agent = Agent(LocalModel(cache_prompt=False), demo_tools(Sandbox(tmp_path)), max_steps=4)
    events = [e async for e in agent.stream("What is 17 * 23?")]
    starts = [e for e in events if isinstance(e, ToolCallStart)]
    assert [s.tool_name for s in starts] == ["calculate"]
    deltas = [e for e in events if isinstance(e, ToolCallArgs)]
    assert len(deltas) > 3  # the arguments streamed token by token
    end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert end.arguments == {"expression": "17 * 23"}
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.state == "output-available" and result.content == "391"
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "completed"
    assert "391" in finished.output
    assert any(isinstance(e, TextDelta) for e in events)
    assert finished.usage.requests == 2 and finished.usage.output_tokens > 0


async def test_constrained_strings_are_bounded_and_have_no_raw_control_characters(
    tmp_path: Path,
) -> None:
    toolbox = Toolbox(demo_tools(Sandbox(tmp_path)))
    schema = solution_schema(toolbox.select(None), toolbox)
    model = LocalModel(max_string=60)
    request = ModelRequest(
        [UserMessage("Write a long poem of ten lines about the sea into the file poem.txt")],
        mode="structured",
        solution_schema=schema,
        tool_choice="write_file",
    )
    names, args = [], ""
    async for event in model.stream(request):
        if isinstance(event, ToolCallStartPart):
            names.append(event.name)
        elif isinstance(event, ToolCallDeltaPart):
            args += event.delta
    assert names == ["write_file"]
    parsed = json.loads(args)  # strict: a raw newline or tab inside a string fails here
    assert len(parsed["content"]) <= 60 and len(parsed["path"]) <= 60


def test_bounds_reach_every_free_string() -> None:
    toolbox = Toolbox(demo_tools(Sandbox("/tmp/unused")))
    schema = bound_schema(
        solution_schema(toolbox.select(None), toolbox), max_calls=1, max_string=50, max_output=99
    )
    calls = schema["properties"]["calls"]
    assert calls["maxItems"] == 1
    for item in calls["items"]["anyOf"]:
        for name, prop in item["properties"].items():
            if prop.get("type") == "string" or "string" in str(prop.get("anyOf", "")):
                text = json.dumps(prop)
                assert '"maxLength": 50' in text, name
    assert schema["properties"]["output"]["maxLength"] == 99


async def test_cancellation_stops_generation_at_once() -> None:
    model = LocalModel(max_tokens=2000, max_output=6000)
    cancel = CancelToken()
    request = ModelRequest(
        [UserMessage("Tell me a very long story about dragons and knights.")],
        mode="structured",
        solution_schema=solution_schema([], Toolbox()),
        cancel=cancel,
    )
    model.server()
    texts = 0
    started = time.monotonic()
    async for event in model.stream(request):
        if isinstance(event, TextPart):
            texts += 1
            if texts == 5:
                cancel.cancel("user")
                cancelled_at = time.monotonic()
    assert texts >= 5
    assert time.monotonic() - cancelled_at < 3  # ~0 when the machine is idle
    # the next request is served at once: generation really stopped
    again = ModelRequest(
        [UserMessage("Hello!")], mode="structured", solution_schema=solution_schema([], Toolbox())
    )
    first = time.monotonic()
    async for event in model.stream(again):
        if isinstance(event, TextPart):
            break
    # the old answer would take 2000 tokens (~15 s here): it really stopped
    assert time.monotonic() - first < 8
    assert time.monotonic() - started < 60


async def test_a_missing_model_file_is_a_clear_error() -> None:
    model = LocalModel("/nonexistent/model.gguf")
    request = ModelRequest([UserMessage("hi")], mode="structured", solution_schema={})
    events = [e async for e in model.stream(request)]
    assert len(events) == 1 and events[0].code == "model_unavailable"
    assert "/nonexistent/model.gguf" in events[0].message


async def test_a_no_tool_prompt_gets_a_text_answer(tmp_path: Path) -> None:
    agent = Agent(LocalModel(cache_prompt=False), demo_tools(Sandbox(tmp_path)))
    result = await agent.run("Thank you, that is all.")
    assert result.status == "completed"
    assert isinstance(result.output, str) and result.output.strip()
    assert not any(getattr(m, "tool_calls", None) for m in result.messages)


async def test_cancel_during_a_run_ends_it_promptly(tmp_path: Path) -> None:
    model = LocalModel(max_tokens=3000, max_output=8000, cache_prompt=False)
    agent = Agent(model, [], instructions="Answer at great length.")
    run = agent.start("Tell me a very long story about dragons, knights and castles.")
    texts = 0
    started = time.monotonic()
    async for event in run.events():
        if isinstance(event, TextDelta):
            texts += 1
            if texts == 3:
                run.cancel("user")
    assert time.monotonic() - started < 20
    assert texts < 20
    assert run.result is not None and run.result.status == "cancelled"
