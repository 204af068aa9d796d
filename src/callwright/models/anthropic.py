"""Anthropic's Messages API, streamed through the official ``anthropic`` SDK.

Content blocks arrive by index: ``text`` (text deltas), ``thinking`` (reasoning
deltas, when ``thinking_budget`` turns extended thinking on) and ``tool_use``
(start with id and name, then ``input_json_delta`` pieces). ``message_start``
and ``message_delta`` carry the usage. Native tool calling only: Claude has it
everywhere, so the structured mode would add nothing.

Known limit: the run's messages keep reasoning as text without Anthropic's
signature, so thinking blocks are not sent back in later turns; with extended
thinking and tool use across turns Anthropic may ask for them.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from ._retry import RetryPolicy, retrying
from .base import (
    ErrorPart,
    FinishPart,
    Mode,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    Usage,
)

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content-filter",
}


class AnthropicModel:
    """A Claude model. The key comes from ``api_key`` or ``ANTHROPIC_API_KEY``."""

    def __init__(
        self,
        model: str = "claude-sonnet-4-5",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_tokens: int = 4096,
        thinking_budget: int | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        client: Any = None,
        **settings: Any,
    ) -> None:
        self.model = model
        self.name = f"anthropic:{model}"
        self.modes: tuple[Mode, ...] = ("native",)
        self._api_key = api_key
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL")
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.settings = settings
        self._client = client

    def _get_client(self) -> Any:
        if self._client is None:
            from anthropic import AsyncAnthropic

            key = self._api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                raise ValueError("set ANTHROPIC_API_KEY or pass api_key=")
            self._client = AsyncAnthropic(
                api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
        return self._client

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API request body for one step."""
        system, messages = anthropic_messages(request.messages, request.instructions)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
            "stream": True,
            **self.settings,
        }
        if system:
            body["system"] = system
        if self.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        if request.tools:
            body["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description") or "",
                    "input_schema": t.get("parameters") or {"type": "object", "properties": {}},
                }
                for t in request.tools
            ]
            choice = request.tool_choice
            body["tool_choice"] = (
                {"type": "auto"}
                if choice == "auto"
                else {"type": "none"}
                if choice == "none"
                else {"type": "any"}
                if choice == "required"
                else {"type": "tool", "name": choice}
            )
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return retrying(lambda: self._attempt(request), request.cancel, self.retry)

    async def _attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            client = self._get_client()
        except Exception as exc:
            yield ErrorPart(f"cannot create the Anthropic client: {exc}", "configuration_error")
            return
        response = await client.messages.create(**self.params(request))
        decoder = EventDecoder()
        try:
            async for event in response:
                for part in decoder.event(event):
                    yield part
        finally:
            close = getattr(response, "close", None)
            if close is not None:
                await close()
        for part in decoder.finish():
            yield part


class EventDecoder:
    """Messages API stream events -> model events."""

    def __init__(self) -> None:
        self.blocks: dict[int, tuple[str, str | None]] = {}  # index -> (type, tool-use id)
        self.open_calls: list[str] = []
        self.usage = Usage(requests=1)
        self.stop_reason: str | None = None
        self.finished = False

    def event(self, event: Any) -> list[ModelEvent]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            usage = getattr(event.message, "usage", None)
            if usage is not None:
                self.usage.input_tokens = _input_tokens(usage)
                self.usage.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
            return []
        if kind == "content_block_start":
            block = event.content_block
            block_type = getattr(block, "type", "")
            if block_type == "tool_use":
                self.blocks[event.index] = ("tool_use", block.id)
                self.open_calls.append(block.id)
                out: list[ModelEvent] = [ToolCallStartPart(block.id, block.name)]
                initial = getattr(block, "input", None)
                if initial:  # some recordings carry the whole input up front
                    out.append(ToolCallDeltaPart(block.id, json.dumps(initial)))
                return out
            self.blocks[event.index] = (block_type, None)
            if block_type == "text" and getattr(block, "text", ""):
                return [TextPart(block.text)]
            if block_type == "thinking" and getattr(block, "thinking", ""):
                return [ReasoningPart(block.thinking)]
            return []
        if kind == "content_block_delta":
            delta = event.delta
            delta_type = getattr(delta, "type", "")
            if delta_type == "text_delta":
                return [TextPart(delta.text)] if delta.text else []
            if delta_type == "thinking_delta":
                return [ReasoningPart(delta.thinking)] if delta.thinking else []
            if delta_type == "input_json_delta":
                _, call_id = self.blocks.get(event.index, ("", None))
                if call_id is not None and delta.partial_json:
                    return [ToolCallDeltaPart(call_id, delta.partial_json)]
            return []  # signature and citation deltas have no place in the event stream
        if kind == "content_block_stop":
            block_type, call_id = self.blocks.get(event.index, ("", None))
            if block_type == "tool_use" and call_id is not None and call_id in self.open_calls:
                self.open_calls.remove(call_id)
                return [ToolCallEndPart(call_id)]
            return []
        if kind == "message_delta":
            reason = getattr(event.delta, "stop_reason", None)
            if reason:
                self.stop_reason = reason
            usage = getattr(event, "usage", None)
            if usage is not None:
                self.usage.output_tokens = int(getattr(usage, "output_tokens", 0) or 0)
                if getattr(usage, "input_tokens", None):
                    self.usage.input_tokens = _input_tokens(usage)
            return []
        return []

    def finish(self) -> list[ModelEvent]:
        out: list[ModelEvent] = [ToolCallEndPart(call_id) for call_id in self.open_calls]
        self.open_calls.clear()
        reason = STOP_REASONS.get(self.stop_reason or "end_turn", "other")
        out.append(FinishPart(reason, self.usage))
        return out


def _input_tokens(usage: Any) -> int:
    """Input tokens including the cached ones, which Anthropic counts apart."""
    total = int(getattr(usage, "input_tokens", 0) or 0)
    for key in ("cache_creation_input_tokens", "cache_read_input_tokens"):
        total += int(getattr(usage, key, 0) or 0)
    return total


def anthropic_messages(
    messages: list[Message], instructions: str | None
) -> tuple[str, list[dict[str, Any]]]:
    """The system text and the alternating user/assistant turns Anthropic expects.

    Tool results become ``tool_result`` blocks of a user turn; consecutive turns
    of one role are merged into one.
    """
    system = [instructions] if instructions else []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if isinstance(m, SystemMessage):
            system.append(m.content)
        elif isinstance(m, UserMessage):
            add("user", [{"type": "text", "text": m.content}])
        elif isinstance(m, AssistantMessage):
            blocks: list[dict[str, Any]] = []
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            ]
            add("assistant", blocks)
        elif isinstance(m, ToolResultMessage):
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": m.call_id,
                "content": m.content,
            }
            if m.is_error:
                block["is_error"] = True
            add("user", [block])
    return "\n\n".join(system), out
