"""ModelSettings through the run loop: the agent's, a run's over them, and the tool choice
beside a step plan."""

from __future__ import annotations

from callwright import Agent, ModelSettings, StepPlan, tool
from callwright.models import ScriptedModel, call


@tool
def ping() -> str:
    """Ping."""
    return "pong"


def test_a_runs_settings_override_the_agents_field_by_field() -> None:
    agent_settings = ModelSettings(temperature=0.1, top_p=0.5, extra={"seed": 1, "user": "u"})
    run_settings = ModelSettings(temperature=0.9, reasoning_effort="high", extra={"seed": 2})
    merged = agent_settings.merged(run_settings)
    assert merged == ModelSettings(
        temperature=0.9, top_p=0.5, reasoning_effort="high", extra={"seed": 2, "user": "u"}
    )
    assert agent_settings.merged(None) is agent_settings
    assert merged.given() == {"temperature": 0.9, "top_p": 0.5, "reasoning_effort": "high"}


async def test_every_step_of_a_run_carries_its_settings() -> None:
    model = ScriptedModel([[call("ping")], ["done"], ["again"]])
    agent = Agent(model, [ping], settings=ModelSettings(max_tokens=100))
    await agent.run("go", settings=ModelSettings(temperature=0.0))
    await agent.run("go")
    first, second, third = (r.settings for r in model.requests)
    assert first == second == ModelSettings(temperature=0.0, max_tokens=100)
    assert third == ModelSettings(max_tokens=100)


async def test_a_step_plans_tool_choice_wins_over_the_settings() -> None:
    def plan(info: object) -> StepPlan | None:
        return StepPlan(tool_choice="none") if getattr(info, "step", 0) == 2 else None

    model = ScriptedModel([[call("ping")], [call("ping")], ["done"]])
    agent = Agent(model, [ping], prepare_step=plan, settings=ModelSettings(tool_choice="ping"))
    await agent.run("go")
    assert [r.tool_choice for r in model.requests] == ["ping", "none", "ping"]
