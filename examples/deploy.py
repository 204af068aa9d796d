"""The yoagent deploy example on the scripted model: progress reaches the UI, only the
final result reaches the model. Run with ``python examples/deploy.py``."""

import asyncio

from callwright import Agent, ToolContext, tool
from callwright.events import TextDelta, ToolCallResult, ToolProgress
from callwright.models import ScriptedModel, call


@tool(title="Deploy App")
async def deploy(env: str, ctx: ToolContext) -> str:
    """Deploy the application to production.

    Args:
        env: Target environment
    """
    steps = ["Building image", "Running tests", "Pushing to registry", "Rolling out"]
    for i, step in enumerate(steps):
        ctx.raise_if_cancelled()
        ctx.progress(f"[{i + 1}/{len(steps)}] {step}...", (i + 1) / len(steps))
        await asyncio.sleep(0.2)
    return f"Successfully deployed to {env}"


async def main() -> None:
    model = ScriptedModel(
        [[call("deploy", {"env": "production"})], ["Deployed: all 4 stages completed."]]
    )
    agent = Agent(model, [deploy])
    async for event in agent.stream("Deploy to production"):
        if isinstance(event, ToolProgress):
            print(f"  {event.text}")
        elif isinstance(event, ToolCallResult):
            print(f"  -> {event.content}")
        elif isinstance(event, TextDelta):
            print(event.delta, end="", flush=True)
    print()


if __name__ == "__main__":
    asyncio.run(main())
