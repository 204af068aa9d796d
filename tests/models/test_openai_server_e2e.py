"""End to end against a REAL OpenAI-compatible server: llama.cpp's server (from the
xllamacpp binding), started by this test on 127.0.0.1 and serving the SmolLM2 file.
The agent streams through the official openai SDK, calls a tool, and answers."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from callwright import Agent, StepPlan
from callwright.demo import Sandbox, demo_tools
from callwright.events import (
    RunFinished,
    TextDelta,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from callwright.models.local import default_model_path, start_llama_server
from callwright.models.openai import OpenAIModel


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    server = start_llama_server(str(default_model_path()), n_ctx=4096)
    url: str = server.listening_address
    assert url.startswith("http://127.0.0.1:")
    yield url
    del server


def test_the_server_is_a_real_http_server(llama_server: str) -> None:
    with urllib.request.urlopen(f"{llama_server}/v1/models", timeout=10) as response:
        models = json.load(response)
    assert models["data"] and "SmolLM2" in models["data"][0]["id"]


async def test_agent_calls_a_tool_through_the_server_streaming_and_answers(
    llama_server: str, tmp_path: Path
) -> None:
    model = OpenAIModel(
        "smollm2",
        base_url=f"{llama_server}/v1",
        mode="structured",  # SmolLM2's chat template has no tool calling
        temperature=0,
        seed=1,
        max_tokens=200,
        max_string=100,  # bounded schema: a 135M model rambles in free strings
    )

    def plan(info: Any) -> StepPlan:
        # a 135M model needs the nudge: call the calculator first, then answer
        return StepPlan(tool_choice="calculate" if info.step == 1 else "none")

    agent = Agent(model, demo_tools(Sandbox(tmp_path)), prepare_step=plan, max_steps=3)
    events = [e async for e in agent.stream("What is 17 * 23? Use the calculator.")]

    start = next(e for e in events if isinstance(e, ToolCallStart))
    assert start.tool_name == "calculate"
    deltas = [e.delta for e in events if isinstance(e, ToolCallArgs)]
    assert len(deltas) > 3  # streamed piece by piece from the server
    end = next(e for e in events if isinstance(e, ToolCallEnd))
    assert json.loads("".join(deltas)) == end.arguments
    assert isinstance(end.arguments.get("expression"), str)
    result = next(e for e in events if isinstance(e, ToolCallResult))
    assert result.call_id == start.call_id  # the tool really ran, on what the model wrote
    assert result.state == "output-available" and result.content
    answer = "".join(e.delta for e in events if isinstance(e, TextDelta))
    finished = events[-1]
    assert isinstance(finished, RunFinished) and finished.status == "completed"
    assert answer.strip() and finished.output == answer
    assert finished.usage.requests == 2 and finished.usage.input_tokens > 100
