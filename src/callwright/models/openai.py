"""Any OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp's server, LM Studio).

Chat Completions with streaming through the official ``openai`` SDK: ``openai-chat:<model>``,
``openai:<model>`` at a base URL other than OpenAI's own (most compatible servers have
no ``/v1/responses``), and every named provider (``groq:<model>`` ...). OpenAI's own API
defaults to the Responses adapter (``openai_responses``). Two modes:
``native`` sends tools as function definitions and merges the streamed
tool-call chunks by index; ``structured`` sends the combined solution schema as
``response_format`` (for servers without tool calling) and decodes the answer
with ``SolutionStream``. ``mode=`` forces one; otherwise the agent prefers native.

Servers differ in small ways this adapter absorbs: some repeat the call id and
name in every chunk, some omit the index, some stream reasoning as
``reasoning_content`` (llama.cpp, DeepSeek) or ``reasoning`` (vLLM, OpenRouter),
some send usage only when asked with ``stream_options``. Gemini's OpenAI-compatible
endpoint puts a call's thought signature in ``extra_content`` on the tool call: the
decoder keeps each call's ``extra_content`` (``provider_blocks["openai-compatible"]``)
and the call goes back with it, as Gemini 3 requires.

A failed call (it raised, was not found, had invalid arguments, timed out, was
cancelled, denied or interrupted) reaches the model as a tool message whose content
is ``ERROR_PREFIX`` followed by the result's text, e.g. ``Error: no file named 'x'``:
Chat Completions has no error flag on tool messages, and one prefix for every kind
of failure is what the model can learn to read (openai-agents does the same).

Files on a user message go before its text, as content parts: an image as an
``image_url`` part (its https URL, or its bytes as a ``data:`` URL), a PDF as a ``file``
part with ``file_data`` (a ``data:`` URL, as OpenAI's guide writes it) and the filename,
plain text as a text part headed by the file's name. Chat Completions takes no PDF or
other document by URL: such a file fails the step (``unsupported_file``) rather than
reach the model as nothing. Structured mode sends the same parts.

A tool's files cannot go in its tool message (Chat Completions takes text only there),
so the images and PDFs of a step's results follow its tool messages as one user turn
(``TOOL_FILES_NOTE`` and the parts); a file with no part is a line of the result's text.

The ``openai`` package is the optional extra ``callwright[openai]``: this module imports
it for the type checker only and inside ``_make_client`` (see ``_provider``), so it
imports without it; ``OpenAIModel()`` then raises an ``ImportError`` naming the extra.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, cast
from urllib.parse import urlsplit

from .._tool_files import with_stand_ins
from ..messages import (
    AssistantMessage,
    FilePart,
    Message,
    SystemMessage,
    ToolCallPart,
    ToolResultMessage,
    UserMessage,
)
from ..usage import Usage
from ._provider import (
    Provider,
    ProviderModel,
    ToolDefinition,
    UnsupportedFile,
    file_text,
    sdk_arguments,
    shown_filename,
)
from ._retry import RetryPolicy
from ._solution import SolutionStream, bound_schema, conversation, fit_schema, system_prompt
from .base import (
    FinishPart,
    Mode,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    ToolChoice,
)

EventT = TypeVar("EventT")
"""The stream item of the API an adapter speaks."""

if TYPE_CHECKING:
    from openai import AsyncOpenAI, AsyncStream
    from openai.types import CompletionUsage
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionChunk,
        ChatCompletionContentPartParam,
        ChatCompletionMessageParam,
        ChatCompletionMessageToolCallParam,
        ChatCompletionToolChoiceOptionParam,
        ChatCompletionToolParam,
    )
    from openai.types.chat.chat_completion_chunk import ChoiceDelta, ChoiceDeltaToolCall

FINISH_REASONS = {
    "stop": "stop",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
    "length": "length",
    "content_filter": "content-filter",
}

EXTRAS = "openai-compatible"
"""The ``provider_blocks`` key of the ``extra_content`` a server put on tool calls."""

ERROR_PREFIX = "Error: "
"""What starts the content of a failed call's tool message (native mode)."""

OPENAI = Provider(
    "openai", "OpenAI", "OPENAI_API_KEY", "OPENAI_BASE_URL", keyless_with_base_url=True
)


OPENAI_HOSTS = frozenset({"api.openai.com"})
"""The hosts that serve the Responses API for ``openai:<model>``."""


def serves_responses(base_url: str | None) -> bool:
    """Whether ``openai:<model>`` at ``base_url`` means the Responses API: OpenAI's own API
    (no base URL, or ``api.openai.com``) does; any other server is taken to be Chat
    Completions only, as llama.cpp's server and most local servers are."""
    if not base_url:
        return True
    return (urlsplit(base_url).hostname or "") in OPENAI_HOSTS


class OpenAIClientModel(ProviderModel["AsyncOpenAI", EventT]):
    """What the two OpenAI APIs' adapters share: the constructor, the client and the
    structured-mode bound. ``OpenAIModel`` speaks Chat Completions through it,
    ``OpenAIResponsesModel`` the Responses API."""

    provider = OPENAI
    max_string: int | None
    """Bounds free strings in the structured-mode schema; ``None`` leaves it as it is."""

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        mode: Mode | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        client: AsyncOpenAI | None = None,
        max_string: int | None = None,
        provider: Provider | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            model,
            modes=(mode,) if mode else ("native", "structured"),
            api_key=api_key,
            base_url=base_url,
            retry=retry,
            timeout=timeout,
            client=client,
            settings=settings,
            provider=provider,
        )
        self.max_string = max_string

    def _make_client(self, api_key: str, base_url: str | None, timeout: float) -> AsyncOpenAI:
        from openai import AsyncOpenAI

        return AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)


class OpenAIModel(OpenAIClientModel["ChatCompletionChunk"]):
    """An OpenAI-compatible chat model.

    ``base_url`` (or ``OPENAI_BASE_URL``) points at any compatible server; the key
    comes from ``api_key`` or ``OPENAI_API_KEY`` (a server at a ``base_url`` needs none).
    ``settings`` go into every request as they are (temperature, max_tokens, seed...);
    a run's ``ModelSettings`` override them (``max_tokens`` becomes
    ``max_completion_tokens`` on OpenAI's own API).
    ``provider`` is a named OpenAI-compatible provider (``PROVIDERS["groq"]`` ...): its
    base URL, key variable and the parameters it refuses. ``max_string`` bounds the
    structured-mode schema (``maxLength`` on free strings, one call per step, empty
    ``meta``) for small models that ramble.
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
        client: AsyncOpenAI | None = None,
        max_string: int | None = None,
        provider: Provider | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            mode=mode,
            retry=retry,
            timeout=timeout,
            client=client,
            max_string=max_string,
            provider=provider,
            **settings,
        )
        # OpenAI's own API refuses max_tokens for reasoning models; other servers may not
        # know its successor
        own_api = self.provider is OPENAI and serves_responses(self.base_url)
        self.setting_params = {
            "temperature": "temperature",
            "max_tokens": "max_completion_tokens" if own_api else "max_tokens",
            "top_p": "top_p",
            "parallel_tool_calls": "parallel_tool_calls",
            "reasoning_effort": "reasoning_effort",
        }

    async def _open(
        self, client: AsyncOpenAI, request: ModelRequest
    ) -> AsyncStream[ChatCompletionChunk]:
        # the body is a dict (it carries the user's settings), so the SDK's overloads cannot
        # tell from it that ``stream`` is on; the annotation states what ``stream=True`` returns
        response: AsyncStream[ChatCompletionChunk] = await client.chat.completions.create(
            **sdk_arguments(client.chat.completions.create, self.params(request))
        )
        return response

    def _decoder(self, request: ModelRequest) -> _ChunkDecoder:
        return _ChunkDecoder(request)

    def _tool(self, definition: ToolDefinition) -> ChatCompletionToolParam:
        return {
            "type": "function",
            "function": {
                "name": definition.name,
                "description": definition.description,
                "parameters": definition.parameters,
            },
        }

    def _tool_choice(self, choice: ToolChoice) -> ChatCompletionToolChoiceOptionParam:
        match choice:
            case "auto" | "none" | "required":
                return choice
            case name:
                return {"type": "function", "function": {"name": name}}

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
            system = {"role": "system", "content": system_prompt(request.instructions, schema)}
            body["messages"] = [system, *structured_conversation(request.messages)]
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "solution", "schema": schema, "strict": False},
            }
        else:
            body["messages"] = chat_messages(request.messages, request.instructions)
            body.update(self.tool_params(request))
        body.update(self.setting_values(request))
        for name in self.provider.rejects:
            body.pop(name, None)
        return body


@dataclass(slots=True)
class _OpenCall:
    call_id: str | None = None
    name: str = ""
    started: bool = False
    waiting: list[str] = field(default_factory=list)
    """Argument pieces that came before the name."""
    extra: dict[str, Any] | None = None
    """The call's ``extra_content`` (Gemini's thought signature), to send back with it."""


class _ChunkDecoder:
    """Chat Completions chunks -> model events, merging tool-call pieces by index.

    The SDK builds chunks without validating them, so a field its types declare may
    still be missing (``None``) when a compatible server leaves it out; the local
    annotations below widen those types where servers are known to.
    """

    def __init__(self, request: ModelRequest) -> None:
        self.structured = request.mode == "structured"
        self.solution = SolutionStream(structured_output=request.output_schema is not None)
        self.calls: dict[int, _OpenCall] = {}
        self.order: list[int] = []
        self.usage = Usage(requests=1)
        self.finish_reason: str | None = None
        self._fallback_id = 0

    def feed(self, chunk: ChatCompletionChunk) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        usage: CompletionUsage | None = chunk.usage
        if usage is not None:
            self.usage = Usage(usage.prompt_tokens or 0, usage.completion_tokens or 0, 1)
            cached = usage.prompt_tokens_details
            self.usage.cached_input_tokens = (cached.cached_tokens or 0) if cached else 0
            details = usage.completion_tokens_details
            self.usage.reasoning_tokens = (details.reasoning_tokens or 0) if details else 0
        for choice in chunk.choices or ():
            index: int | None = choice.index
            if index not in (0, None):
                continue
            delta: ChoiceDelta | None = choice.delta
            if delta is not None:
                out += self._delta(delta)
            if choice.finish_reason:
                self.finish_reason = choice.finish_reason
        return out

    def _delta(self, delta: ChoiceDelta) -> list[ModelEvent]:
        out: list[ModelEvent] = []
        reasoning = _reasoning(delta)
        if reasoning:
            out.append(ReasoningPart(reasoning))
        if delta.content:
            if self.structured:
                out += self.solution.feed(delta.content)
            else:
                out.append(TextPart(delta.content))
        for piece in delta.tool_calls or ():
            out += self._tool_piece(piece)
        return out

    def _tool_piece(self, piece: ChoiceDeltaToolCall) -> list[ModelEvent]:
        index: int | None = piece.index
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
        extra = (piece.model_extra or {}).get("extra_content")
        if isinstance(extra, dict):
            call.extra = extra
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
        extras = [
            {"id": c.call_id, "extra_content": c.extra}
            for c in self.calls.values()
            if c.started and c.extra is not None
        ]
        out.append(FinishPart(reason, self.usage, {EXTRAS: extras} if extras else {}))
        return out


def _reasoning(delta: ChoiceDelta) -> str | None:
    """Reasoning text, which the Chat Completions types do not declare: compatible servers
    send it as ``reasoning_content`` (llama.cpp, DeepSeek) or ``reasoning`` (vLLM,
    OpenRouter), and the SDK keeps undeclared fields in ``model_extra``."""
    extra = delta.model_extra or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def chat_messages(
    messages: list[Message], instructions: str | None
) -> list[ChatCompletionMessageParam]:
    """The run's messages in Chat Completions shape (native mode)."""
    out: list[ChatCompletionMessageParam] = []
    if instructions:
        out.append({"role": "system", "content": instructions})
    shown: list[ChatCompletionContentPartParam] = []  # tool files, after the tool messages
    for m in messages:
        if shown and not isinstance(m, ToolResultMessage):
            out.append(tool_files_message(shown))
            shown = []
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": user_content(m)})
        elif isinstance(m, AssistantMessage):
            message: ChatCompletionAssistantMessageParam = {
                "role": "assistant",
                "content": m.text or None,
            }
            if m.tool_calls:
                extras = {
                    b["id"]: b.get("extra_content")
                    for b in m.provider_blocks.get(EXTRAS, ())
                    if isinstance(b.get("id"), str)
                }
                message["tool_calls"] = [tool_call_param(c, extras.get(c.id)) for c in m.tool_calls]
            out.append(message)
        elif isinstance(m, ToolResultMessage):
            parts, missing = tool_file_parts(m.files)
            text = with_stand_ins(tool_text(m), missing)
            out.append({"role": "tool", "tool_call_id": m.call_id, "content": text})
            shown += parts
    if shown:
        out.append(tool_files_message(shown))
    return out


TOOL_FILES_NOTE = "The files the tools returned above:"
"""The text of the user message that carries tool results' files to Chat Completions,
whose tool messages take text only."""


def tool_files_message(parts: list[ChatCompletionContentPartParam]) -> ChatCompletionMessageParam:
    """The user turn after a step's tool messages that shows the model their files."""
    return {"role": "user", "content": [{"type": "text", "text": TOOL_FILES_NOTE}, *parts]}


def tool_file_parts(
    files: list[FilePart],
) -> tuple[list[ChatCompletionContentPartParam], list[FilePart]]:
    """The content parts of a tool's files, and the files that have none (told as text)."""
    parts: list[ChatCompletionContentPartParam] = []
    missing: list[FilePart] = []
    for f in files:
        try:
            parts.append(file_part(f))
        except UnsupportedFile:
            missing.append(f)
    return parts, missing


def tool_call_param(call: ToolCallPart, extra: object) -> ChatCompletionMessageToolCallParam:
    """One call of an assistant message, with the ``extra_content`` the server gave it."""
    param: ChatCompletionMessageToolCallParam = {
        "id": call.id,
        "type": "function",
        "function": {
            "name": call.name,
            "arguments": json.dumps(call.arguments, ensure_ascii=False),
        },
    }
    if not isinstance(extra, dict):
        return param
    # a field the SDK's types do not declare; the SDK sends the dict as it is
    return cast("ChatCompletionMessageToolCallParam", {**param, "extra_content": extra})


def tool_text(result: ToolResultMessage) -> str:
    """A tool message's content: an error result is marked with ``ERROR_PREFIX``."""
    return ERROR_PREFIX + result.content if result.is_error else result.content


def user_content(message: UserMessage) -> str | list[ChatCompletionContentPartParam]:
    """A user message's content: its text alone, or its files' parts and then its text."""
    if not message.files:
        return message.content
    parts = [file_part(f) for f in message.files]
    if message.content:
        parts.append({"type": "text", "text": message.content})
    return parts


def file_part(part: FilePart) -> ChatCompletionContentPartParam:
    """One file as a Chat Completions content part (an ``UnsupportedFile`` when there is
    no such part for it)."""
    if part.top_type == "image":
        return {"type": "image_url", "image_url": {"url": part.data_url()}}
    if part.data is not None and part.media_type == "application/pdf":
        filename = shown_filename(part) or "document.pdf"
        return {"type": "file", "file": {"filename": filename, "file_data": part.data_url()}}
    if part.data is not None and part.top_type == "text":
        return {"type": "text", "text": file_text(part)}
    how = "by URL" if part.url is not None else "inline"
    raise UnsupportedFile(
        f"OpenAI Chat Completions cannot take a {part.media_type or 'file'} {how} "
        "(it takes images, PDFs as data and plain text)"
    )


def structured_conversation(
    messages: list[Message], content: Callable[[UserMessage], object] | None = None
) -> list[dict[str, Any]]:
    """``conversation`` (the structured-mode turns), with each user message that carries
    files as a turn of content parts (``content`` makes them: Chat Completions' parts
    unless another API's are asked for). ``conversation`` flushes pending tool results at
    every user message, so cutting the history there changes nothing else."""
    parts = content or user_content
    out: list[dict[str, Any]] = []
    start = 0
    for index, m in enumerate(messages):
        if isinstance(m, UserMessage) and m.files:
            out += conversation(messages[start:index])
            out.append({"role": "user", "content": parts(m)})
            start = index + 1
    out += conversation(messages[start:])
    return out
