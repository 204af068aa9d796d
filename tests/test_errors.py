"""Nothing fails silently: a failed run raises from ``run``/``run_sync`` with what ended
it, every error derives from ``CallwrightError`` (keeping its builtin base), and the
three kinds of answer (a human's ``Decision``, a policy's ``ApprovalVerdict``, a
human's ``InputAnswer``) are built with the same kind of constructors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import callwright
from callwright import (
    Agent,
    ApprovalVerdict,
    CallwrightError,
    ConfigurationError,
    Decision,
    InputAnswer,
    InputRequest,
    InputRequired,
    MissingAPIKey,
    RunFailed,
    ToolContext,
    ToolResultMessage,
    UnknownDecision,
    events,
    tool,
)
from callwright.models import ErrorPart, OpenAIModel, ScriptedModel, call
from callwright.run import EventLoopRunning


@tool(requires_approval=True)
def wipe(path: str) -> str:
    """Delete a file."""
    return f"wiped {path}"


# --- failed runs raise ----------------------------------------------------------------


async def test_a_failed_run_raises_with_its_error_messages_and_usage() -> None:
    model = ScriptedModel([["Working on it", ErrorPart("the provider is down", "overloaded")]])
    with pytest.raises(RunFailed) as failed:
        await Agent(model).run("hello")
    error = failed.value
    assert str(error) == "the run failed (overloaded): the provider is down"
    assert (error.error.message, error.error.code) == ("the provider is down", "overloaded")
    assert error.result.status == "error" and error.result.error == error.error
    assert error.messages == error.result.messages
    assert [type(m).__name__ for m in error.messages] == ["UserMessage", "AssistantMessage"]
    assert error.usage.requests == 1
    assert isinstance(error, CallwrightError)


def test_run_sync_raises_the_same() -> None:
    model = ScriptedModel([[ErrorPart("quota exceeded", "rate_limited")]])
    with pytest.raises(RunFailed, match="quota exceeded") as failed:
        Agent(model).run_sync("hello")
    assert failed.value.error.code == "rate_limited"


async def test_the_exception_behind_a_failure_is_its_cause() -> None:
    def broken(info: Any) -> None:
        raise KeyError("a bug in on_step_finish")

    agent = Agent(ScriptedModel([["hi"]]), on_step_finish=broken)
    with pytest.raises(RunFailed) as failed:
        await agent.run("hello")
    assert failed.value.error.code == "internal_error"
    assert isinstance(failed.value.__cause__, KeyError)


def test_a_missing_openai_key_fails_the_run_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    agent = Agent("openai:gpt-4.1-mini")
    with pytest.raises(RunFailed) as failed:
        agent.run_sync("hello")
    message = str(failed.value)
    assert "export OPENAI_API_KEY=" in message
    assert "api_key=" in message and 'model="local"' in message
    assert failed.value.error.code == "configuration_error"
    assert failed.value.usage.requests == 0


def test_the_missing_key_error_names_the_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(MissingAPIKey, match="pass api_key= to OpenAIModel") as missing:
        OpenAIModel("gpt-4.1-mini").client()
    assert missing.value.key_env == "OPENAI_API_KEY"
    assert isinstance(missing.value, ConfigurationError) and isinstance(missing.value, ValueError)


async def test_a_paused_run_is_returned_not_raised() -> None:
    model = ScriptedModel([[call("wipe", {"path": "a"}, id="c1")], ["done"]])
    agent = Agent(model, [wipe])
    paused = await agent.run("wipe a")
    assert paused.status == "paused" and [p.call_id for p in paused.pending] == ["c1"]
    resumed = await agent.run(messages=paused.messages, decisions={"c1": Decision.approve()})
    assert resumed.status == "completed" and resumed.output == "done"


async def test_a_stream_keeps_the_error_event_and_does_not_raise() -> None:
    model = ScriptedModel([[ErrorPart("the provider is down", "overloaded")]])
    run = Agent(model).stream("hello")
    seen = [event async for event in run]
    assert isinstance(seen[-1], events.RunError) and seen[-1].code == "overloaded"
    assert run.result is not None and run.result.status == "error"
    assert run.result.error == seen[-1]


async def test_cancelling_the_task_of_a_run_raises_cancelled_and_stops_the_tools() -> None:
    started, told = asyncio.Event(), asyncio.Event()

    @tool
    async def slow(ctx: ToolContext) -> str:
        """Waits until cancelled."""
        started.set()
        try:
            await ctx.cancelled()
        except asyncio.CancelledError:
            told.set()
            raise
        return "stopped"

    agent = Agent(ScriptedModel([[call("slow", {})], ["never"]]), [slow])
    task = asyncio.ensure_future(agent.run("go"))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert told.is_set()


async def test_a_run_cancelled_with_run_cancel_ends_cancelled_without_raising() -> None:
    started = asyncio.Event()

    @tool
    async def slow(ctx: ToolContext) -> str:
        """Waits until cancelled."""
        started.set()
        await ctx.cancelled()
        return "stopped"

    run = Agent(ScriptedModel([[call("slow", {})], ["never"]]), [slow]).stream("go")

    async def cancel_when_started() -> None:
        await started.wait()
        run.cancel("the user pressed stop")

    canceller = asyncio.ensure_future(cancel_when_started())
    seen = [event async for event in run]
    await canceller
    assert isinstance(seen[-1], events.RunFinished) and seen[-1].status == "cancelled"
    assert run.result is not None and run.result.status == "cancelled"


# --- errors users see --------------------------------------------------------------------


async def test_a_decision_for_an_unknown_call_says_what_to_do() -> None:
    agent = Agent(ScriptedModel([[call("wipe", {"path": "a"}, id="c1")]]), [wipe])
    paused = await agent.run("wipe a")
    with pytest.raises(UnknownDecision) as unknown:
        await agent.run(messages=paused.messages, decisions={"nope": Decision.approve()})
    assert unknown.value.call_ids == ["nope"]
    assert "result.pending" in str(unknown.value) and "messages=" in str(unknown.value)
    assert isinstance(unknown.value, ValueError)  # code catching ValueError still does


async def test_run_sync_in_a_running_loop_raises_a_named_error() -> None:
    with pytest.raises(EventLoopRunning, match="await run"):
        Agent(ScriptedModel([])).run_sync("hi")


def test_a_misconfiguration_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="unknown model"):
        Agent("nosuch:pro")
    with pytest.raises(ConfigurationError, match="accept, decline or cancel"):
        InputAnswer("maybe")  # type: ignore[arg-type]


def test_every_exported_exception_is_a_callwright_error_with_its_old_base() -> None:
    exported = [getattr(callwright, name) for name in callwright.__all__]
    errors = [e for e in exported if isinstance(e, type) and issubclass(e, Exception)]
    errors = [e for e in errors if not issubclass(e, Warning)]
    strays = [e.__name__ for e in errors if not issubclass(e, CallwrightError)]
    assert strays == ["InputRequired"]  # a tool's signal to pause, never raised to a user
    assert issubclass(callwright.ToolConflict, ValueError)
    assert issubclass(callwright.ToolsetUnavailable, RuntimeError)
    assert issubclass(callwright.RunAlreadyStarted, RuntimeError)
    assert issubclass(callwright.IllegalTransition, RuntimeError)
    assert issubclass(callwright.ToolError, CallwrightError)
    assert issubclass(callwright.CallwrightDeprecationWarning, DeprecationWarning)


def test_the_subpackages_errors_are_callwright_errors_too() -> None:
    from callwright.mcp._config import MCPConfigError
    from callwright.models._provider import UnsupportedFile
    from callwright.models.local import LocalModelUnavailable
    from callwright.state import StatePathError
    from callwright.store import JournalUnavailable, Rejected
    from callwright.wire import WireError

    kept = {
        MCPConfigError: ValueError,
        UnsupportedFile: ValueError,
        LocalModelUnavailable: RuntimeError,
        StatePathError: ValueError,
        JournalUnavailable: Exception,
        Rejected: Exception,
        WireError: Exception,
    }
    for error, builtin in kept.items():
        assert issubclass(error, CallwrightError) and issubclass(error, builtin), error


# --- one vocabulary for answers --------------------------------------------------------


def test_the_answer_constructors_spell_the_old_values() -> None:
    assert Decision.approve() == Decision(True)
    assert Decision.approve(
        "ok", arguments={"path": "b"}, data={"account": "work"}, remember="thread"
    ) == Decision(True, "ok", {"path": "b"}, {"account": "work"}, "thread")
    assert Decision.deny("not today") == Decision(False, "not today")
    assert ApprovalVerdict.approve("safe") == ApprovalVerdict("approved", "safe")
    assert ApprovalVerdict.deny("no") == ApprovalVerdict("denied", "no")
    assert ApprovalVerdict.ask("a human decides") == ApprovalVerdict(
        "user-approval", "a human decides"
    )
    assert ApprovalVerdict.defer() == ApprovalVerdict("not-applicable")
    assert InputAnswer.accept({"name": "Ann"}) == InputAnswer("accept", {"name": "Ann"})
    assert InputAnswer.decline() == InputAnswer("decline")
    assert InputAnswer.cancel() == InputAnswer("cancel")


async def test_a_policy_and_a_human_answer_with_the_new_constructors() -> None:
    def guard(arguments: dict[str, Any]) -> ApprovalVerdict:
        path = arguments["path"]
        if path.startswith("/tmp/"):
            return ApprovalVerdict.approve()
        if path.startswith("/etc/"):
            return ApprovalVerdict.deny("system files are off limits")
        return ApprovalVerdict.ask("outside /tmp")

    @tool(requires_approval=guard)
    def delete_file(path: str, ctx: ToolContext) -> str:
        """Delete a file."""
        assert ctx.approval is not None
        return f"deleted {path} ({ctx.approval.data})"

    calls = [
        call("delete_file", {"path": "/tmp/a"}, id="tmp"),
        call("delete_file", {"path": "/etc/passwd"}, id="etc"),
        call("delete_file", {"path": "notes.txt"}, id="ask"),
        call("delete_file", {"path": "diary.txt"}, id="no"),
    ]
    agent = Agent(ScriptedModel([calls, ["done"]]), [delete_file])
    paused = await agent.run("clean up")
    assert [(p.call_id, p.reason_for_call) for p in paused.pending] == [
        ("ask", "outside /tmp"),
        ("no", "outside /tmp"),
    ]
    decisions = {"ask": Decision.approve(data="ticket-9"), "no": Decision.deny("keep it")}
    resumed = await agent.run(messages=paused.messages, decisions=decisions)
    results = {m.call_id: m.content for m in resumed.messages if isinstance(m, ToolResultMessage)}
    assert results == {
        "tmp": "deleted /tmp/a (None)",
        "etc": "Tool call denied: system files are off limits",
        "ask": "deleted notes.txt (ticket-9)",
        "no": "Tool call denied: keep it",
    }


async def test_an_input_answer_built_with_accept_reaches_the_tool() -> None:
    @tool
    def greet(ctx: ToolContext) -> str:
        """Greets the user by name."""
        if ctx.answer is None:
            raise InputRequired(InputRequest("Your name?"))
        if ctx.answer.action != "accept" or ctx.answer.content is None:
            return f"no name ({ctx.answer.action})"
        return f"hello {ctx.answer.content['name']}"

    for answer, said in (
        (InputAnswer.accept({"name": "Ann"}), "hello Ann"),
        (InputAnswer.decline(), "no name (decline)"),
    ):
        agent = Agent(ScriptedModel([[call("greet", {}, id="g")], ["done"]]), [greet])
        paused = await agent.run("greet me")
        assert [(p.call_id, p.kind) for p in paused.pending] == [("g", "input")]
        resumed = await agent.run(messages=paused.messages, decisions={"g": answer})
        (result,) = [m for m in resumed.messages if isinstance(m, ToolResultMessage)]
        assert result.content == said
