"""The two wire protocols, each an encoder of the one canonical event stream.

``agui`` speaks AG-UI (``RunAgentInput`` in, AG-UI SSE events out) and ``aisdk``
the Vercel AI SDK UI message stream (``useChat``'s body in, UI message chunks
out). Both encoders are built on ``_base.SSEEncoder`` (framing, response headers,
dispatch, progress documents); each supplies its handlers. Neither needs a web
framework; ``callwright.server`` serves both, with each encoder's ``headers`` and
``close()`` trailer.
"""

from ._common import (
    ApprovalClaim,
    ApprovalLedger,
    IssuedApproval,
    MemoryApprovalLedger,
    RunInput,
    WireError,
    resolve_claims,
)
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
