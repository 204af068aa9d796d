"""The agent ``callwright run --agent tests/mcp/terminal_agent.py:agent --mcp ...`` runs in
tests/mcp/test_cli.py: its scripted model calls server-everything's
``trigger-elicitation-request`` (or the tool named in ``ASK_TOOL``, with the JSON
arguments of ``ASK_ARGS``) and then says ``Done: <what the tool returned>``."""

from __future__ import annotations

import json
import os
from typing import Any

from callwright import Agent
from callwright.messages import ToolResultMessage, UserMessage
from callwright.models import ModelRequest, ScriptedModel, call


def script(request: ModelRequest) -> list[Any]:
    messages = request.messages
    last_user = max(i for i, m in enumerate(messages) if isinstance(m, UserMessage))
    results = [m for m in messages[last_user + 1 :] if isinstance(m, ToolResultMessage)]
    if results:
        return [f"Done: {results[-1].content}"]
    tool = os.environ.get("ASK_TOOL", "trigger-elicitation-request")
    return [call(tool, json.loads(os.environ.get("ASK_ARGS", "{}")))]


def agent() -> Agent:
    return Agent(ScriptedModel(script))
