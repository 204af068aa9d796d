"""Any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio).

Chat Completions with streaming through the official ``openai`` SDK. Two modes:
``native`` sends tools as function definitions and merges the streamed
tool-call chunks by index; ``structured`` sends the combined solution schema as
``response_format`` (for servers without tool calling) and decodes the answer
with ``SolutionStream``. ``mode=`` forces one; otherwise the agent prefers native.

Servers differ in small ways this adapter absorbs: some repeat the call id and
name in every chunk, some omit the index, some stream reasoning as
``reasoning_content`` (llama.cpp, DeepSeek) or ``reasoning`` (vLLM, OpenRouter),
some send usage only when asked with ``stream_options``.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from ..messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from ._retry import RetryPolicy, retrying
from ._solution import SolutionStream, bound_schema, conversation, fit_schema, system_prompt
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

FINISH_REASONS = {
    "stop": "stop",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "length": "length",
    "content_filter": "content-filter",
}


class OpenAIModel:
    """An OpenAI-compatible chat model.

    ``base_url`` (or ``OPENAI_BASE_URL``) points at any compatible server; the key
    comes from ``api_key`` or ``OPENAI_API_KEY`` (a local server needs none).
    ``settings`` go into every request as they are (temperature, max_tokens, seed...).
    ``max_string`` bounds the structured-mode schema (``maxLength`` on free strings,
    one call per step, empty ``meta``) for small models that ramble.
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        mode: Mode | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        client: Any = None,
        max_string: int | None = None,
        **settings: Any,
    ) -> None:
        self.model = model
        self.max_string = max_string
        self.name = f"openai:{model}"
        self.modes: tuple[Mode, ...] = (mode,) if mode else ("native", "structured")
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL")
        self._api_key = api_key
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.settings = settings
        self._client = client

    def _get_client(self) -> Any:
        if self._client is None:
            from openai import AsyncOpenAI

            key = self._api_key or os.environ.get("OPENAI_API_KEY")
            if not key and self.base_url:
                key = "not-needed"  # local servers accept anything
            self._client = AsyncOpenAI(
                api_key=key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
        return self._client

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Chat Completions request body for one step."""
        body: dict[str, Any] = {
            "model": self.model,
            "stream": True,
            "stream_options": {"include_usage": True},
            **self.settings,
        }
        if request.mode == "structured":
            schema = fit_schema(request.solution_schema or {}, request.tool_choice)
            if self.max_string is not None:
                schema = bound_schema(
                    schema, max_calls=1, max_string=self.max_string, max_output=self.max_string * 4
                )
            messages: list[dict[str, Any]] = [
                {"role": "system", "content": system_prompt(request.instructions, schema)}
            ]
            messages += conversation(request.messages)
            body["messages"] = messages
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "solution", "schema": schema, "strict": False},
            }
            return body
        body["messages"] = chat_messages(request.messages, request.instructions)
        if request.tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description") or "",
                        "parameters": t.get("parameters") or {"type": "object", "properties": {}},
                    },
                }
                for t in request.tools
            ]
            choice = request.tool_choice
            body["tool_choice"] = (
                choice
                if choice in ("auto", "none", "required")
                else {"type": "function", "function": {"name": choice}}
            )
        return body

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return retrying(lambda: self._attempt(request), request.cancel, self.retry)

    async def _attempt(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        try:
            client = self._get_client()
        except Exception as exc:  # no key: the SDK refuses to build a client
            yield ErrorPart(f"cannot create the OpenAI client: {exc}", "configuration_error")
            return
        response = await client.chat.completions.create(**self.params(request))
        decoder = _ChunkDecoder(request)
        try:
            async for chunk in response:
                for event in decoder.chunk(chunk):
                    yield event
        finally:
            close = getattr(response, "close", None)
            if close is not None:
                await close()
        for event in decoder.finish():
            yield event


@dataclass(slots=True)
class _OpenCall:
    call_id: str | None = None
    name: str = ""
    started: bool = False
    waiting: list[str] = field(default_factory=list)  # arguments that came before the name


class _ChunkDecoder:
    """Chat Completions chunks -> model events, merging tool-call pieces by index."""

    def __init__(self, request: ModelRequest) -> None:
        self.structured = request.mode == "structured"
        self.solution = SolutionStream(structured_output=request.output_schema is not None)
        self.calls: dict[int, _OpenCall] = {}
        self.order: list[int] = []
        self.usage = Usage(requests=1)
        self.finish_reason: str | None = None
        self._fallback_id = 0

    def chunk(self, chunk: Any) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = Usage(
                int(getattr(usage, "prompt_tokens", 0) or 0),
                int(getattr(usage, "completion_tokens", 0) or 0),
                1,
            )
        for choice in getattr(chunk, "choices", None) or []:
            if getattr(choice, "index", 0) not in (0, None):
                continue
            delta = choice.delta
            if delta is not None:
                reasoning = _reasoning(delta)
                if reasoning:
                    out.append(ReasoningPart(reasoning))
                if delta.content:
                    if self.structured:
                        out += self.solution.feed(delta.content)
                    else:
                        out.append(TextPart(delta.content))
                for piece in delta.tool_calls or []:
                    out += self._tool_piece(piece)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return out

    def _tool_piece(self, piece: Any) -> list[ModelEvent]:
        index = piece.index
        piece_id = piece.id or None
        if index is None:  # some servers leave it out: a new id means a new call
            known = {c.call_id for c in self.calls.values()}
            if self.order and (piece_id is None or piece_id in known):
                index = self.order[-1]
            else:
                index = len(self.order)
        call = self.calls.get(index)
        if call is None:
            call = self.calls[index] = _OpenCall()
            self.order.append(index)
        if call.call_id is None and piece_id:
            call.call_id = piece_id
        function = piece.function
        out: list[ModelEvent] = []
        if function is not None and function.name and not call.started:
            call.name = function.name  # servers that repeat the name: only the first counts
            call.started = True
            if call.call_id is None:
                self._fallback_id += 1
                call.call_id = f"call_{index}_{self._fallback_id}"
            out.append(ToolCallStartPart(call.call_id, call.name))
            if call.waiting:
                out.append(ToolCallDeltaPart(call.call_id, "".join(call.waiting)))
                call.waiting.clear()
        arguments = function.arguments if function is not None else None
        if arguments:
            if call.started and call.call_id is not None:
                out.append(ToolCallDeltaPart(call.call_id, arguments))
            else:
                call.waiting.append(arguments)
        return out

    def finish(self) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        if self.structured:
            out += self.solution.close()
        for index in self.order:
            call = self.calls[index]
            if call.started and call.call_id is not None:
                out.append(ToolCallEndPart(call.call_id))
        reason = FINISH_REASONS.get(self.finish_reason or "stop", "other")
        made_calls = any(c.started for c in self.calls.values()) or self.solution.calls_made
        if made_calls and reason == "stop":
            reason = "tool-calls"
        if self.structured and reason == "tool-calls" and not self.solution.calls_made:
            reason = "stop"
        out.append(FinishPart(reason, self.usage))
        return out


def _reasoning(delta: Any) -> str | None:
    extra = getattr(delta, "model_extra", None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = getattr(delta, key, None) or extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def chat_messages(messages: list[Message], instructions: str | None) -> list[dict[str, Any]]:
    """The run's messages in Chat Completions shape (native mode)."""
    out: list[dict[str, Any]] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": m.content})
        elif isinstance(m, AssistantMessage):
            message: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                message["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {
                            "name": c.name,
                            "arguments": json.dumps(c.arguments, ensure_ascii=False),
                        },
                    }
                    for c in m.tool_calls
                ]
            out.append(message)
        elif isinstance(m, ToolResultMessage):
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": m.content})
    return out
