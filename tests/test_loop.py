"""The agent loop on the scripted model: the seeds' own examples and the loop's rules."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from callwright import (
    Agent,
    AssistantMessage,
    Decision,
    Limits,
    StepPlan,
    Tool,
    ToolContext,
    ToolError,
    ToolResultMessage,
    UserMessage,
    batched,
    has_tool_call,
    step_count_is,
    tool,
)
from callwright import events as ev
from callwright.models import ModelRequest, ScriptedModel, call, think


async def collect(agent: Agent, prompt: Any = None, **options: Any) -> list[Any]:
    return [e async for e in agent.stream(prompt, **options)]


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def tool_results(request: ModelRequest) -> list[ToolResultMessage]:
    return [m for m in request.messages if isinstance(m, ToolResultMessage)]


# --- the AG-UI seed: confirmAction, a front-end tool ---------------------------------

CONFIRM = {
    "name": "confirmAction",
    "description": "Ask the user to confirm a specific action before proceeding",
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "description": "The action that needs user confirmation"},
            "importance": {"type": "string", "enum": ["low", "medium", "high", "critical"]},
        },
        "required": ["action"],
    },
}


async def test_confirm_action_lifecycle_pauses_and_resumes() -> None:
    model = ScriptedModel(
        [
            [
                call(
                    "confirmAction",
                    id="tool-123",
                    chunks=['{"act', 'ion":"Depl', 'oy the application to production"}'],
                )
            ],
            ["Deploying now."],
        ]
    )
    agent = Agent(model)
    events = await collect(agent, "Deploy", client_tools=[Tool.from_schema(CONFIRM)])
    start = of(events, ev.ToolCallStart)[0]
    assert (start.call_id, start.tool_name, start.client) == ("tool-123", "confirmAction", True)
    assert start.message_id == of(events, ev.StepStarted)[0].message_id
    assert [a.delta for a in of(events, ev.ToolCallArgs)] == [
        '{"act',
        'ion":"Depl',
        'oy the application to production"}',
    ]
    assert of(events, ev.ToolCallEnd)[0].arguments == {
        "action": "Deploy the application to production"
    }
    assert of(events, ev.ToolCallResult) == []  # no placeholder result for a client tool
    finished = events[-1]
    assert isinstance(finished, ev.RunFinished)
    assert finished.status == "paused"
    assert [(p.call_id, p.kind) for p in finished.pending] == [("tool-123", "client")]

    history = [
        *agent_messages(events, agent, model),
        ToolResultMessage("tool-123", "confirmAction", "true"),
    ]
    result = await agent.run(messages=history, client_tools=[Tool.from_schema(CONFIRM)])
    assert result.status == "completed"
    assert result.output == "Deploying now."
    assert [m.content for m in tool_results(model.requests[1])] == ["true"]


def agent_messages(events: list[Any], agent: Agent, model: ScriptedModel) -> list[Any]:
    """The history as the last request saw it plus the assistant's reply."""
    last = model.requests[-1]
    return list(last.messages)


# --- the yoagent seed: deploy with progress -------------------------------------------


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
        await asyncio.sleep(0)
    return f"Successfully deployed to {env}"


async def test_deploy_streams_four_progress_steps_model_sees_only_the_result() -> None:
    model = ScriptedModel([[call("deploy", {"env": "production"})], ["Deployed."]])
    events = await collect(Agent(model, [deploy]), "Deploy to production")
    progress = of(events, ev.ToolProgress)
    assert [p.text for p in progress] == [
        "[1/4] Building image...",
        "[2/4] Running tests...",
        "[3/4] Pushing to registry...",
        "[4/4] Rolling out...",
    ]
    assert [p.fraction for p in progress] == [0.25, 0.5, 0.75, 1.0]
    # progress arrives before the result, as it happens
    assert events.index(progress[-1]) < events.index(of(events, ev.ToolCallResult)[0])
    assert of(events, ev.ToolCallStart)[0].title == "Deploy App"
    seen = model.requests[1].messages
    assert [m.content for m in tool_results(model.requests[1])] == [
        "Successfully deployed to production"
    ]
    assert not any("Building image" in str(m) for m in seen)


# --- the 002 seed: a latent tool -----------------------------------------------------


async def test_latent_sentiment_analysis_result_is_the_models_output() -> None:
    sentiment = Tool.from_schema(
        {
            "type": "object",
            "description": "Analyzes text sentiment",
            "properties": {
                "_tool": {"type": "string", "const": "sentimentAnalysis"},
                "text": {"type": "string"},
                "_output": {
                    "type": "object",
                    "properties": {
                        "sentiment": {"type": "string"},
                        "confidence": {"type": "number"},
                    },
                },
            },
        }
    )
    latent = {
        "text": "This is the best!",
        "_output": {"sentiment": "positive", "confidence": 0.99},
    }
    model = ScriptedModel([[call("sentimentAnalysis", latent)], ["Positive."]])
    agent = Agent(model, [sentiment])
    assert model.requests == []
    events = await collect(agent, "What is the sentiment of 'This is the best!'")
    assert agent.toolbox.kind(sentiment) == "latent"
    shown = model.requests[0].tools[0]["parameters"]["properties"]
    assert "_output" in shown
    result = of(events, ev.ToolCallResult)[0]
    assert result.output == {"sentiment": "positive", "confidence": 0.99}
    assert of(events, ev.ToolExecutionStart) == []  # nothing ran: the model answered
    assert (
        tool_results(model.requests[1])[0].content == '{"sentiment":"positive","confidence":0.99}'
    )


# --- the AI SDK seed: approvals and preliminary outputs ------------------------------


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def approval_model() -> ScriptedModel:
    return ScriptedModel(
        [[call("delete_file", {"path": "a.txt"}, id="c1")], ["Done."], ["Okay, I won't."]]
    )


async def test_approval_requested_then_approved() -> None:
    model = approval_model()
    agent = Agent(model, [delete_file])
    first = agent.start("delete a.txt")
    events = [e async for e in first.events()]
    requested = of(events, ev.ApprovalRequested)[0]
    assert requested.call_id == "c1"
    assert requested.approval_id != "c1" and len(requested.approval_id) > 20
    assert of(events, ev.ToolExecutionStart) == []
    assert first.result is not None and first.result.status == "paused"
    assert first.result.pending[0].approval_id == requested.approval_id

    events = await collect(agent, messages=first.result.messages, decisions={"c1": Decision(True)})
    assert [type(e).__name__ for e in events[1:4]] == [
        "ApprovalResolved",
        "ToolExecutionStart",
        "ToolCallResult",
    ]
    assert of(events, ev.ToolCallResult)[0].output == "deleted a.txt"
    assert events[-1].status == "completed"
    assert events[-1].output == "Done."


async def test_approval_denied_reaches_the_model_with_its_reason() -> None:
    model = approval_model()
    agent = Agent(model, [delete_file])
    paused = await agent.run("delete a.txt")
    events = await collect(
        agent, messages=paused.messages, decisions={"c1": Decision(False, "too risky")}
    )
    result = of(events, ev.ToolCallResult)[0]
    assert result.state == "output-denied"
    assert result.error == "Tool call denied: too risky"
    assert of(events, ev.ToolExecutionStart) == []
    assert tool_results(model.requests[-1])[0].content == "Tool call denied: too risky"
    assert tool_results(model.requests[-1])[0].is_error


async def test_approval_policy_predicate_and_edits() -> None:
    @tool(requires_approval=lambda a: a["amount"] > 100, allow_edits=True)
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    model = ScriptedModel(
        [[call("pay", {"amount": 5}, id="small"), call("pay", {"amount": 500}, id="big")], ["ok"]]
    )
    agent = Agent(model, [pay])
    paused = await agent.run("pay")
    assert [p.call_id for p in paused.pending] == ["big"]
    # the small payment ran already; its result is in history
    assert [m.content for m in paused.messages if isinstance(m, ToolResultMessage)] == ["paid 5"]
    bad_edit = await agent.run(
        messages=paused.messages, decisions={"big": Decision(True, arguments={"amount": "x"})}
    )
    assert "Invalid arguments" in tool_results(model.requests[-1])[-1].content
    assert bad_edit.status == "completed"

    model2 = ScriptedModel([[call("pay", {"amount": 500}, id="big")], ["ok"]])
    agent2 = Agent(model2, [pay])
    paused = await agent2.run("pay")
    await agent2.run(
        messages=paused.messages, decisions={"big": Decision(True, arguments={"amount": 150})}
    )
    # the model sees what it proposed and what ran; its own call keeps what it proposed
    received = model2.requests[-1].messages
    assert tool_results(model2.requests[-1])[-1].content == (
        '[The user edited the arguments before running: proposed {"amount":500}, '
        'ran {"amount":150}.] paid 150'
    )
    [asked] = [m for m in received if isinstance(m, AssistantMessage) and m.tool_calls]
    assert asked.tool_calls[0].arguments == {"amount": 500}


async def test_edits_refused_unless_the_tool_allows_them() -> None:
    model = approval_model()
    agent = Agent(model, [delete_file])
    paused = await agent.run("delete a.txt")
    await agent.run(
        messages=paused.messages,
        decisions={"c1": Decision(True, arguments={"path": "/etc/passwd"})},
    )
    assert (
        "does not allow its arguments to be edited" in tool_results(model.requests[-1])[0].content
    )


async def test_generator_tool_streams_preliminary_outputs() -> None:
    @tool
    async def analyse(data: list[int]):  # type: ignore[no-untyped-def]
        """Analyse data."""
        yield {"state": "processing", "progress": 0}
        yield {"state": "processing", "progress": 50, "mean": sum(data) / len(data)}
        yield {"state": "complete", "progress": 100, "mean": sum(data) / len(data)}

    model = ScriptedModel([[call("analyse", {"data": [1, 2, 3]})], ["Mean is 2."]])
    events = await collect(Agent(model, [analyse]), "analyse")
    partial = of(events, ev.ToolPartialOutput)
    assert [p.output["progress"] for p in partial] == [0, 50, 100]
    final = of(events, ev.ToolCallResult)[0]
    assert final.output == {"state": "complete", "progress": 100, "mean": 2.0}
    assert tool_results(model.requests[1])[0].content == (
        '{"state":"complete","progress":100,"mean":2.0}'
    )


# --- strategies and steering (yoagent's table) ---------------------------------------


def steering_setup(strategy: Any, n: int = 3) -> tuple[Agent, list[str]]:
    ran: list[str] = []

    @tool
    async def step(name: str) -> str:
        """A step."""
        ran.append(name)
        await asyncio.sleep(0.01)
        return name

    calls = [call("step", {"name": f"t{i}"}, id=f"t{i}") for i in range(1, n + 1)]
    model = ScriptedModel([calls, ["after steering"]])
    return Agent(model, [step], strategy=strategy), ran


async def steer_during_first_tool(agent: Agent) -> list[Any]:
    run = agent.start("go")
    events = []
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.ToolExecutionStart) and e.call_id == "t1":
            run.steer("stop, do something else")
    return events


async def test_sequential_skips_everything_after_the_steered_tool() -> None:
    agent, ran = steering_setup("sequential")
    events = await steer_during_first_tool(agent)
    assert ran == ["t1"]
    results = {r.call_id: r for r in of(events, ev.ToolCallResult)}
    assert results["t1"].state == "output-available"
    for skipped in ("t2", "t3"):
        assert results[skipped].error == "Skipped due to queued user message."
    request = agent.model.requests[1]  # type: ignore[attr-defined]
    assert isinstance(request.messages[-1], UserMessage)
    assert request.messages[-1].content == "stop, do something else"
    assert [m.call_id for m in tool_results(request)] == ["t1", "t2", "t3"]


async def test_parallel_runs_everything_and_steers_next_turn() -> None:
    agent, ran = steering_setup("parallel")
    events = await steer_during_first_tool(agent)
    assert sorted(ran) == ["t1", "t2", "t3"]
    assert all(r.state == "output-available" for r in of(events, ev.ToolCallResult))
    assert agent.model.requests[1].messages[-1].content == "stop, do something else"  # type: ignore[attr-defined]


async def test_batched_skips_later_batches() -> None:
    agent, ran = steering_setup(batched(2), n=5)
    events = await steer_during_first_tool(agent)
    assert sorted(ran) == ["t1", "t2"]
    skipped = [r.call_id for r in of(events, ev.ToolCallResult) if r.error_kind == "skipped"]
    assert skipped == ["t3", "t4", "t5"]


async def test_parallel_overlaps_and_sequential_does_not() -> None:
    active = 0
    peak = 0

    @tool
    async def slow(i: int) -> int:
        """Slow."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        await asyncio.sleep(0.02)
        active -= 1
        return i

    for strategy, expected in (("parallel", 3), ("sequential", 1), (batched(2), 2)):
        peak = 0
        model = ScriptedModel([[call("slow", {"i": i}) for i in range(3)], ["done"]])
        await Agent(model, [slow], strategy=strategy).run("go")
        assert peak == expected, strategy


async def test_sequential_tool_is_a_barrier() -> None:
    order: list[str] = []

    @tool
    async def fast(name: str) -> str:
        """Fast."""
        order.append(f"start {name}")
        await asyncio.sleep(0.01)
        order.append(f"end {name}")
        return name

    @tool(sequential=True)
    async def migrate() -> str:
        """Migrate."""
        order.append("migrate")
        return "migrated"

    model = ScriptedModel(
        [[call("fast", {"name": "a"}), call("migrate"), call("fast", {"name": "b"})], ["ok"]]
    )
    await Agent(model, [fast, migrate]).run("go")
    assert order == ["start a", "end a", "migrate", "start b", "end b"]


# --- results: call order for the model, completion order for events ----------------


async def test_results_enter_context_in_call_order_events_in_completion_order() -> None:
    @tool
    async def wait(ms: int) -> int:
        """Wait."""
        await asyncio.sleep(ms / 1000)
        return ms

    model = ScriptedModel(
        [[call("wait", {"ms": 50}, id="slow"), call("wait", {"ms": 1}, id="fast")], ["ok"]]
    )
    events = await collect(Agent(model, [wait]), "go")
    assert [r.call_id for r in of(events, ev.ToolCallResult)] == ["fast", "slow"]
    assert [m.call_id for m in tool_results(model.requests[1])] == ["slow", "fast"]


# --- every error kind is a result, and the run goes on --------------------------------


class Gone(ToolError):
    kind = "gone"


@tool
def boom(kind: str) -> str:
    """Fail in the way asked."""
    if kind == "value":
        raise ValueError("division by zero")
    raise Gone("the record was deleted")


@tool(timeout=0.05)
async def sleepy() -> str:
    """Sleep too long."""
    await asyncio.sleep(5)
    return "never"


@pytest.mark.parametrize(
    ("item", "kind", "text"),
    [
        (call("boom", {"kind": "value"}), "failed", "division by zero"),
        (call("boom", {"kind": "gone"}), "gone", "the record was deleted"),
        (call("nope", {}), "not-found", "Tool not found: nope. Available tools: boom, sleepy."),
        (
            call("boom", {"kind": 3}),
            "invalid-args",
            "Invalid arguments: kind: Input should be a valid string",
        ),
        (call("boom", '{"kind": '), "invalid-args", "Invalid arguments: malformed JSON"),
        (call("sleepy"), "timed-out", "Timed out after 0.05 seconds."),
    ],
)
async def test_error_kinds_become_results_and_the_run_goes_on(
    item: Any, kind: str, text: str
) -> None:
    model = ScriptedModel([[item], ["Recovered."]])
    events = await collect(Agent(model, [boom, sleepy]), "go")
    result = of(events, ev.ToolCallResult)[0]
    assert result.state == "output-error"
    assert result.error_kind == kind
    assert result.content.startswith(text)
    seen = tool_results(model.requests[1])[0]
    assert seen.is_error and seen.content.startswith(text)
    assert events[-1].status == "completed" and events[-1].output == "Recovered."


async def test_invalid_input_is_reported_as_an_input_error_before_the_result() -> None:
    model = ScriptedModel([[call("boom", {"kind": 3})], ["ok"]])
    events = await collect(Agent(model, [boom]), "go")
    names = [type(e).__name__ for e in events]
    assert names.index("ToolInputError") < names.index("ToolCallResult")
    assert of(events, ev.ToolCallEnd) == []


async def test_cancelling_a_run_cancels_running_tools_cooperatively() -> None:
    saw_cancel = asyncio.Event()

    @tool
    async def count(n: int, ctx: ToolContext) -> str:
        """Count slowly."""
        for i in range(n):
            if ctx.is_cancelled():
                saw_cancel.set()
                ctx.raise_if_cancelled()
            ctx.progress(f"{i}", i / n)
            await asyncio.sleep(0.01)
        return "done"

    model = ScriptedModel([[call("count", {"n": 1000})], ["never"]])
    run = Agent(model, [count]).start("count")
    events = []
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.ToolProgress) and e.text == "3":
            run.cancel("user pressed stop")
    assert saw_cancel.is_set()
    result = of(events, ev.ToolCallResult)[0]
    assert result.error_kind == "cancelled"
    assert result.content == "Cancelled: user pressed stop"
    assert events[-1].status == "cancelled"
    assert len(model.requests) == 1


async def test_a_tool_ignoring_cancellation_is_stopped_after_the_grace_period() -> None:
    @tool
    async def stubborn() -> str:
        """Ignore cancellation."""
        await asyncio.sleep(10)
        return "late"

    model = ScriptedModel([[call("stubborn")], ["never"]])
    run = Agent(model, [stubborn], cancel_grace=0.05).start("go")
    events = []
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.ToolExecutionStart):
            run.cancel("stop")
    assert of(events, ev.ToolCallResult)[0].error_kind == "cancelled"
    assert events[-1].status == "cancelled"


# --- stop conditions, limits, loops --------------------------------------------------


@tool
def ping(n: int = 0) -> str:
    """Ping."""
    return f"pong {n}"


async def test_stop_conditions() -> None:
    model = ScriptedModel(lambda r: [call("ping", {"n": r.step})])
    result = await Agent(model, [ping], stop_when=step_count_is(2)).run("go")
    assert len(model.requests) == 2 and result.status == "completed"

    model = ScriptedModel([[call("ping", {"n": 1})], [call("ping", {"n": 2}), call("done")], ["x"]])

    @tool
    def done() -> str:
        """Finish."""
        return "ok"

    await Agent(model, [ping, done], stop_when=has_tool_call("done")).run("go")
    assert len(model.requests) == 2


async def test_step_limit_ends_with_a_final_text_step() -> None:
    def script(request: ModelRequest) -> list[Any]:
        if request.tools:
            return [call("ping", {"n": request.step})]
        return ["Here is what I found."]

    model = ScriptedModel(script)
    events = await collect(Agent(model, [ping], max_steps=3), "go")
    assert [len(r.tools) for r in model.requests] == [1, 1, 0]
    assert model.requests[-1].tool_choice == "none"
    finished = events[-1]
    assert finished.status == "completed" and finished.output == "Here is what I found."


async def test_identical_calls_get_a_nudge_then_stop_the_run() -> None:
    model = ScriptedModel(lambda r: [call("ping", {"n": 1})])
    result = await Agent(model, [ping], limits=Limits(max_steps=50)).run("go")
    nudges = [m for m in result.messages if isinstance(m, UserMessage) and "identical" in m.content]
    assert len(nudges) == 1
    assert result.status == "stopped"
    assert result.reason == "repeated tool call: ping with identical arguments"
    assert len(model.requests) == 6
    last = [m for m in result.messages if isinstance(m, ToolResultMessage)][-1]
    assert last.content.startswith("Not executed: repeated tool call")


async def test_token_limit() -> None:
    model = ScriptedModel(lambda r: [call("ping", {"n": r.step})])
    result = await Agent(model, [ping], limits=Limits(max_tokens=40)).run("go")
    assert result.status == "stopped" and result.reason == "token limit reached (40)"
    assert len(model.requests) == 3  # 15 tokens per scripted step


async def test_prepare_step_changes_active_tools_and_choice() -> None:
    @tool
    def other() -> str:
        """Other."""
        return "o"

    def plan(info: Any) -> StepPlan:
        return StepPlan(active_tools=["other"] if info.step == 1 else None, tool_choice="required")

    model = ScriptedModel([[call("other")], ["ok"]])
    await Agent(model, [ping, other], prepare_step=plan).run("go")
    assert [t["name"] for t in model.requests[0].tools] == ["other"]
    assert [t["name"] for t in model.requests[1].tools] == ["ping", "other"]
    assert model.requests[0].tool_choice == "required"


async def test_follow_up_runs_after_the_agent_would_stop() -> None:
    model = ScriptedModel([["first answer"], ["second answer"]])
    run = Agent(model).start("hello")
    run.follow_up("and one more thing")
    async for _ in run.events():
        pass
    assert run.result is not None and run.result.output == "second answer"
    assert model.requests[1].messages[-1].content == "and one more thing"


async def test_structured_output_type_via_final_result_tool() -> None:
    class Answer(BaseModel):
        city: str
        temperature: float

    model = ScriptedModel(
        [
            [call("final_result", {"city": "Oslo", "temperature": "bad"})],
            [call("final_result", {"city": "Oslo", "temperature": 3.5})],
        ]
    )
    result = await Agent(model, output_type=Answer).run("weather?")
    assert model.requests[0].tools[-1]["name"] == "final_result"
    assert result.output == Answer(city="Oslo", temperature=3.5)
    assert "Invalid arguments" in tool_results(model.requests[1])[0].content


async def test_reasoning_and_text_segments() -> None:
    model = ScriptedModel([[think("Let me think."), "Answer."]])
    events = await collect(Agent(model), "q")
    names = [type(e).__name__ for e in events[2:8]]
    assert names == [
        "ReasoningStart",
        "ReasoningDelta",
        "ReasoningEnd",
        "TextStart",
        "TextDelta",
        "TextEnd",
    ]
    assert of(events, ev.TextStart)[0].id == of(events, ev.StepStarted)[0].message_id
    assert of(events, ev.RunFinished)[0].usage.requests == 1


async def test_output_path_writes_are_state_deltas() -> None:
    lookup = Tool.from_schema(
        {
            "type": "object",
            "properties": {
                "_tool": {"const": "lookupOrder"},
                "orderId": {"type": "string"},
                "_outputPath": {"type": "string", "const": "†state.order"},
            },
            "required": ["orderId"],
        },
        executor=lambda args, ctx: _async({"status": "shipped", "id": args["orderId"]}),
    )
    model = ScriptedModel([[call("lookupOrder", {"orderId": "A-77"})], ["Shipped."]])
    events = await collect(Agent(model, [lookup]), "where is A-77", state={"user": "ann"})
    assert of(events, ev.StateSnapshot)[0].state == {"user": "ann"}
    delta = of(events, ev.StateDelta)[0]
    assert delta.patch == [
        {"op": "add", "path": "/order", "value": {"status": "shipped", "id": "A-77"}}
    ]
    assert events[-1].status == "completed"
    # the path the blueprint fixes is not offered to the model
    assert "_outputPath" not in model.requests[0].tools[0]["parameters"]["properties"]


async def _async(value: Any) -> Any:
    return value


async def test_every_call_gets_exactly_one_result_before_the_next_turn() -> None:
    def script(request: ModelRequest) -> list[Any]:
        messages = request.messages
        for i, m in enumerate(messages):
            if isinstance(m, AssistantMessage) and m.tool_calls:
                following = []
                for n in messages[i + 1 :]:
                    if not isinstance(n, ToolResultMessage):
                        break
                    following.append(n.call_id)
                assert sorted(following) == sorted(c.id for c in m.tool_calls)
        if request.step < 3:
            return [
                call("boom", {"kind": "value"}),
                call("missing"),
                call("ping", {"n": request.step}),
            ]
        return ["done"]

    model = ScriptedModel(script)
    result = await Agent(model, [boom, ping]).run("go")
    assert result.status == "completed" and len(model.requests) == 3


async def test_input_callbacks() -> None:
    seen: list[str] = []
    t = tool(
        name="weather",
        on_input_start=lambda c: seen.append("start"),
        on_input_delta=lambda c, d: seen.append(f"delta {d}"),
        on_input_available=lambda c: seen.append(f"available {c.arguments}"),
    )(lambda city: city)
    model = ScriptedModel([[call("weather", chunks=['{"city":', '"Oslo"}'])], ["ok"]])
    await Agent(model, [t]).run("go")
    assert seen == ["start", 'delta {"city":', 'delta "Oslo"}', "available {'city': 'Oslo'}"]


async def test_model_error_ends_the_run_with_an_error_event() -> None:
    model = ScriptedModel([])  # no turns: the scripted model reports an error
    events = await collect(Agent(model), "hi")
    assert isinstance(events[-1], ev.RunError)
    assert events[-1].code == "script_exhausted"
    assert not of(events, ev.RunFinished)


async def test_argument_size_and_depth_limits() -> None:
    deep = {"kind": "x"}
    nested: Any = "leaf"
    for _ in range(40):
        nested = [nested]
    model = ScriptedModel(
        [
            [
                call("boom", {"kind": "x" * 200}, id="big"),
                call("boom", {"kind": nested}, id="deep"),
                call("boom", deep, id="fine"),
            ],
            ["ok"],
        ]
    )
    limits = Limits(max_argument_bytes=100, max_json_depth=8)
    events = await collect(Agent(model, [boom], limits=limits), "go")
    errors = {e.call_id: e.error for e in of(events, ev.ToolInputError)}
    assert errors == {
        "big": "Invalid arguments: arguments exceed 100 bytes",
        "deep": "Invalid arguments: arguments nest deeper than 8 levels",
    }


async def test_default_tool_timeout_applies_to_tools_without_one() -> None:
    @tool
    async def hang() -> str:
        """Hang."""
        await asyncio.sleep(5)
        return "never"

    model = ScriptedModel([[call("hang")], ["ok"]])
    events = await collect(Agent(model, [hang], limits=Limits(tool_timeout=0.05)), "go")
    assert of(events, ev.ToolCallResult)[0].error == "Timed out after 0.05 seconds."


# --- the run's scope: given when the run starts, frozen after ---------------------------


async def test_forwarded_props_are_given_at_start_and_cannot_change_after() -> None:
    seen: list[dict[str, Any]] = []

    @tool
    def tenant(ctx: ToolContext) -> str:
        """Which tenant the front end named."""
        props = ctx.forwarded_props
        seen.append(dict(props))
        props["tenant"] = "changed by the tool"  # its copy, not the run's
        return "ok"

    model = ScriptedModel([[call("tenant", {})], [call("tenant", {})], ["done"]])
    run = Agent(model, [tenant]).start("go", forwarded_props={"tenant": "acme"})
    with pytest.raises(TypeError):
        run.scope.forwarded_props["tenant"] = "other"  # type: ignore[index]
    with pytest.raises(AttributeError):
        run.scope.forwarded_props.update({"tenant": "other"})  # type: ignore[attr-defined]
    [e async for e in run.events()]
    assert [props["tenant"] for props in seen] == ["acme", "acme"]
    assert dict(run.scope.forwarded_props) == {"tenant": "acme"}
