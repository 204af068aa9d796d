"""The two wire protocols, each an encoder of the one canonical event stream.

``agui`` speaks AG-UI (``RunAgentInput`` in, AG-UI SSE events out) and ``aisdk``
the Vercel AI SDK UI message stream (``useChat``'s body in, UI message chunks
out). Both encoders are built on ``_base.SSEEncoder`` (framing, response headers,
dispatch, progress documents); each supplies its handlers. Neither needs a web
framework; ``callwright.server`` serves both, with each encoder's ``headers`` and
``close()`` trailer.
"""

# The approval records and the ledger live in callwright.approvals; imported from here
# before it existed.
from ..approvals import (
    ApprovalClaim,
    ApprovalLedger,
    IssuedApproval,
    MemoryApprovalLedger,
    resolve_claims,
)
from ._common import RunInput, WireError
from ._files import FileLimits
from .agui import AGUIEncoder
from .aisdk import AISDKEncoder

__all__ = [
    "AGUIEncoder",
    "AISDKEncoder",
    "ApprovalClaim",
    "ApprovalLedger",
    "FileLimits",
    "IssuedApproval",
    "MemoryApprovalLedger",
    "RunInput",
    "WireError",
    "resolve_claims",
]
