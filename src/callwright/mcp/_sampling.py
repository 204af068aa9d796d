"""An MCP server's sampling requests (``sampling/createMessage``), served with the model of
the run whose call the server is working on, when the server is trusted to
(``MCPServer(sampling=True)``; off by default).

Off, callwright does not declare the sampling capability: servers that honour it hide
the tools that need it (server-everything's ``trigger-sampling-request`` is not
listed), and one that asks anyway gets the SDK's error, "Sampling not supported".

On, a request is answered by the run's own model, bounded:

* **no tools**: the model is shown none (callwright declares no ``sampling.tools``; a
  request that offers tools is refused), and no conversation either: only the
  server's messages and system prompt, whatever its ``includeContext`` asks;
* **text only**: image and audio messages are refused;
* **a token cap**: the answer has at most ``min(maxTokens, Sampling.max_tokens)``
  tokens. Model adapters take no per-request limit, so the stream is cut after
  ``CHARS_PER_TOKEN`` characters a token (``stopReason: "maxTokens"``); a stop
  sequence cuts it too (``"stopSequence"``);
* **a request cap**: at most ``Sampling.max_requests`` per tool call;
* **counted**: the tokens go into the run's usage (``RunResult.usage``, and the
  run's ``Limits.max_tokens``), as a delegate's do; a stream cut before its end is
  counted as one request and its estimated output tokens.

The call itself went through the approval gate like any other; the server's questions
to the model are part of that call's work and, like its progress, are not shown to the
human one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import mcp_types as types

from ..context import ToolContext
from ..messages import AssistantMessage, Message, UserMessage
from ..models.base import ErrorPart, FinishPart, ModelRequest, TextPart
from ..usage import Usage

CHARS_PER_TOKEN = 4
"""Characters counted as one token where the model cannot be told a limit."""


@dataclass(frozen=True, slots=True)
class Sampling:
    """How much of the run's model an MCP server may use (``MCPServer(sampling=...)``)."""

    max_tokens: int = 1024
    """The most tokens one answer may have; a server's smaller ``maxTokens`` is honoured."""
    max_requests: int = 5
    """Sampling requests one tool call may make; more are refused."""


def refused(message: str) -> types.ErrorData:
    return types.ErrorData(code=types.INVALID_REQUEST, message=message)


async def sample(
    ctx: ToolContext[Any] | None,
    params: types.CreateMessageRequestParams,
    limits: Sampling,
) -> types.CreateMessageResult | types.ErrorData:
    """Answer one sampling request with the model of the run ``ctx`` belongs to."""
    scope = ctx.run if ctx is not None else None
    if ctx is None or scope is None:
        return refused("no tool call of this client is running to sample for")
    messages = _messages(params)
    if isinstance(messages, types.ErrorData):
        return messages
    model = scope.model
    request = ModelRequest(messages, params.system_prompt, "native", cancel=ctx.cancel)
    if "native" not in model.modes:
        from ..compose import solution_schema
        from ..toolbox import Toolbox

        request.mode = "structured"
        request.solution_schema = solution_schema([], Toolbox())
    cap = min(params.max_tokens, limits.max_tokens) * CHARS_PER_TOKEN
    text, stop, usage, error = await _stream(model.stream(request), cap, params.stop_sequences)
    scope.usage.add(usage)
    if error is not None:
        return refused(f"the model failed: {error}")
    return types.CreateMessageResult(
        role="assistant",
        content=types.TextContent(text=text),
        model=model.name,
        stop_reason=stop,
    )


def refusal(params: types.CreateMessageRequestParams) -> types.ErrorData | None:
    """Why a request is not served whatever the run (tools, images), or None."""
    messages = _messages(params)
    return messages if isinstance(messages, types.ErrorData) else None


def _messages(params: types.CreateMessageRequestParams) -> list[Message] | types.ErrorData:
    if params.tools:
        return refused("callwright offers no tools in sampling (it declared no sampling.tools)")
    out: list[Message] = []
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        if not all(isinstance(b, types.TextContent) for b in blocks):
            return refused("callwright samples text only (an image or audio message was sent)")
        text = "\n".join(b.text for b in blocks if isinstance(b, types.TextContent))
        out.append(UserMessage(text) if message.role == "user" else AssistantMessage(text))
    return out


async def _stream(
    events: Any, cap: int, stops: list[str] | None
) -> tuple[str, str, Usage, str | None]:
    """The answer's text (cut at ``cap`` characters or a stop sequence), why it stopped,
    what it cost, and the model's error if it failed."""
    text = ""
    finished: Usage | None = None
    stop = "endTurn"
    try:
        async for event in events:
            if isinstance(event, ErrorPart):
                return text, stop, finished or Usage(requests=1), event.message
            if isinstance(event, FinishPart):
                finished = event.usage
            elif isinstance(event, TextPart):
                text += event.delta
                cut = _cut(text, cap, stops or [])
                if cut is not None:
                    text, stop = cut
                    break
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()  # a cut stream stops generating
    if finished is None:
        finished = Usage(output_tokens=-(-len(text) // CHARS_PER_TOKEN), requests=1)
    return text, stop, finished, None


def _cut(text: str, cap: int, stops: list[str]) -> tuple[str, str] | None:
    """The text up to a stop sequence or the cap, and the reason; None to go on."""
    for stop in stops:
        if stop and stop in text:
            return text[: text.index(stop)], "stopSequence"
    if len(text) >= cap:
        return text[:cap], "maxTokens"
    return None
