"""Approvals, in one room: who decides whether a call runs, and how an answer is checked.

- The policy (``_policy``): the agent's ``approval=`` function, the tool's
  ``requires_approval`` and the thread's remembered approvals (``ThreadApprovals``),
  in that order, decide whether a call asks a human.
- The records (``_records``): an ``IssuedApproval`` (the exact call, and whose it is) on
  the way out, an ``ApprovalClaim`` (unverified) on the way back.
- The rules (``_rules``): a decision answers an approval and an answer a question, a
  question's answer gets the question as the server issued it, and an edit is refused
  where the tool does not allow edits and validated where it does: the same answer in
  every mode.
- One ``ApprovalVerifier`` interface and its three implementations: ``LedgerVerifier``
  (in memory), ``SignedVerifier`` (signed ids, no state) and the journal's (in
  ``callwright.store``, next to its SQL). A refusal is a ``Rejected`` with an HTTP status
  and a stable code.

The room looks only down (the call, messages and tool records): the wire decoders
produce claims, the server asks a verifier, the journal implements one.
"""

from .._errors import Rejected
from ._ledger import ApprovalLedger, MemoryApprovalLedger
from ._policy import REMEMBERED, AgentApprovalPolicy, ApprovalQuery, ThreadApprovals, decide
from ._records import (
    ApprovalClaim,
    ApprovalIds,
    Asked,
    EditRules,
    EditValidator,
    IssuedApproval,
    edit_rules,
    reissued_ids,
)
from ._rules import answer_of, checked_edit, last_calls
from ._verifiers import (
    ApprovalVerifier,
    Decisions,
    IdSigner,
    Issuer,
    LedgerVerifier,
    SignedVerifier,
    resolve_claims,
)

__all__ = [
    "REMEMBERED",
    "AgentApprovalPolicy",
    "ApprovalClaim",
    "ApprovalIds",
    "ApprovalLedger",
    "ApprovalQuery",
    "ApprovalVerifier",
    "Asked",
    "Decisions",
    "EditRules",
    "EditValidator",
    "IdSigner",
    "IssuedApproval",
    "Issuer",
    "LedgerVerifier",
    "MemoryApprovalLedger",
    "Rejected",
    "SignedVerifier",
    "ThreadApprovals",
    "answer_of",
    "checked_edit",
    "decide",
    "edit_rules",
    "last_calls",
    "reissued_ids",
    "resolve_claims",
]
