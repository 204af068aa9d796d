"""The scripted agent behind the playground and CLI tests.

The demo's tools (in a sandbox folder) plus ``long_task``, on a scripted model that
picks its first turn from a keyword of the latest user message and, once tool results
are in, answers ``Done: tool=result; ...`` so a test can read exactly what the model
saw. ``callwright run --agent tests/playground/agent.py:cli_agent`` loads it too.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

from callwright import Agent, File, Tool, ToolContext, tool
from callwright.demo import Sandbox, current_time, default_sandbox, demo_tools
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ErrorPart, ModelRequest, ScriptedModel, call, think

# call ids of long_task calls whose cancel token fired (server side)
CANCELLED: list[str] = []


@tool
async def long_task(ctx: ToolContext) -> str:
    """Works for up to 30 s, reporting progress as text only; records a cancellation."""
    for step in range(1, 301):
        try:
            await asyncio.wait_for(ctx.cancelled(), 0.1)
        except TimeoutError:
            ctx.progress(f"working, step {step}")
            continue
        CANCELLED.append(ctx.call_id)
        ctx.raise_if_cancelled()
    return "finished"


@tool
async def deploy(env: str, ctx: ToolContext) -> dict[str, Any]:
    """Deploys in three stages, with progress and a partial output per stage."""
    for stage in range(1, 4):
        ctx.progress(f"stage {stage} of 3", stage / 3)
        ctx.update({"env": env, "stage": stage})
        await asyncio.sleep(0.05)
    return {"env": env, "status": "deployed"}


PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "2mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


@tool
def chart() -> list[Any]:
    """Draw the chart."""
    return ["Here is the chart", File(base64.b64decode(PNG), "image/png", filename="chart.png")]


TURNS: dict[str, list[Any]] = {
    "ponder": [think("The user wants me to think first."), "I thought about it."],
    "hello": ["Hello! I am a scripted model and I stream my answer word by word."],
    "count": [
        "Counting now.",
        call("count_slowly", {"n": 3}, id="call_count", chunks=['{"n"', ": 3}"]),
    ],
    "confirm": [
        call(
            "confirmAction",
            {"action": "Delete 3 old files", "importance": "high"},
            id="call_confirm",
        )
    ],
    "where": [
        call("current_time", {"timezone": "UTC"}, id="call_utc"),
        call("user_locale", {}, id="call_browser"),
    ],
    "remember": [
        call("calculate", {"expression": "6 * 7", "_outputPath": "answer"}, id="call_calc")
    ],
    "long": [call("long_task", {}, id="call_long")],
    "stopone": [
        call("long_task", {}, id="call_long_one"),
        call("deploy", {"env": "staging"}, id="call_deploy_one"),
    ],
    "deploy": [call("deploy", {"env": "staging"}, id="call_deploy")],
    "chart": [call("chart", {}, id="call_chart")],
    "divide": [call("calculate", {"expression": "1 / 0"}, id="call_divide")],
    "research": [call("summarize", {"doc": "Paris trip"}, id="call_research")],
    "crash": [ErrorPart("the model provider failed", "model_error")],
}


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    user = messages[last_user]
    assert isinstance(user, UserMessage)
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        seen = "; ".join(
            f"{r.tool_name}={r.content}" + (" (error)" if r.is_error else "") for r in results
        )
        return [f"Done: {seen}"]
    words = user.content.lower().split()
    if words[:2] == ["save", "both"]:  # two approvals in one step
        return [
            call("write_file", {"path": "a.txt", "content": "A"}, id="call_save_a"),
            call("write_file", {"path": "b.txt", "content": "B"}, id="call_save_b"),
        ]
    if words[:1] == ["save"] and len(words) > 1:  # "save groceries": approval-gated
        return [
            call(
                "write_file",
                {
                    "_reasoningForCall": "You asked me to keep your list.",
                    "path": f"{words[1]}.txt",
                    "content": "Buy milk",
                },
                id="call_save",
            )
        ]
    for keyword, turn in TURNS.items():
        if keyword in words:
            return turn
    return [f"I have no script for {user.content!r}."]


# A tool carried out by a delegate: a sub-agent that itself calls a tool and answers.
SUMMARIZE = {
    "type": "object",
    "description": "Summarize a trip with a sub-agent.",
    "properties": {
        "_tool": {"const": "summarize"},
        "_delegate": {"const": "summarizer"},
        "doc": {"type": "string"},
    },
    "required": ["doc"],
}


def summarizer_script(request: ModelRequest) -> list[Any]:
    if any(isinstance(m, ToolResultMessage) for m in request.messages):
        return ["Summary: a warm trip."]
    return [call("current_time", {"timezone": "Europe/Paris"}, id="call_sub_time")]


def make_agent(sandbox: Path) -> Agent:
    tools = [*demo_tools(Sandbox(sandbox), step_seconds=0.3), long_task, deploy, chart]
    agent = Agent(ScriptedModel(script, split_text=True), tools, cancel_grace=2)
    agent.toolbox.add(Tool.from_schema(SUMMARIZE))
    summarizer = Agent(ScriptedModel(summarizer_script, split_text=True), [current_time])
    agent.toolbox.add_delegate("summarizer", summarizer)
    return agent


def cli_agent() -> Agent:
    """The agent in the sandbox named by ``CALLWRIGHT_SANDBOX``."""
    return make_agent(default_sandbox())
