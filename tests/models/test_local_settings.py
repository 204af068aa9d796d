"""Model settings on the embedded model: what llama.cpp takes reaches it, the rest is refused
by name before anything is loaded."""

from __future__ import annotations

import pytest

from callwright import Agent, ConfigurationError, ModelSettings
from callwright.messages import UserMessage
from callwright.models.base import ErrorPart, ModelRequest
from callwright.models.local import LocalModel


async def test_max_tokens_bounds_the_embedded_models_answer() -> None:
    agent = Agent(LocalModel(cache_prompt=False), settings=ModelSettings(max_tokens=3))
    result = await agent.run("Tell me a long story about a dragon and a knight.")
    assert 0 < result.usage.output_tokens <= 3
    longer = await agent.run(
        "Tell me a long story about a dragon and a knight.", settings=ModelSettings(max_tokens=12)
    )
    assert longer.usage.output_tokens > 3


@pytest.mark.parametrize("settings", [ModelSettings(reasoning_effort="low")])
async def test_a_setting_the_embedded_model_lacks_is_refused_by_name(
    settings: ModelSettings,
) -> None:
    model = LocalModel("/nonexistent/model.gguf")  # never opened: the refusal comes first
    with pytest.raises(ConfigurationError, match="embedded model cannot take the setting"):
        Agent(model, settings=settings)
    with pytest.raises(ConfigurationError, match="reasoning_effort"):
        await Agent(model).run("hi", settings=settings)
    events = [e async for e in model.stream(ModelRequest([UserMessage("hi")], settings=settings))]
    assert events == [
        ErrorPart(
            "the embedded model cannot take the setting reasoning_effort: "
            "leave ModelSettings.reasoning_effort unset for this model",
            "configuration_error",
        )
    ]


async def test_parallel_tool_calls_is_refused_too() -> None:
    agent = Agent(LocalModel("/nonexistent/model.gguf"))
    with pytest.raises(ConfigurationError, match="parallel_tool_calls"):
        await agent.run("hi", settings=ModelSettings(parallel_tool_calls=False))
