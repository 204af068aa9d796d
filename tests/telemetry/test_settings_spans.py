"""The run's effective model settings on each ``chat`` span, under the OpenTelemetry GenAI
conventions' names where they have one (``gen_ai.request.*``), else ``callwright.request.*``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from callwright import Agent, ModelSettings, tool
from callwright.models import ScriptedModel, call

if TYPE_CHECKING:
    from conftest import Otel


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_the_runs_settings_over_the_agents_are_the_chat_spans_attributes(
    otel: Otel,
) -> None:
    model = ScriptedModel([[call("add", {"a": 1, "b": 2}, id="c1")], ["It is 3."]])
    agent = Agent(
        model,
        [add],
        settings=ModelSettings(temperature=0.2, max_tokens=500, extra={"seed": 7, "user": "u1"}),
    )
    run_settings = ModelSettings(
        temperature=0.9,
        top_p=0.5,
        tool_choice="required",
        parallel_tool_calls=False,
        reasoning_effort="low",
        extra={"stop": ["END"], "metadata": {"k": "v"}},
    )
    await agent.run("1+2?", settings=run_settings)
    chats = otel.spans("chat ")
    assert len(chats) == 2
    for chat in chats:
        attributes: Any = chat.attributes
        assert attributes["gen_ai.request.temperature"] == 0.9
        assert attributes["gen_ai.request.max_tokens"] == 500
        assert attributes["gen_ai.request.top_p"] == 0.5
        assert attributes["gen_ai.request.seed"] == 7
        assert tuple(attributes["gen_ai.request.stop_sequences"]) == ("END",)
        assert attributes["callwright.request.parallel_tool_calls"] is False
        assert attributes["callwright.request.reasoning_effort"] == "low"
        assert tuple(attributes["callwright.request.extra"]) == ("metadata", "seed", "stop", "user")
    # the tool choice is the one each step sent, as the model received it
    sent = [(request.tool_choice, bool(request.tools)) for request in model.requests]
    assert sent[0] == ("required", True)
    shown = [(c.attributes or {}).get("callwright.request.tool_choice") for c in chats]
    assert shown == [choice if tools else None for choice, tools in sent]


async def test_unset_settings_are_not_attributes(otel: Otel) -> None:
    await Agent(ScriptedModel([["Hi."]])).run("hi")
    attributes: Any = otel.one("chat scripted").attributes
    requested = [k for k in attributes if k.startswith(("gen_ai.request.", "callwright.request."))]
    assert requested == ["gen_ai.request.model"]
