"""The metrics of runs, read back from the SDK's in-memory metric reader: token usage,
operation durations, tool calls by outcome, approvals waiting."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from callwright import Agent, Decision, tool
from callwright.models import ScriptedModel, call

if TYPE_CHECKING:
    from conftest import Otel


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def by(points: list[Any], *keys: str) -> dict[tuple[Any, ...], Any]:
    return {tuple(p.attributes.get(k) for k in keys): p for p in points}


async def test_token_usage_and_durations_follow_the_conventions(otel: Otel) -> None:
    model = ScriptedModel([[call("add", {"a": 1, "b": 2}, id="c1")], ["3"]])
    await Agent(model, [add]).run("1 + 2")

    tokens = by(otel.points("gen_ai.client.token.usage"), "gen_ai.token.type")
    assert set(tokens) == {("input",), ("output",)}
    assert tokens[("input",)].sum == 20 and tokens[("input",)].count == 2
    assert tokens[("output",)].sum == 10
    attributes = dict(tokens[("input",)].attributes)
    assert attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "callwright",
        "gen_ai.request.model": "scripted",
        "gen_ai.token.type": "input",
    }
    assert tokens[("input",)].explicit_bounds[:3] == (1, 4, 16)

    durations = by(otel.points("gen_ai.client.operation.duration"), "gen_ai.operation.name")
    assert {name for (name,) in durations} == {"chat", "execute_tool", "invoke_agent"}
    assert durations[("chat",)].count == 2
    assert durations[("execute_tool",)].attributes["gen_ai.tool.name"] == "add"
    assert durations[("invoke_agent",)].count == 1
    assert durations[("chat",)].explicit_bounds[:2] == (0.01, 0.02)


async def test_tool_calls_are_counted_by_outcome(otel: Otel) -> None:
    model = ScriptedModel(
        [
            [
                call("add", {"a": 1, "b": 2}, id="c_ok"),
                call("add", {"a": "one"}, id="c_bad"),
                call("nowhere", {}, id="c_missing"),
            ],
            ["Done."],
        ]
    )
    await Agent(model, [add]).run("go")
    counted = by(
        otel.points("callwright.tool.calls"),
        "gen_ai.tool.name",
        "callwright.call.outcome",
        "error.type",
    )
    assert {key: point.value for key, point in counted.items()} == {
        ("add", "output-available", None): 1,
        ("add", "output-error", "invalid-args"): 1,
        ("nowhere", "output-error", "not-found"): 1,
    }


async def test_approvals_waiting_goes_up_on_a_pause_and_down_on_the_answer(otel: Otel) -> None:
    model = ScriptedModel([[call("delete_file", {"path": "a"}, id="c1")], ["Not deleted."]])
    agent = Agent(model, [delete_file])
    first = await agent.run("delete a", thread_id="thread_wait")
    assert [p.value for p in otel.points("callwright.approvals.waiting")] == [1]

    await agent.run(
        messages=first.messages, decisions={"c1": Decision(False)}, thread_id="thread_wait"
    )
    assert [p.value for p in otel.points("callwright.approvals.waiting")] == [0]
    denied = by(otel.points("callwright.tool.calls"), "callwright.call.outcome")
    assert denied[("output-denied",)].value == 1
