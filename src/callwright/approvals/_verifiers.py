"""One interface for checking a client's answers, and the two verifiers that need no database.

A verifier is told of each approval (or question) the server asks for (``issue``), may
name the approvals a run asks for (``approval_ids``), and turns a request's claims into
the run's decisions or refuses the request (``verify``, a ``Rejected``). It honours a
claim only for an approval the server issued, to the same principal in the same thread,
for the exact call (tool and arguments), once. Three implementations:

- ``LedgerVerifier``: the approvals are remembered in memory (``MemoryApprovalLedger``);
  one process, the default.
- ``SignedVerifier``: the approval id carries an HMAC of the call, principal and thread
  (``callwright.store.ApprovalSigner``); no state, so no replay protection. Questions a
  tool asks are still remembered in its ledger.
- ``callwright.store``'s journal verifier: the approvals are the journal's pending rows,
  checked in the transaction that starts the run's next segment.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import Rejected
from ..call import Decision
from ..elicitation import InputAnswer
from ..messages import Message, ToolCallPart
from ._ledger import ApprovalLedger
from ._records import ApprovalClaim, ApprovalIds, Asked, IssuedApproval, new_approval_id
from ._rules import answer_of, checked_edit, last_calls, same_call

if TYPE_CHECKING:
    from ..toolbox import Toolbox

Decisions = dict[str, "Decision | InputAnswer"]
"""What a verifier hands the run: per call id, a decision or a question's answer."""


class ApprovalVerifier(Protocol):
    """Checks a client's answers against the approvals the server issued."""

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        """Note an approval (or a question: ``approval.request``) the server asked for."""
        ...

    def approval_ids(self, principal: str | None, thread_id: str | None) -> ApprovalIds | None:
        """How a run of ``principal`` in ``thread_id`` names its approvals; None: randomly."""
        ...

    def verify(self, claims: Sequence[ApprovalClaim], asked: Asked) -> Decisions:
        """The claims as decisions keyed by call id, or ``Rejected`` with none used up."""
        ...


@dataclass(frozen=True, slots=True)
class Issuer:
    """A verifier as one request's run sees it: what the run asks for is issued to the
    request's principal, in its thread, so that only they can answer it there."""

    verifier: ApprovalVerifier
    principal: str | None
    thread_id: str | None

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        owned = replace(approval, principal=self.principal, thread_id=self.thread_id)
        self.verifier.issue(approval_id, owned)


@dataclass(frozen=True, slots=True)
class LedgerVerifier:
    """Approvals remembered in a ledger until answered (in memory by default). An allowed
    edit is validated by the run (see ``checked_edit``)."""

    ledger: ApprovalLedger

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        self.ledger.issue(approval_id, approval)

    def approval_ids(self, principal: str | None, thread_id: str | None) -> ApprovalIds:
        """A call asked again while its approval is still open (a resume that answered
        only some of a step's approvals) keeps that approval's id; others get new ones."""

        def approval_id(call_id: str, tool_name: str, arguments: dict[str, Any]) -> str:
            asked = IssuedApproval(call_id, tool_name, arguments, principal, thread_id)
            return self.ledger.open_id(asked) or new_approval_id()

        return approval_id

    def verify(self, claims: Sequence[ApprovalClaim], asked: Asked) -> Decisions:
        """All or nothing: when any claim is refused, the approvals already redeemed are
        issued again, so a refused request uses none of them up. An approval issued to
        another principal or in another thread is refused exactly like one never issued:
        the answer does not confirm that it exists."""
        if not claims:
            return {}
        calls = {part.id: part for part in last_calls(asked.messages)}
        decisions: Decisions = {}
        redeemed: list[tuple[str, IssuedApproval]] = []
        try:
            for claim in claims:
                issued = self.ledger.redeem(claim.approval_id)
                if issued is not None:
                    redeemed.append((claim.approval_id, issued))
                owner = (asked.principal, asked.thread_id)
                if issued is None or (issued.principal, issued.thread_id) != owner:
                    raise Rejected(
                        f"approval {claim.approval_id!r} was not issued by this server or was "
                        "already answered",
                        "unknown_approval",
                    )
                part = calls.get(issued.call_id)
                if claim.call_id not in (None, issued.call_id) or part is None:
                    raise _not_in_last_message(claim)
                if not same_call(part, issued, asked.fixed_meta(issued.tool_name)):
                    raise _other_call(claim, part.name != issued.tool_name)
                rules = asked.edit_rules()
                decisions[issued.call_id] = answer_of(claim, issued, rules, validate=False)
        except Rejected:
            for approval_id, issued in redeemed:
                self.ledger.issue(approval_id, issued)
            raise
        return decisions


class IdSigner(Protocol):
    """Makes and checks self-authenticating approval ids (``callwright.store.ApprovalSigner``)."""

    def new_id(
        self,
        call_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        principal: str | None = None,
        thread_id: str | None = None,
    ) -> str: ...

    def check_id(
        self,
        approval_id: str,
        call_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        principal: str | None = None,
        thread_id: str | None = None,
    ) -> bool: ...


@dataclass(frozen=True, slots=True)
class SignedVerifier:
    """Approvals whose id carries the server's signature for the call, principal and
    thread: no state, hence no replay protection. The questions tools ask are remembered
    in ``ledger`` (their state stays with the server)."""

    signer: IdSigner
    ledger: ApprovalLedger

    def issue(self, approval_id: str, approval: IssuedApproval) -> None:
        if approval.request is not None:
            self.ledger.issue(approval_id, approval)

    def approval_ids(self, principal: str | None, thread_id: str | None) -> ApprovalIds:
        return functools.partial(self.signer.new_id, principal=principal, thread_id=thread_id)

    def verify(self, claims: Sequence[ApprovalClaim], asked: Asked) -> Decisions:
        answers = [c for c in claims if isinstance(c.decision, InputAnswer)]
        signed = [c for c in claims if not isinstance(c.decision, InputAnswer)]
        decisions: Decisions = {}
        calls = last_calls(asked.messages)
        for claim in signed:
            match = next((part for part in calls if self._signed_for(claim, part, asked)), None)
            if match is None:
                raise Rejected(
                    f"approval {claim.approval_id!r} is not signed by this server for a call "
                    "of the last assistant message (or its arguments changed)",
                    "bad_signature",
                    403,
                )
            issued = IssuedApproval(match.id, match.name, match.arguments)
            assert isinstance(claim.decision, Decision)
            rules = asked.edit_rules()
            decisions[match.id] = checked_edit(claim.decision, issued, rules, validate=False)
        return decisions | LedgerVerifier(self.ledger).verify(answers, asked)

    def _signed_for(self, claim: ApprovalClaim, part: ToolCallPart, asked: Asked) -> bool:
        return claim.call_id in (None, part.id) and self.signer.check_id(
            claim.approval_id,
            part.id,
            part.name,
            part.arguments,
            principal=asked.principal,
            thread_id=asked.thread_id,
        )


def resolve_claims(
    claims: Sequence[ApprovalClaim],
    messages: Sequence[Message],
    ledger: ApprovalLedger,
    toolbox: Toolbox,
    *,
    principal: str | None = None,
    thread_id: str | None = None,
) -> Decisions:
    """``LedgerVerifier(ledger).verify``, by its older name and arguments."""
    asked = Asked(principal, thread_id, messages, toolbox)
    return LedgerVerifier(ledger).verify(list(claims), asked)


def _not_in_last_message(claim: ApprovalClaim) -> Rejected:
    return Rejected(
        f"approval {claim.approval_id!r} does not belong to a call of the last assistant message",
        "approval_mismatch",
    )


def _other_call(claim: ApprovalClaim, other_tool: bool) -> Rejected:
    if other_tool:
        return _not_in_last_message(claim)
    return Rejected(
        f"approval {claim.approval_id!r} was issued for other arguments", "approval_mismatch"
    )
