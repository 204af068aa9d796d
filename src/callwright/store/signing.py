"""Stateless approvals: an HMAC over what was asked, verified on the way back.

For deployments without a database. The signature binds the approval id, the
call id, the tool name, the canonical arguments, and the principal and thread
the approval was asked for, so a client cannot approve another call, change the
arguments, or answer an approval asked of someone else or in another thread.
The server (``create_app(signer=...)``) puts it inside the approval id itself
(``apr_<nonce>.<signature>``), which every client echoes unchanged, so no
protocol field is needed. The trade-off: with no
state there is no replay protection (the same signed approval can be presented
twice) and no "still pending" check; use the SQLite journal where that matters.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

from ..call import strip_meta
from .base import Rejected, canonical_json


class ApprovalSigner:
    def __init__(self, secret: bytes | str) -> None:
        if isinstance(secret, str):
            secret = secret.encode()
        if len(secret) < 16:
            raise ValueError("use a secret of at least 16 bytes")
        self._secret = secret

    def sign(
        self,
        approval_id: str,
        call_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        principal: str | None = None,
        thread_id: str | None = None,
    ) -> str:
        fields = [approval_id, call_id, tool_name, arguments, principal, thread_id]
        message = canonical_json(fields).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def verify(
        self,
        signature: str,
        approval_id: str,
        call_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        principal: str | None = None,
        thread_id: str | None = None,
    ) -> None:
        """Raises ``Rejected`` unless the signature is ours for exactly this call."""
        expected = self.sign(
            approval_id, call_id, tool_name, arguments, principal=principal, thread_id=thread_id
        )
        if not hmac.compare_digest(expected, signature or ""):
            raise Rejected(
                f"approval {approval_id!r} does not carry a valid signature for this call",
                "bad_signature",
                403,
            )

    def new_id(
        self,
        call_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        principal: str | None = None,
        thread_id: str | None = None,
    ) -> str:
        """A self-authenticating approval id for this exact call, asked of ``principal``
        in ``thread_id``."""
        nonce = secrets.token_urlsafe(12)
        signature = self.sign(
            nonce,
            call_id,
            tool_name,
            strip_meta(arguments),
            principal=principal,
            thread_id=thread_id,
        )
        return f"apr_{nonce}.{signature}"

    def check_id(
        self,
        approval_id: str,
        call_id: str,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        principal: str | None = None,
        thread_id: str | None = None,
    ) -> bool:
        """Whether ``approval_id`` was issued by ``new_id`` for exactly this call, principal
        and thread."""
        body = approval_id.removeprefix("apr_")
        nonce, _, signature = body.partition(".")
        expected = self.sign(
            nonce,
            call_id,
            tool_name,
            strip_meta(arguments),
            principal=principal,
            thread_id=thread_id,
        )
        return bool(signature) and hmac.compare_digest(expected, signature)
