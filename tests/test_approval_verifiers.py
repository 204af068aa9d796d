"""The approval verifier interface, one suite over its three implementations: the ledger in
memory, signed ids, and the journal's pending rows (a real SQLite journal).

Each test issues approvals through ``issue`` (with the ids ``approval_ids`` makes) and
answers them through ``verify``, as the server does; where the implementations differ
by design (signed ids keep no state, so a replay is not caught; the journal validates an
allowed edit before it keeps the decision) the test says so.
"""

from __future__ import annotations

import ast
import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import callwright.approvals
from callwright import Decision, InputAnswer, InputRequest, tool
from callwright.approvals import (
    ApprovalClaim,
    ApprovalVerifier,
    Asked,
    IssuedApproval,
    LedgerVerifier,
    MemoryApprovalLedger,
    Rejected,
    SignedVerifier,
)
from callwright.messages import AssistantMessage, Message, ToolCallPart, UserMessage
from callwright.store import ApprovalSigner, SQLiteJournal
from callwright.store._verify import JournalVerifier
from callwright.toolbox import Toolbox


@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool(requires_approval=True, allow_edits=True)
def pay(amount: int) -> str:
    """Pay an amount (a human may change it)."""
    return f"paid {amount}"


TOOLS = Toolbox([delete_file, pay])
KINDS = ["memory", "signed", "journal"]

Use = Callable[[], contextlib.AbstractContextManager[ApprovalVerifier]]
"""Opens the verifier for one request (the journal's: in a transaction of its own)."""


@pytest.fixture(params=KINDS)
def use(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Use]:
    kind = request.param
    if kind == "journal":
        journal = SQLiteJournal(tmp_path / "runs.db")

        @contextlib.contextmanager
        def in_a_transaction() -> Iterator[ApprovalVerifier]:
            with journal._tx() as db:  # what Journal.begin does around its check
                yield JournalVerifier(db, run_id="r1")

        yield in_a_transaction
        journal.close()
        return
    ledger = MemoryApprovalLedger()
    verifier: ApprovalVerifier = (
        SignedVerifier(ApprovalSigner("s" * 32), ledger)
        if kind == "signed"
        else LedgerVerifier(ledger)
    )
    yield lambda: contextlib.nullcontext(verifier)


def kind_of(use: Use) -> str:
    with use() as verifier:
        if isinstance(verifier, SignedVerifier):
            return "signed"
        return "memory" if isinstance(verifier, LedgerVerifier) else "journal"


def issue(
    use: Use,
    tool_name: str,
    arguments: dict[str, Any],
    *,
    principal: str = "alice",
    thread_id: str = "t1",
    request: InputRequest | None = None,
) -> tuple[str, ToolCallPart]:
    """Issue an approval (or a question) for a new call; its id and the call as the model
    made it."""
    call = ToolCallPart(f"call_{uuid.uuid4().hex[:8]}", tool_name, arguments)
    with use() as verifier:
        ids = verifier.approval_ids(principal, thread_id)
        approval_id = (
            request.id
            if request is not None
            else ids(call.id, tool_name, arguments)
            if ids is not None
            else f"apr_{uuid.uuid4().hex}"
        )
        issued = IssuedApproval(call.id, tool_name, arguments, principal, thread_id, request)
        verifier.issue(approval_id, issued)
    return approval_id, call


def verify(
    use: Use,
    claims: list[ApprovalClaim],
    calls: list[ToolCallPart],
    *,
    principal: str = "alice",
    thread_id: str = "t1",
) -> dict[str, Decision | InputAnswer]:
    messages: list[Message] = [UserMessage("go"), AssistantMessage("", tool_calls=calls)]
    with use() as verifier:
        return verifier.verify(claims, Asked(principal, thread_id, messages, TOOLS))


def refused(use: Use, claims: list[ApprovalClaim], calls: list[ToolCallPart], **kw: Any) -> str:
    with pytest.raises(Rejected) as info:
        verify(use, claims, calls, **kw)
    return info.value.code


def test_an_issued_approval_is_honoured_for_its_call(use: Use) -> None:
    approval_id, call = issue(use, "delete_file", {"path": "a.txt"})
    decisions = verify(use, [ApprovalClaim(approval_id, Decision.approve("ok"))], [call])
    assert decisions == {call.id: Decision(True, "ok")}


def test_a_replayed_approval_is_refused_except_by_signed_ids(use: Use) -> None:
    approval_id, call = issue(use, "delete_file", {"path": "a.txt"})
    claim = ApprovalClaim(approval_id, Decision.approve())
    assert call.id in verify(use, [claim], [call])
    if kind_of(use) == "signed":  # stateless: the documented trade-off
        assert call.id in verify(use, [claim], [call])
    else:
        assert refused(use, [claim], [call]) in ("unknown_approval", "already_answered")


def test_a_forged_approval_is_refused(use: Use) -> None:
    _, call = issue(use, "delete_file", {"path": "a.txt"})
    code = refused(use, [ApprovalClaim("apr_forged.0000", Decision.approve())], [call])
    assert code in ("unknown_approval", "bad_signature")


@pytest.mark.parametrize("other", [{"principal": "mallory"}, {"thread_id": "t2"}])
def test_another_principal_or_thread_is_refused_and_uses_nothing_up(
    use: Use, other: dict[str, str]
) -> None:
    approval_id, call = issue(use, "delete_file", {"path": "a.txt"})
    claim = ApprovalClaim(approval_id, Decision.approve())
    assert refused(use, [claim], [call], **other) in (
        "unknown_approval",
        "bad_signature",
        "wrong_thread",
    )
    assert call.id in verify(use, [claim], [call])  # still there for its owner


def test_a_request_refused_for_one_claim_uses_none_of_its_approvals(use: Use) -> None:
    approval_id, call = issue(use, "delete_file", {"path": "a.txt"})
    good = ApprovalClaim(approval_id, Decision.approve())
    forged = ApprovalClaim("apr_forged.0000", Decision.approve())
    refused(use, [good, forged], [call])
    assert call.id in verify(use, [good], [call])


def test_an_edit_is_applied_where_the_tool_allows_it_and_refused_elsewhere(use: Use) -> None:
    approval_id, call = issue(use, "delete_file", {"path": "a.txt"})
    edited = Decision.approve(arguments={"path": "/etc/passwd"})
    assert refused(use, [ApprovalClaim(approval_id, edited)], [call]) == "arguments_changed"
    approval_id, call = issue(use, "pay", {"amount": 100})
    decisions = verify(
        use, [ApprovalClaim(approval_id, Decision.approve(arguments={"amount": 7}))], [call]
    )
    assert decisions[call.id].arguments == {"amount": 7}  # type: ignore[union-attr]


def test_arguments_sent_back_unchanged_are_no_edit(use: Use) -> None:
    approval_id, call = issue(use, "delete_file", {"path": "a.txt"})
    same = Decision.approve(arguments={"path": "a.txt", "_outputPath": "/x"})
    assert verify(use, [ApprovalClaim(approval_id, same)], [call])[call.id] == Decision(True)


def test_an_invalid_edit_is_refused_by_the_journal_and_left_to_the_run_elsewhere(
    use: Use,
) -> None:
    approval_id, call = issue(use, "pay", {"amount": 100})
    claim = ApprovalClaim(approval_id, Decision.approve(arguments={"amount": "all of it"}))
    if kind_of(use) == "journal":
        assert refused(use, [claim], [call]) == "invalid_edit"
    else:  # the run validates it like the model's arguments ("Invalid arguments")
        assert verify(use, [claim], [call])[call.id].arguments == {"amount": "all of it"}  # type: ignore[union-attr]


def test_a_question_gets_its_answer_with_the_question_the_server_kept(use: Use) -> None:
    question = InputRequest("Which account?", {"type": "object"}, {"parked": 1}, id="inp_1")
    answer_id, call = issue(use, "pay", {"amount": 5}, request=question)
    wrong_way = ApprovalClaim(answer_id, Decision.approve(), call.id)
    # signed ids: a decision is checked as a signed approval id, which a question's is not
    expected = "bad_signature" if kind_of(use) == "signed" else "answer_mismatch"
    assert refused(use, [wrong_way], [call]) == expected
    answer = ApprovalClaim(answer_id, InputAnswer.accept({"account": "work"}), call.id)
    decisions = verify(use, [answer], [call])
    assert decisions == {call.id: InputAnswer("accept", {"account": "work"}, question)}


def test_the_approvals_room_imports_nothing_above_it() -> None:
    """The wire decoders, the server and the journal use the room; it uses none of them
    (nor the run), so a rule written here is written once for all of them."""
    room = Path(callwright.approvals.__file__).parent
    above = {"server", "wire", "store", "run", "durable", "mcp"}
    found = []
    for path in sorted(room.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                top = (node.module or "").split(".")[0]
                names = [a.name for a in node.names] if not node.module else [top]
                found += [f"{path.name}: {name}" for name in names if name in above]
            elif isinstance(node, ast.ImportFrom | ast.Import):
                modules = (
                    [node.module]
                    if isinstance(node, ast.ImportFrom)
                    else [a.name for a in node.names]
                )
                found += [
                    f"{path.name}: {m}"
                    for m in modules
                    if m and m.startswith("callwright.") and m.split(".")[1] in above
                ]
    assert found == []
