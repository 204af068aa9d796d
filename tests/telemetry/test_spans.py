"""The spans of a run, read back from the SDK's in-memory exporter: names, parents,
attributes and events for a plain run, parallel calls, errors, an approval's pause and
resume, a delegate, a cancellation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from callwright import (
    Agent,
    Decision,
    RunFailed,
    Tool,
    ToolContext,
    ToolError,
    telemetry,
    tool,
)
from callwright.models import ErrorPart, ModelEvent, ModelRequest, ScriptedModel, call
from callwright.telemetry import _trace

if TYPE_CHECKING:
    from conftest import Otel


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool
async def explode() -> str:
    """Always fails."""
    raise ValueError("boom")


@tool(timeout=0.01)
async def sluggish() -> str:
    """Slower than its own timeout."""
    await asyncio.sleep(1)
    return "late"


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
async def report(ctx: ToolContext) -> str:
    """Reports progress twice."""
    ctx.progress("half way", 0.5)
    ctx.progress("done", 1.0)
    return "reported"


def turns(*script: list[Any]) -> ScriptedModel:
    return ScriptedModel(list(script))


async def test_a_plain_run_is_one_tree(otel: Otel) -> None:
    model = turns([call("add", {"a": 1, "b": 2}, id="c1")], ["It is 3."])
    agent = Agent(model, [add], name="calculator")
    result = await agent.run("1 + 2?", thread_id="thread_plain")
    assert result.output == "It is 3."

    assert otel.names() == [
        "chat scripted",
        "execute_tool add",
        "chat scripted",
        "invoke_agent calculator",
    ]
    run = otel.one("invoke_agent calculator")
    assert run.parent is None and run.kind is SpanKind.INTERNAL
    assert dict(run.attributes or {}) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "callwright",
        "gen_ai.request.model": "scripted",
        "gen_ai.agent.name": "calculator",
        "gen_ai.conversation.id": "thread_plain",
        "callwright.run.id": result.run_id,
        "callwright.run.depth": 0,
        "gen_ai.usage.input_tokens": 20,
        "gen_ai.usage.output_tokens": 10,
        "callwright.run.status": "completed",
    }
    first, second = otel.spans("chat ")
    for chat in (first, second):
        assert otel.parent(chat) == otel.id(run) and chat.kind is SpanKind.CLIENT
        assert chat.attributes is not None
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.request.model"] == "scripted"
        assert chat.attributes["gen_ai.usage.input_tokens"] == 10
        assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert first.attributes is not None and second.attributes is not None
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert second.attributes["gen_ai.response.finish_reasons"] == ("stop",)

    execute = otel.one("execute_tool add")
    assert otel.parent(execute) == otel.id(run) and execute.kind is SpanKind.INTERNAL
    assert dict(execute.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two numbers.",
        "callwright.call.outcome": "output-available",
    }
    assert execute.status.status_code is StatusCode.UNSET
    # the tool ran between the two model turns
    assert first.end_time is not None and second.start_time is not None
    assert first.end_time <= execute.start_time <= second.start_time  # type: ignore[operator]


async def test_parallel_calls_are_siblings_each_current_in_its_own_task(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("user-code")

    @tool
    async def slow(label: str) -> str:
        """Wait a little, inside a span of the tool's own."""
        with tracer.start_as_current_span(f"inside {label}"):
            await asyncio.sleep(0.05)
        return label

    model = turns(
        [call("slow", {"label": "a"}, id="ca"), call("slow", {"label": "b"}, id="cb")],
        ["Both done."],
    )
    await Agent(model, [slow]).run("go")

    run = otel.one("invoke_agent")
    tools = {s.attributes["gen_ai.tool.call.id"]: s for s in otel.spans("execute_tool ")}  # type: ignore[index]
    assert set(tools) == {"ca", "cb"}
    assert all(otel.parent(s) == otel.id(run) for s in tools.values())
    a, b = tools["ca"], tools["cb"]
    assert a.start_time < b.end_time and b.start_time < a.end_time  # type: ignore[operator]
    # each tool's own span is a child of that call's span, not of its sibling's
    assert otel.parent(otel.one("inside a")) == otel.id(a)
    assert otel.parent(otel.one("inside b")) == otel.id(b)


async def test_failures_carry_error_type_and_status(otel: Otel) -> None:
    model = turns(
        [
            call("explode", {}, id="c_raise"),
            call("add", {"a": "x"}, id="c_invalid"),
            call("missing", {}, id="c_unknown"),
            call("sluggish", {}, id="c_slow"),
        ],
        ["Noted."],
    )
    await Agent(model, [explode, add, sluggish]).run("try things")

    by_call = {s.attributes["gen_ai.tool.call.id"]: s for s in otel.spans("execute_tool ")}  # type: ignore[index]
    expected = {
        "c_raise": "failed",
        "c_invalid": "invalid-args",
        "c_unknown": "not-found",
        "c_slow": "timed-out",
    }
    for call_id, kind in expected.items():
        span = by_call[call_id]
        assert span.attributes is not None
        assert span.attributes["error.type"] == kind
        assert span.attributes["callwright.call.outcome"] == "output-error"
        assert span.status.status_code is StatusCode.ERROR
    assert by_call["c_raise"].status.description == "boom"
    assert otel.events(by_call["c_slow"]) == ["callwright.call.timed_out"]
    # the run itself went on and completed
    run = otel.one("invoke_agent")
    assert run.status.status_code is StatusCode.UNSET
    assert run.attributes is not None and run.attributes["callwright.run.status"] == "completed"


async def test_a_provider_error_fails_the_chat_and_the_run(otel: Otel) -> None:
    model = ScriptedModel([[ErrorPart("the provider is down", "overloaded")]])
    with pytest.raises(RunFailed) as failed:
        await Agent(model).run("hello")
    assert failed.value.result.status == "error" and failed.value.error.code == "overloaded"

    chat = otel.one("chat scripted")
    assert chat.attributes is not None and chat.attributes["error.type"] == "overloaded"
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.status.description == "the provider is down"
    run = otel.one("invoke_agent")
    assert run.attributes is not None and run.attributes["error.type"] == "overloaded"
    assert run.status.status_code is StatusCode.ERROR


async def test_an_approval_pauses_one_trace_and_the_resume_links_to_it(otel: Otel) -> None:
    model = turns([call("delete_file", {"path": "a.txt"}, id="c1")], ["Done."])
    agent = Agent(model, [delete_file])
    first = await agent.run("delete a.txt", thread_id="thread_approval")
    assert first.status == "paused"

    paused = otel.one("invoke_agent")
    assert paused.attributes is not None and paused.attributes["callwright.run.status"] == "paused"
    assert otel.events(paused) == ["callwright.approval.requested"]
    requested = paused.events[0].attributes or {}
    assert requested["gen_ai.tool.call.id"] == "c1"
    assert requested["gen_ai.tool.name"] == "delete_file"
    assert requested["callwright.approval.id"] == first.pending[0].approval_id
    assert otel.spans("execute_tool") == []  # nothing ran before the decision
    assert first.pending[0].traceparent == _trace.format_traceparent(paused.context)  # type: ignore[arg-type]

    otel.exporter.clear()
    second = await agent.run(
        messages=first.messages, decisions={"c1": Decision(True)}, thread_id="thread_approval"
    )
    assert second.output == "Done."

    resumed = otel.one("invoke_agent")
    assert otel.trace(resumed) != otel.trace(paused)  # two traces ...
    assert [link.context for link in resumed.links] == [paused.context]  # ... linked
    assert resumed.links[0].attributes == {"callwright.link.type": "resumed_from"}
    assert otel.events(resumed) == ["callwright.approval.resolved"]
    resolved = resumed.events[0].attributes or {}
    assert resolved["gen_ai.tool.call.id"] == "c1" and resolved["callwright.approval.approved"]
    execute = otel.one("execute_tool delete_file")
    assert otel.parent(execute) == otel.id(resumed)


async def test_a_resume_in_another_process_links_through_the_traceparent(otel: Otel) -> None:
    model = turns([call("delete_file", {"path": "a.txt"}, id="c1")], ["Not deleted."])
    agent = Agent(model, [delete_file])
    first = await agent.run("delete a.txt")
    paused = otel.one("invoke_agent")
    traceparent = first.pending[0].traceparent
    assert traceparent is not None and traceparent.startswith("00-")

    _trace._paused.clear()  # nothing remembered in this process: only the option links
    otel.exporter.clear()
    run = agent.start(
        messages=first.messages,
        decisions={"c1": Decision(False, "not now")},
        traceparent=traceparent,
    )
    async for _ in run.events():
        pass
    resumed = otel.one("invoke_agent")
    assert [link.context.span_id for link in resumed.links] == [otel.id(paused)]
    denied = otel.one("execute_tool delete_file")
    assert denied.attributes is not None
    assert denied.attributes["callwright.call.outcome"] == "output-denied"
    assert "error.type" not in denied.attributes  # a denial is an answer, not a failure


async def test_a_delegate_runs_under_the_call_that_delegated(otel: Otel) -> None:
    summarize = Tool.from_schema(
        {
            "type": "object",
            "description": "Summarize with a sub-agent.",
            "properties": {
                "_tool": {"const": "summarize"},
                "_delegate": {"const": "summarizer"},
                "doc": {"type": "string"},
            },
            "required": ["doc"],
        }
    )

    def sub_script(request: ModelRequest) -> list[Any]:
        if request.step == 1:
            return [call("add", {"a": 2, "b": 2}, id="c_sub")]
        return ["Four."]

    agent = Agent(turns([call("summarize", {"doc": "2+2"}, id="c_parent")], ["Ok."]), [summarize])
    agent.toolbox.add_delegate("summarizer", Agent(ScriptedModel(sub_script), [add]))
    result = await agent.run("summarize")
    assert result.output == "Ok."

    parent_run = otel.one("invoke_agent")
    delegating = otel.one("execute_tool summarize")
    sub_run = otel.one("invoke_agent summarizer")
    sub_tool = otel.one("execute_tool add")
    assert otel.parent(delegating) == otel.id(parent_run)
    assert otel.parent(sub_run) == otel.id(delegating)
    assert sub_run.attributes is not None and sub_run.attributes["callwright.run.depth"] == 1
    assert otel.parent(sub_tool) == otel.id(sub_run)
    sub_chats = [s for s in otel.spans("chat ") if otel.parent(s) == otel.id(sub_run)]
    assert len(sub_chats) == 2
    assert {otel.trace(s) for s in otel.spans()} == {otel.trace(parent_run)}


async def test_progress_and_cancellation_are_span_events(otel: Otel) -> None:
    await Agent(turns([call("report", {}, id="c_report")], ["Ok."]), [report]).run("go")
    reported = otel.one("execute_tool report")
    assert otel.events(reported) == ["callwright.tool.progress", "callwright.tool.progress"]
    assert dict(reported.events[0].attributes or {}) == {
        "callwright.progress.text": "half way",
        "callwright.progress.fraction": 0.5,
    }

    otel.exporter.clear()
    started = asyncio.Event()

    @tool
    async def wait_forever(ctx: ToolContext) -> str:
        """Waits until cancelled."""
        started.set()
        await ctx.cancelled()
        raise ToolError("stopped")

    run = Agent(turns([call("wait_forever", {}, id="c_wait")], ["Stopped."]), [wait_forever]).start(
        "wait"
    )

    async def cancel_when_started() -> None:
        await started.wait()
        run.cancel("the user pressed stop")

    canceller = asyncio.create_task(cancel_when_started())
    async for _ in run.events():
        pass
    await canceller
    assert run.result is not None and run.result.status == "cancelled"
    waited = otel.one("execute_tool wait_forever")
    assert waited.attributes is not None
    assert waited.attributes["error.type"] in ("cancelled", "failed")
    assert "callwright.run.cancelled" in otel.events(otel.one("invoke_agent"))


async def test_a_closed_stream_is_an_interruption(otel: Otel) -> None:
    run = Agent(turns(["Hello there."])).start("hi")
    events = run.events()
    await anext(events)  # RunStarted, then the consumer goes away
    await events.aclose()
    run_span = otel.one("invoke_agent")
    assert otel.events(run_span) == ["callwright.run.interrupted"]
    assert run_span.attributes is not None and run_span.attributes["error.type"] == "interrupted"


async def test_content_is_recorded_only_when_opted_in(otel: Otel) -> None:
    model = turns([call("add", {"a": 1, "b": 2}, id="c1")], ["3"])
    await Agent(model, [add]).run("1 + 2")
    plain = otel.one("execute_tool add").attributes or {}
    assert "gen_ai.tool.call.arguments" not in plain and "gen_ai.tool.call.result" not in plain

    otel.exporter.clear()
    telemetry.configure(
        tracer_provider=otel.tracer_provider, meter_provider=None, capture_content=True
    )
    model = turns([call("add", {"a": 1, "b": 2}, id="c1")], ["3"])
    await Agent(model, [add]).run("1 + 2")
    captured = otel.one("execute_tool add").attributes or {}
    assert captured["gen_ai.tool.call.arguments"] == '{"a": 1, "b": 2}'
    assert captured["gen_ai.tool.call.result"] == "3"


async def test_nothing_is_traced_when_tracing_is_off(otel: Otel) -> None:
    telemetry.configure(enabled=False)
    run = Agent(turns(["Hi."])).start("hello")
    assert run.scope.trace is None
    async for _ in run.events():
        pass
    assert otel.spans() == []

    telemetry.configure()  # the defaults: no provider given, no SDK installed globally
    assert Agent(turns(["Hi."])).start("hello").scope.trace is None


async def test_the_model_request_is_made_inside_the_chat_span(otel: Otel) -> None:
    """An instrumented HTTP client (here: a span the model opens as it sends its request)
    nests under the turn's ``chat`` span."""
    tracer = otel.tracer_provider.get_tracer("http-client")
    inner = ScriptedModel([["Hi."]])

    class Instrumented:
        name = "openai:gpt-test"
        modes = inner.modes

        async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
            with tracer.start_as_current_span("POST /v1/chat/completions"):
                await asyncio.sleep(0)
            async for part in inner.stream(request):
                yield part

    await Agent(Instrumented()).run("hello")
    chat = otel.one("chat gpt-test")
    assert chat.attributes is not None
    assert chat.attributes["gen_ai.provider.name"] == "openai"
    assert chat.attributes["gen_ai.request.model"] == "gpt-test"
    assert otel.parent(otel.one("POST /v1/chat/completions")) == otel.id(chat)
