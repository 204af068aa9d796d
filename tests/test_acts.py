"""Acts blueprint semantics on the scripted model: `_outputPath`, `†` references,
`_instance`, `_delegate`, `_scopes`, `_reasoningForCall` (spec part A and C)."""

from __future__ import annotations

import asyncio
from typing import Any

from callwright import Agent, Tool, Toolbox, ToolResultMessage, tool
from callwright import events as ev
from callwright.models import ModelRequest, ScriptedModel, call


def of(events: list[Any], kind: type) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


async def collect(agent: Agent, prompt: Any = None, **options: Any) -> list[Any]:
    return [e async for e in agent.stream(prompt, **options)]


def results(request: ModelRequest) -> dict[str, ToolResultMessage]:
    return {m.call_id: m for m in request.messages if isinstance(m, ToolResultMessage)}


LOOKUP = {
    "type": "object",
    "description": "Fetch an order. Returns {status,total}.",
    "properties": {
        "_tool": {"const": "lookupOrder"},
        "_reasoningForCall": {"type": "string"},
        "orderId": {"type": "string"},
        "_outputPath": {"type": "string", "pattern": "^†"},
    },
    "required": ["_tool", "_reasoningForCall", "orderId"],
}

ORDERS = {"A-77": {"status": "shipped", "total": 42}}


def order_box() -> Toolbox:
    box = Toolbox([Tool.from_schema(LOOKUP)])

    @box.activity("lookupOrder")
    async def lookup_order(call: dict[str, Any], ctx: Any) -> Any:
        row = ORDERS.get(call["orderId"])
        if row is None:  # pick the failure branch of "†state.order || †state.missing"
            return {
                "type": "data",
                "kind": "state",
                "data": {"missing": {"orderId": call["orderId"]}},
            }
        return row

    return box


async def test_order_lookup_writes_the_model_chosen_path() -> None:
    model = ScriptedModel(
        [
            [
                call(
                    "lookupOrder",
                    {
                        "_reasoningForCall": "Need status before replying",
                        "orderId": "A-77",
                        "_outputPath": "†state.order",
                    },
                )
            ],
            ["It shipped."],
        ]
    )
    agent = Agent(model, order_box())
    shown = model_schema = None
    events = await collect(agent, "Where is A-77?", state={})
    model_schema = model.requests[0].tools[0]["parameters"]["properties"]
    shown = list(model_schema)
    assert shown == ["_reasoningForCall", "orderId", "_outputPath"]
    assert of(events, ev.StateDelta)[0].patch == [
        {"op": "add", "path": "/order", "value": {"status": "shipped", "total": 42}}
    ]
    assert events[-1].status == "completed"


async def test_alternatives_let_the_activity_pick_the_failure_branch() -> None:
    model = ScriptedModel(
        [
            [
                call(
                    "lookupOrder",
                    {
                        "_reasoningForCall": "check",
                        "orderId": "Z-1",
                        "_outputPath": "†state.order || †state.missing",
                    },
                )
            ],
            ["Not found."],
        ]
    )
    run = Agent(model, order_box()).start("Where is Z-1?", state={})
    async for _ in run.events():
        pass
    assert run.result is not None
    assert run.result.state == {"missing": {"orderId": "Z-1"}}


async def test_model_chosen_path_is_constrained_by_the_schema() -> None:
    model = ScriptedModel(
        [
            [
                call(
                    "lookupOrder",
                    {"_reasoningForCall": "x", "orderId": "A-77", "_outputPath": "order"},
                )
            ],
            ["ok"],
        ]
    )
    events = await collect(Agent(model, order_box()), "go")
    error = of(events, ev.ToolInputError)[0].error
    assert "_outputPath" in error and "does not match" in error


async def test_push_and_concat_resolve_as_the_spec_says() -> None:
    flag = Tool.from_schema(
        {
            "type": "object",
            "properties": {
                "_tool": {"const": "flag"},
                "tag": {"type": "string"},
                "_outputPath": {"const": "†state.tags"},
                "_outputMethod": {"const": "push"},
            },
        },
        executor=lambda args, ctx: _value(args["tag"]),
    )
    triage = Tool.from_schema(
        {
            "type": "object",
            "properties": {
                "_tool": {"const": "triage"},
                "_outputPath": {"const": "†state.tags"},
                "_outputMethod": {"const": "concat"},
            },
        },
        executor=lambda args, ctx: _value(["refund", "prio"]),
    )
    model = ScriptedModel([[call("flag", {"tag": "late"})], [call("triage")], ["done"]])
    result = await Agent(model, [flag, triage]).run("triage", state={"tags": ["vip"]})
    assert result.state == {"tags": ["vip", "late", "refund", "prio"]}


async def _value(value: Any) -> Any:
    return value


CLASSIFY = {
    "type": "object",
    "description": "Classify tone of a text.",
    "properties": {
        "_tool": {"const": "classifyTone"},
        "text": {"type": "string"},
        "_outputPath": {"type": "string", "pattern": "^†state\\."},
        "_output": {
            "type": "object",
            "properties": {"tone": {"enum": ["calm", "angry"]}},
            "required": ["tone"],
        },
    },
    "required": ["text"],
}


async def test_two_instances_classified_in_one_request() -> None:
    classify = Tool.from_schema(CLASSIFY)
    turn = [
        call(
            "classifyTone",
            {
                "_instance": i,
                "text": "†state.text",
                "_outputPath": "†state.tone",
                "_output": {"tone": t},
            },
        )
        for i, t in (("①", "calm"), ("②", "angry"))
    ]
    model = ScriptedModel([turn, ["classified"]])
    state = {"_instances": {"①": {"text": "Great product"}, "②": {"text": "Broke in a day"}}}
    result = await Agent(model, [classify]).run("classify", state=state)
    instance_schema = model.requests[0].tools[0]["parameters"]["properties"]["_instance"]
    assert instance_schema == {"type": "string", "enum": ["①", "②"]}
    assert "_instance" in model.requests[0].tools[0]["parameters"]["required"]
    assert result.state["_instances"] == {
        "①": {"text": "Great product", "tone": {"tone": "calm"}},
        "②": {"text": "Broke in a day", "tone": {"tone": "angry"}},
    }


async def test_instance_reads_resolve_per_instance_for_explicit_tools() -> None:
    seen: list[str] = []

    @tool
    def shout(text: str) -> str:
        """Shout."""
        seen.append(text)
        return text.upper()

    turn = [call("shout", {"_instance": i, "text": "†state.text"}) for i in ("a", "b")]
    model = ScriptedModel([turn, ["ok"]])
    state = {"_instances": {"a": {"text": "one"}, "b": {"text": "two"}}}
    await Agent(model, [shout]).run("go", state=state)
    assert sorted(seen) == ["one", "two"]
    assert sorted(m.content for m in results(model.requests[1]).values()) == ["ONE", "TWO"]


async def test_missing_instance_is_an_input_error() -> None:
    @tool
    def shout(text: str) -> str:
        """Shout."""
        return text

    model = ScriptedModel([[call("shout", {"text": "x"})], ["ok"]])
    events = await collect(Agent(model, [shout]), "go", state={"_instances": {"a": {}}})
    assert of(events, ev.ToolInputError)[0].error == "Invalid arguments: _instance must be one of a"


# --- blocking, ordering and cycles ------------------------------------------------


def writer_reader_tools(log: list[str]) -> list[Tool]:
    @tool
    async def fetch(key: str) -> dict[str, Any]:
        """Fetch."""
        log.append(f"fetch {key}")
        await asyncio.sleep(0.01)
        return {"status": "shipped", "key": key}

    @tool
    def report(status: str) -> str:
        """Report."""
        log.append(f"report {status}")
        return f"status is {status}"

    return [fetch, report]


async def test_a_call_waits_for_the_call_that_writes_what_it_reads() -> None:
    log: list[str] = []
    model = ScriptedModel(
        [
            [
                call("report", {"status": "†state.order.status"}, id="reader"),
                call("fetch", {"key": "A-77", "_outputPath": "†state.order"}, id="writer"),
            ],
            ["done"],
        ]
    )
    events = await collect(Agent(model, writer_reader_tools(log)), "go", state={})
    assert log == ["fetch A-77", "report shipped"]
    assert [r.call_id for r in of(events, ev.ToolCallResult)] == ["writer", "reader"]
    # the model still gets results in its own call order
    assert list(results(model.requests[1])) == ["reader", "writer"]


async def test_or_and_and_in_inputs() -> None:
    log: list[str] = []
    model = ScriptedModel(
        [
            [
                call("report", {"status": "†state.nothing || †state.fallback"}, id="or"),
                call("report", {"status": "†state.fallback && †state.last"}, id="and"),
            ],
            ["done"],
        ]
    )
    await Agent(model, writer_reader_tools(log)).run(
        "go", state={"fallback": "fb", "last": "final"}
    )
    assert sorted(log) == ["report fb", "report final"]


async def test_cycles_are_rejected_before_anything_runs() -> None:
    log: list[str] = []
    model = ScriptedModel(
        [
            [
                call("fetch", {"key": "†state.b", "_outputPath": "†state.a"}, id="one"),
                call("fetch", {"key": "†state.a", "_outputPath": "†state.b"}, id="two"),
                call("fetch", {"key": "ok"}, id="free"),
            ],
            ["done"],
        ]
    )
    events = await collect(Agent(model, writer_reader_tools(log)), "go", state={})
    assert log == ["fetch ok"]
    errors = {r.call_id: r.error for r in of(events, ev.ToolCallResult) if r.error}
    assert set(errors) == {"one", "two"}
    assert all("dependency cycle" in e for e in errors.values())
    names = [type(e).__name__ for e in events]
    # the refusals come before any execution starts
    assert names.index("ToolCallResult") < names.index("ToolExecutionStart")


async def test_reference_nothing_writes_is_an_error() -> None:
    log: list[str] = []
    model = ScriptedModel([[call("report", {"status": "†state.nowhere"})], ["done"]])
    events = await collect(Agent(model, writer_reader_tools(log)), "go", state={})
    assert log == []
    assert of(events, ev.ToolCallResult)[0].error == (
        "Invalid arguments: †state.nowhere is not in the state and no call in this step writes it"
    )


# --- delegates and scopes ----------------------------------------------------------


SUMMARIZE = {
    "type": "object",
    "description": "Summarize a document.",
    "properties": {
        "_tool": {"const": "summarize"},
        "_delegate": {"const": "summarizer"},
        "_scopes": {"const": ["state"]},
        "doc": {"type": "string"},
        "_outputPath": {"const": "†state.summary"},
    },
    "required": ["doc"],
}


async def test_summarizer_delegate_gets_input_and_scoped_state_only() -> None:
    sub_model = ScriptedModel(lambda r: ["A three-sentence summary."])
    summarizer = Agent(sub_model, instructions="You write 3-sentence summaries.")
    parent_model = ScriptedModel(
        [[call("summarize", {"doc": "†state.article"})], ["Summary saved."]]
    )
    box = Toolbox([Tool.from_schema(SUMMARIZE)])
    box.add_delegate("summarizer", summarizer)
    events = await collect(
        Agent(parent_model, box),
        "secret parent conversation",
        state={"article": "Long article text."},
    )
    request = sub_model.requests[0]
    assert request.instructions == "You write 3-sentence summaries."
    assert len(request.messages) == 1
    text = request.messages[0].content  # type: ignore[union-attr]
    assert '"doc": "Long article text."' in text
    assert "## Data: ¶state" in text and "Long article text." in text
    assert "secret parent conversation" not in text
    sub_events = of(events, ev.Subagent)
    assert isinstance(sub_events[0].event, ev.RunStarted)
    assert isinstance(sub_events[-1].event, ev.RunFinished)
    assert any(isinstance(s.event, ev.TextDelta) for s in sub_events)
    assert of(events, ev.StateDelta)[0].patch == [
        {"op": "add", "path": "/summary", "value": "A three-sentence summary."}
    ]
    # sub-agent events arrive before the parent call's result
    names = [type(e).__name__ for e in events]
    assert names.index("Subagent") < names.index("ToolCallResult")
    # the parent's usage includes the delegate's model call (15 tokens per scripted step)
    assert events[-1].usage.requests == 3 and events[-1].usage.total_tokens == 45


async def test_delegate_depth_limit() -> None:
    recursive = {
        **SUMMARIZE,
        "properties": {**SUMMARIZE["properties"], "_outputPath": {"const": "†state.s"}},
    }
    box = Toolbox([Tool.from_schema(recursive)])
    model = ScriptedModel(lambda r: [call("summarize", {"doc": "x"})] if r.tools else ["end"])
    agent = Agent(model, box, max_delegate_depth=2, max_steps=2)
    box.add_delegate("summarizer", agent)  # it delegates to itself
    events = await collect(agent, "go", state={})
    errors = [r for r in _all_results(events) if r.error]
    assert any("delegate depth limit (2) reached" in r.error for r in errors)


def _all_results(events: list[Any]) -> list[ev.ToolCallResult]:
    found = []
    for e in events:
        if isinstance(e, ev.ToolCallResult):
            found.append(e)
        elif isinstance(e, ev.Subagent):
            found += _all_results([e.event])
    return found


async def test_cancelling_the_parent_cancels_the_delegate() -> None:
    started = asyncio.Event()

    @tool
    async def slow() -> str:
        """Slow."""
        started.set()
        await asyncio.sleep(10)
        return "late"

    sub = Agent(ScriptedModel(lambda r: [call("slow")]), [slow], cancel_grace=0.05)
    box = Toolbox([Tool.from_schema({**SUMMARIZE, "required": []})])
    box.add_delegate("summarizer", sub)
    run = Agent(ScriptedModel([[call("summarize", {"doc": "d"})]]), box, cancel_grace=1).start(
        "go", state={}
    )
    events = []
    async for e in run.events():
        events.append(e)
        if isinstance(e, ev.Subagent) and isinstance(e.event, ev.ToolExecutionStart):
            run.cancel("stop")
    assert of(events, ev.ToolCallResult)[0].error_kind == "cancelled"
    assert events[-1].status == "cancelled"


async def test_scopes_reach_an_activity() -> None:
    seen: list[dict[str, Any]] = []
    audit = Tool.from_schema(
        {
            "type": "object",
            "properties": {
                "_tool": {"const": "audit"},
                "_scopes": {"type": "array", "items": {"enum": ["state", "input"]}},
            },
        }
    )
    box = Toolbox([audit])

    @box.activity("audit")
    def run_audit(call: dict[str, Any], ctx: Any) -> str:
        seen.append(ctx.scope)
        return "ok"

    model = ScriptedModel([[call("audit", {"_scopes": ["state", "input"]})], ["ok"]])
    await Agent(model, box).run("please audit", state={"x": 1})
    assert seen == [{"state": {"x": 1}, "input": "please audit"}]


async def test_reasoning_for_call_is_shown_in_approval_requests() -> None:
    t = Tool.from_schema(LOOKUP, requires_approval=True)
    box = Toolbox([t])
    box.add_activity("lookupOrder", lambda call, ctx: "ok")
    model = ScriptedModel(
        [[call("lookupOrder", {"_reasoningForCall": "Need status", "orderId": "A"})]]
    )
    events = await collect(Agent(model, box), "go")
    assert of(events, ev.ApprovalRequested)[0].reason_for_call == "Need status"
    assert events[-1].pending[0].reason_for_call == "Need status"


async def test_a_resumed_call_keeps_its_fixed_output_path() -> None:
    store = Tool.from_schema(
        {
            "type": "object",
            "properties": {
                "_tool": {"const": "store"},
                "value": {"type": "string"},
                "_outputPath": {"const": "†state.saved"},
            },
        },
        executor=lambda args, ctx: _value(args["value"]),
        requires_approval=True,
    )
    model = ScriptedModel([[call("store", {"value": "v1"}, id="s1")], ["saved"]])
    agent = Agent(model, [store])
    paused = await agent.run("store it", state={})
    from callwright import Decision

    # the history a client sends back need not carry the runtime-filled meta
    for message in paused.messages:
        for part in getattr(message, "tool_calls", []):
            part.arguments.pop("_outputPath", None)
    result = await agent.run(
        messages=paused.messages, decisions={"s1": Decision(True)}, state=paused.state
    )
    assert result.state == {"saved": "v1"}


async def test_a_reader_waits_across_a_pause_for_a_writer_awaiting_approval() -> None:
    from callwright import Decision

    log: list[str] = []

    @tool(requires_approval=True)
    async def fetch(key: str) -> dict[str, Any]:
        """Fetch (asks first)."""
        log.append(f"fetch {key}")
        return {"status": "shipped"}

    @tool
    def report(status: str) -> str:
        """Report."""
        log.append(f"report {status}")
        return f"status is {status}"

    model = ScriptedModel(
        [
            [
                call("report", {"status": "†state.order.status"}, id="reader"),
                call("fetch", {"key": "A-77", "_outputPath": "†state.order"}, id="writer"),
            ],
            ["done"],
        ]
    )
    agent = Agent(model, [fetch, report])
    paused = await agent.run("go", state={})
    assert paused.status == "paused"
    assert [p.call_id for p in paused.pending] == ["writer"]
    assert log == []  # the reader neither ran nor failed: it waits
    assert not any(isinstance(m, ToolResultMessage) for m in paused.messages)
    result = await agent.run(
        messages=paused.messages, decisions={"writer": Decision(True)}, state=paused.state
    )
    assert log == ["fetch A-77", "report shipped"]
    assert result.status == "completed"
    assert list(results(model.requests[-1])) == ["reader", "writer"]
