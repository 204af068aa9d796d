"""The agent of the payments benchmark (``bench/payments.py``), for ``callwright serve
--agent bench/_payments_app.py:make_agent``: its ``charge`` tool calls a payments
service (``CALLWRIGHT_PAYMENTS_URL``) with the call's idempotency key, and has a
``reconcile`` hook that asks the service about a key when
``CALLWRIGHT_PAYMENTS_RECONCILE`` is ``1``."""

from __future__ import annotations

import os
from typing import Any

import httpx

from callwright import Agent, ToolContext, tool
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call

URL_ENV = "CALLWRIGHT_PAYMENTS_URL"
RECONCILE_ENV = "CALLWRIGHT_PAYMENTS_RECONCILE"


def make_agent() -> Agent:
    """``charge <order> <amount>`` charges once; the model then reports the result."""
    url = os.environ[URL_ENV]

    async def reconcile(key: str, arguments: dict[str, Any]) -> Any:
        async with httpx.AsyncClient() as http:
            response = await http.get(f"{url}/charges/{key}", timeout=10)
        if response.status_code == 404:  # the service never took this charge
            return {"status": "not charged", "order": arguments["order"]}
        response.raise_for_status()
        return response.json()

    @tool(reconcile=reconcile if os.environ.get(RECONCILE_ENV) == "1" else None)
    async def charge(order: str, amount: int, ctx: ToolContext) -> Any:
        """Charge the customer for an order."""
        async with httpx.AsyncClient() as http:
            response = await http.post(
                f"{url}/charges",
                json={"order": order, "amount": amount},
                headers={"Idempotency-Key": ctx.idempotency_key},
                timeout=120,
            )
        response.raise_for_status()
        return response.json()

    def script(request: ModelRequest) -> list[Any]:
        messages = request.messages
        last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
        words = messages[last_user].content.split()  # type: ignore[union-attr]
        results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
        if results:
            return ["Done: " + "; ".join(r.content for r in results)]
        order, amount = words[1], int(words[2])
        return [call("charge", {"order": order, "amount": amount}, id=f"call-{order}")]

    return Agent(ScriptedModel(script, record=False), [charge])
