"""``requires_approval`` as a policy: not-applicable, approved, denied (with a reason
the model sees) or user-approval, besides the bool and predicate forms."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from callwright import (
    Agent,
    ApprovalQuery,
    ApprovalVerdict,
    Decision,
    ThreadApprovals,
    Tool,
    ToolContext,
    ToolResultMessage,
    UserMessage,
    tool,
)
from callwright.events import ApprovalRequested, ApprovalResolved
from callwright.models import ModelRequest, ScriptedModel, call


def policy(arguments: dict[str, Any]) -> ApprovalVerdict:
    path = str(arguments.get("path", ""))
    if path.startswith("/tmp/"):
        return ApprovalVerdict("approved")
    if path.startswith("/etc/"):
        return ApprovalVerdict("denied", "system files are off limits")
    if path.endswith(".bak"):
        return ApprovalVerdict("not-applicable")
    return ApprovalVerdict("user-approval")


@tool(requires_approval=policy)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def test_each_outcome_of_a_policy() -> None:
    model = ScriptedModel(
        [
            [
                call("delete_file", {"path": "/tmp/a"}, id="auto"),
                call("delete_file", {"path": "/etc/passwd"}, id="denied"),
                call("delete_file", {"path": "old.bak"}, id="free"),
                call("delete_file", {"path": "notes.txt"}, id="ask"),
            ],
            ["done"],
        ]
    )
    paused = await Agent(model, [delete_file]).run("clean up")
    assert paused.status == "paused"
    assert [(p.call_id, p.kind) for p in paused.pending] == [("ask", "approval")]
    results = {
        m.call_id: (m.content, m.is_error)
        for m in paused.messages
        if isinstance(m, ToolResultMessage)
    }
    assert results == {
        "auto": ("deleted /tmp/a", False),
        "denied": ("Tool call denied: system files are off limits", True),
        "free": ("deleted old.bak", False),
    }


def test_bool_and_predicate_forms_are_kept() -> None:
    @tool(requires_approval=lambda args: args.get("n", 0) > 1)
    def pay(n: int) -> str:
        """Pay."""
        return "paid"

    assert pay.needs_approval({"n": 2}) and not pay.needs_approval({"n": 1})
    assert pay.approval({"n": 2}) == ApprovalVerdict("user-approval")
    assert delete_file.approval({"path": "/etc/x"}).reason == "system files are off limits"


# --- the agent's policy -----------------------------------------------------------------


def ask_for_writes(query: ApprovalQuery) -> ApprovalVerdict | None:
    """An agent-wide policy: denies front-end "danger", asks for writes, defers the rest."""
    if query.client and query.tool_name == "danger":
        return ApprovalVerdict("denied", "front-end danger is off")
    if query.tool_name.startswith("write_"):
        return ApprovalVerdict("user-approval", "writes need a human")
    return None


@tool
def write_note(text: str, ctx: ToolContext) -> dict[str, Any]:
    """Write a note; returns what the approver sent along."""
    approval = ctx.approval
    return {
        "text": text,
        "data": approval.data if approval is not None else None,
        "automatic": approval.automatic if approval is not None else None,
    }


@tool
def read_note() -> str:
    """Read the note (no approval of its own)."""
    return "a note"


def results_of(messages: list[Any]) -> dict[str, tuple[str, bool]]:
    return {
        m.call_id: (m.content, m.is_error) for m in messages if isinstance(m, ToolResultMessage)
    }


async def test_agent_policy_sees_every_call_first_and_defers_to_the_tool() -> None:
    danger = Tool.from_schema(
        {"name": "danger", "description": "front end", "parameters": {"type": "object"}},
        client=True,
    )
    model = ScriptedModel(
        [
            [
                call("read_note", {}, id="read"),
                call("delete_file", {"path": "/etc/x"}, id="tool-denies"),
                call("danger", {}, id="client"),
                call("write_note", {"text": "hi"}, id="write"),
            ],
            ["done"],
        ]
    )
    agent = Agent(model, [read_note, delete_file, write_note], approval=ask_for_writes)
    paused = await agent.run("go", client_tools=[danger])
    assert [(p.call_id, p.kind, p.reason_for_call) for p in paused.pending] == [
        ("write", "approval", "writes need a human")
    ]
    assert results_of(paused.messages) == {
        "read": ("a note", False),
        "tool-denies": ("Tool call denied: system files are off limits", True),
        "client": ("Tool call denied: front-end danger is off", True),
    }


async def test_agent_policy_approves_a_front_end_tool_automatically() -> None:
    pick = Tool.from_schema(
        {"name": "pick", "description": "front end", "parameters": {"type": "object"}},
        client=True,
    )
    model = ScriptedModel([[call("pick", {}, id="p")], ["done"]])
    agent = Agent(model, [], approval=lambda q: ApprovalVerdict("approved", "fine"))
    run = agent.stream("go", client_tools=[pick])
    events = [e async for e in run]
    assert run.result is not None and run.result.status == "paused"
    assert [(p.call_id, p.kind) for p in run.result.pending] == [("p", "client")]
    (resolved,) = [e for e in events if isinstance(e, ApprovalResolved)]
    assert (resolved.call_id, resolved.approved, resolved.reason, resolved.automatic) == (
        "p",
        True,
        "fine",
        True,
    )
    assert not any(isinstance(e, ApprovalRequested) for e in events)


async def test_the_approvers_data_reaches_the_tool() -> None:
    model = ScriptedModel([[call("write_note", {"text": "hi"}, id="w")], ["done"]])
    agent = Agent(model, [write_note], approval=ask_for_writes)
    paused = await agent.run("go")
    decision = Decision(True, data={"folder": "inbox"})
    done = await agent.run(messages=paused.messages, decisions={"w": decision})
    assert results_of(done.messages)["w"] == (
        '{"text":"hi","data":{"folder":"inbox"},"automatic":false}',
        False,
    )
    # the model sees the data only where the tool returns it
    (seen,) = [m for m in model.requests[-1].messages if isinstance(m, ToolResultMessage)]
    assert seen.content.count("inbox") == 1


async def test_a_denial_reaches_the_models_next_request_with_its_reason() -> None:
    model = ScriptedModel([[call("delete_file", {"path": "/etc/passwd"}, id="d")], ["ok"]])
    await Agent(model, [delete_file]).run("go")
    (result,) = [m for m in model.requests[1].messages if isinstance(m, ToolResultMessage)]
    assert (result.content, result.is_error) == (
        "Tool call denied: system files are off limits",
        True,
    )


async def test_automatic_decisions_are_events_without_a_request() -> None:
    model = ScriptedModel(
        [
            [
                call("delete_file", {"path": "/tmp/a"}, id="auto"),
                call("delete_file", {"path": "/etc/a"}, id="denied"),
            ],
            ["done"],
        ]
    )
    run = Agent(model, [delete_file]).stream("go")
    events = [e async for e in run]
    assert not any(isinstance(e, ApprovalRequested) for e in events)
    resolved = [
        (e.call_id, e.approved, e.reason, e.automatic)
        for e in events
        if isinstance(e, ApprovalResolved)
    ]
    assert resolved == [
        ("auto", True, None, True),
        ("denied", False, "system files are off limits", True),
    ]
    ids = {e.approval_id for e in events if isinstance(e, ApprovalResolved)}
    assert len(ids) == 2 and all(i and i.startswith("apr_") for i in ids)


# --- "for the rest of this thread" ------------------------------------------------------


def write_turns(request: ModelRequest) -> list[Any]:
    """Call write_note once per user message; answer once its result is in."""
    last = request.messages[-1]
    if isinstance(last, UserMessage):
        return [call("write_note", {"text": last.content}, id=f"w_{last.content}")]
    return ["done"]


async def test_remember_thread_approves_the_tools_later_calls() -> None:
    model = ScriptedModel(write_turns)
    agent = Agent(model, [write_note], approval=ask_for_writes)
    remembered = ThreadApprovals()
    first = await agent.run("a", thread_id="t1", thread_approvals=remembered)
    assert [p.call_id for p in first.pending] == ["w_a"]
    resumed = await agent.run(
        messages=first.messages,
        decisions={"w_a": Decision(True, remember="thread")},
        thread_id="t1",
        thread_approvals=remembered,
    )
    assert resumed.status == "completed" and list(remembered) == ["write_note"]
    run = agent.stream(
        messages=[*resumed.messages, UserMessage("b")], thread_id="t1", thread_approvals=remembered
    )
    events = [e async for e in run]
    assert run.result is not None and run.result.status == "completed"
    (auto,) = [e for e in events if isinstance(e, ApprovalResolved)]
    assert (auto.approved, auto.automatic, auto.reason) == (
        True,
        True,
        "approved for the rest of this thread",
    )
    assert results_of(run.result.messages)["w_b"][0] == (
        '{"text":"b","data":null,"automatic":true}'
    )
    # another thread (its own ThreadApprovals) is asked again
    other = await agent.run("c", thread_id="t2", thread_approvals=ThreadApprovals())
    assert [p.call_id for p in other.pending] == ["w_c"]


async def test_a_denial_or_a_plain_approval_is_not_remembered_and_a_policy_denial_wins() -> None:
    model = ScriptedModel(write_turns)
    agent = Agent(model, [write_note], approval=ask_for_writes)
    remembered = ThreadApprovals()
    first = await agent.run("a", thread_approvals=remembered)
    await agent.run(
        messages=first.messages,
        decisions={"w_a": Decision(False, "no", remember="thread")},
        thread_approvals=remembered,
    )
    assert list(remembered) == []
    remembered.remember("delete_file")
    model2 = ScriptedModel([[call("delete_file", {"path": "/etc/x"}, id="d")], ["done"]])
    result = await Agent(model2, [delete_file]).run("go", thread_approvals=remembered)
    assert results_of(result.messages)["d"] == (
        "Tool call denied: system files are off limits",
        True,
    )


def test_thread_approvals_are_capped() -> None:
    remembered = ThreadApprovals(limit=2)
    for name in ("a", "b", "c"):
        remembered.remember(name)
    assert list(remembered) == ["b", "c"] and not remembered.allows("a")
    remembered.forget("b")
    assert list(remembered) == ["c"]


# --- MCP tools are tools like any other ---------------------------------------------------

CHANGING = Path(__file__).parent / "mcp" / "servers" / "changing.py"


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (ApprovalVerdict("denied", "no wiping"), "Tool call denied: no wiping"),
        (ApprovalVerdict("approved"), "wiped db"),
        (None, None),  # not-applicable: the tool's own setting (its destructive hint) asks
    ],
)
async def test_the_agent_policy_covers_mcp_tools(
    verdict: ApprovalVerdict | None, expected: str | None
) -> None:
    from callwright.mcp import MCPServer

    seen: list[ApprovalQuery] = []

    def rule(query: ApprovalQuery) -> ApprovalVerdict | None:
        seen.append(query)
        return verdict

    model = ScriptedModel([[call("wipe", {"target": "db"}, id="w")], ["done"]])
    server = MCPServer.stdio(sys.executable, [str(CHANGING)], name="changing")
    async with Agent(model, toolsets=[server], approval=rule) as agent:
        result = await agent.run("wipe")
    assert [(q.tool_name, q.arguments, q.client) for q in seen] == [
        ("wipe", {"target": "db"}, False)
    ]
    if expected is None:
        assert [(p.call_id, p.kind) for p in result.pending] == [("w", "approval")]
    else:
        assert results_of(result.messages)["w"][0] == expected
