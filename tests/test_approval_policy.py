"""``requires_approval`` as a policy: not-applicable, approved, denied (with a reason
the model sees) or user-approval, besides the bool and predicate forms."""

from __future__ import annotations

from typing import Any

from callwright import Agent, ApprovalVerdict, ToolResultMessage, tool
from callwright.models import ScriptedModel, call


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
