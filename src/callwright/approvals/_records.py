"""What an approval is on its way out and on its way back: the issued record and the claim.

An approval the server asks for is an ``IssuedApproval``: the exact call (tool and
arguments), and whose it is (principal and thread). What a client sends back is only an
``ApprovalClaim`` until a verifier has matched it to an issued approval.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..call import Decision
from ..elicitation import InputAnswer, InputRequest
from ..messages import Message

if TYPE_CHECKING:
    from ..tool import Tool
    from ..toolbox import Toolbox

ApprovalIds = Callable[[str, str, dict[str, Any]], str]
"""``approval_ids(call_id, tool_name, arguments)``: the id of an approval a run asks for
(a signed one, see ``SignedVerifier``); by default ids are random."""


def new_approval_id() -> str:
    """Unguessable, and distinct from the call id (the AI SDK keys approvals by it)."""
    return "apr_" + secrets.token_urlsafe(18)


def reissued_ids(open_ids: Mapping[str, str]) -> ApprovalIds:
    """Approval ids for a run whose thread still waits on some approvals (a resume that
    answered only some): a call asked again keeps the id its client holds (``open_ids``,
    by call id), others get new ones."""
    kept = dict(open_ids)

    def approval_id(call_id: str, tool_name: str, arguments: dict[str, Any]) -> str:
        return kept.get(call_id) or new_approval_id()

    return approval_id


EditValidator = Callable[[dict[str, Any]], Any]
"""A tool's argument validator (``Tool.validate``): raises on arguments it refuses."""

EditRules = Mapping[str, "EditValidator | None"]
"""Per tool name: its validator where a human may edit its arguments, else None."""


@dataclass(slots=True)
class ApprovalClaim:
    """A decision a client sent for an approval id; ``call_id`` where the protocol names it."""

    approval_id: str
    decision: Decision | InputAnswer
    """An approval's decision, or the answer to a question the call asked (``inp_`` ids)."""
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class IssuedApproval:
    """An approval the server asked for: the call, and whose it is."""

    call_id: str
    """The call waiting on the approval."""
    tool_name: str
    """The tool it calls."""
    arguments: dict[str, Any]
    """The arguments it was issued for."""
    principal: str | None = None
    """Who the run that asked belongs to; only they may answer (None: no users)."""
    thread_id: str | None = None
    """The thread it was asked in; it is answered in that thread only."""
    request: InputRequest | None = None
    """Set for a question a running call asked (``InputRequested``) instead of an approval:
    the question, whose ``state`` stays with the server."""

    @property
    def owner(self) -> tuple[str, str | None]:
        """Whose share of a bounded ledger it counts against: its principal's, or, with no
        users to tell apart, its thread's (so one thread cannot push out the others')."""
        if self.principal is not None:
            return ("principal", self.principal)
        return ("thread", self.thread_id)


@dataclass(frozen=True, slots=True)
class Asked:
    """What a request's claims are checked against: who sent it, in which thread, the
    conversation it carries (the calls of its last assistant message are the ones a claim
    may answer) and which tools allow edits."""

    principal: str | None
    """The request's principal (None: the app has no users)."""
    thread_id: str | None
    """The thread the request runs in."""
    messages: Sequence[Message] = ()
    """The client's copy of the conversation (the memory and signed verifiers; the
    journal's verifier trusts its own history)."""
    toolbox: Toolbox | None = None
    """The tools the calls may be of: which allow edits, and the meta they fix."""
    edits: EditRules | None = None
    """Per tool: its validator where a human may edit its arguments, else None; None:
    taken from ``toolbox``."""

    def edit_rules(self) -> EditRules:
        if self.edits is not None:
            return self.edits
        return edit_rules(self.toolbox) if self.toolbox is not None else {}

    def fixed_meta(self, tool_name: str) -> dict[str, Any]:
        """The meta values the tool's blueprint fixes (the runtime fills them in)."""
        tool = self.toolbox.get(tool_name) if self.toolbox is not None else None
        return tool.fixed_meta() if tool is not None else {}


def edit_rules(tools: Iterable[Tool]) -> dict[str, EditValidator | None]:
    """Per tool: its validator where a human may edit its arguments, else None."""
    return {t.name: (t.validate if t.allow_edits else None) for t in tools}
