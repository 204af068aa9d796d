"""Google's Gemini, streamed through the official ``google-genai`` SDK.

One request per step through ``client.aio.models.generate_content_stream``: each streamed
``GenerateContentResponse`` carries whole parts. Text parts are text deltas, thought
parts (``thought: true``, sent when ``include_thoughts`` asks for thought summaries) are
reasoning deltas, and a function call arrives whole, never as argument pieces, so it
becomes a start, one delta with all of its arguments and an end. Several calls in one
turn are parallel calls. The usage of the last chunk that has one is the turn's.

Gemini 3 signs its thinking: a ``thoughtSignature`` on a function call part (the first
of parallel calls), and on the last part of a turn without calls. A request whose
history lacks the signature of a call made in the current turn fails, so the decoder
keeps every signature it sees, with what it was attached to, on the ``FinishPart``;
the run keeps them on the assistant message (``provider_blocks["gemini"]``, journal
included) and the request builder puts each back on the same part. The SDK decodes the
base64 of a signature to bytes and encodes them again when it sends them (in the
URL-safe alphabet, which the API accepts), so the bytes go back exactly as they came.
A turn Gemini made keeps the key even with no signature; calls in a turn without it
(another model's, or a history written by hand) get the placeholder signature Google
documents for such histories on their first call, so Gemini 3 accepts them.

A failed call's ``functionResponse.response`` holds ``{"error": ...}`` where a result
holds ``{"output": ...}``, the keys Gemini documents for the two. Gemini gives calls no
id everywhere: a call without one gets ours, sent back on the call and its response.

Files on a user message go before its text: images, audio, video and PDFs inline as
``inline_data``, or by URL as ``file_data`` (an https URL or a Files API URI the API
fetches itself), and plain text as a text part headed by the file's name.

A tool's images, PDFs and plain text go inline in its ``functionResponse``'s own
``parts`` (multimodal function responses, Gemini 3); a file by URL (the Gemini API
takes no ``file_data`` there) or of another type is a line of the response's output.

The key comes from ``api_key``, else ``GOOGLE_API_KEY``, else ``GEMINI_API_KEY`` (the
SDK's own order). With ``GOOGLE_GENAI_USE_VERTEXAI=true`` (or ``vertexai=True``) the
SDK reaches Vertex AI with the project, location and credentials it finds itself.

The ``google-genai`` package is the optional extra ``callwright[gemini]``: this module
imports it for the type checker only and where a request is made, so it imports
without it; ``GeminiModel()`` then raises an ``ImportError`` naming the extra.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigurationError, MissingAPIKey
from .._tool_files import with_stand_ins
from ..messages import (
    AssistantMessage,
    FilePart,
    Message,
    SystemMessage,
    ToolResultMessage,
    UserMessage,
)
from ..usage import Usage
from ._provider import Provider, ProviderModel, ToolDefinition, UnsupportedFile, add_turn, file_text
from ._retry import RETRY_STATUS, Failure, RetryPolicy, classify, retry_after_seconds, retrying
from ._settings import ModelSettings
from .base import (
    ErrorPart,
    FinishPart,
    ModelEvent,
    ModelRequest,
    ReasoningPart,
    TextPart,
    ToolCallDeltaPart,
    ToolCallEndPart,
    ToolCallStartPart,
    ToolChoice,
)

if TYPE_CHECKING:
    from google.genai import Client
    from google.genai.types import (
        Content,
        FunctionCall,
        FunctionDeclaration,
        FunctionResponsePart,
        GenerateContentConfig,
        GenerateContentResponse,
        GenerateContentResponseUsageMetadata,
        Part,
        ThinkingConfig,
        ThinkingLevel,
        ToolConfig,
    )

GEMINI = Provider(
    "gemini",
    "Gemini",
    "GEMINI_API_KEY",
    "GOOGLE_GEMINI_BASE_URL",
    package="google-genai",
    module="google.genai",
)
KEY_ENVS = ("GOOGLE_API_KEY", "GEMINI_API_KEY")
"""Where the key is read from, in the SDK's own order (it warns when both are set)."""
SKIP_VALIDATOR = base64.urlsafe_b64decode("skip_thought_signature_validator")
"""The bytes the API reads from Google's placeholder signature (it is valid base64)."""
VERTEX_ENVS = ("GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GENAI_USE_VERTEXAI")
"""The SDK's switches to Vertex AI (the first wins, as in the SDK)."""

FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content-filter",
    "RECITATION": "content-filter",
    "BLOCKLIST": "content-filter",
    "PROHIBITED_CONTENT": "content-filter",
    "SPII": "content-filter",
    "IMAGE_SAFETY": "content-filter",
    "IMAGE_PROHIBITED_CONTENT": "content-filter",
    "IMAGE_RECITATION": "content-filter",
}

INLINE_TYPES = ("image", "audio", "video")
"""Top-level media types Gemini reads inline (and ``application/pdf``)."""


SETTING_PARAMS = {
    "temperature": "temperature",
    "max_tokens": "max_output_tokens",
    "top_p": "top_p",
    "reasoning_effort": "thinking_config",
}
"""``ModelSettings`` fields and the request parameters they become."""


class GeminiModel(ProviderModel["Client", "GenerateContentResponse"]):
    """A Gemini model, on the Gemini API or Vertex AI.

    ``settings`` are fields of the SDK's ``GenerateContentConfig`` (``temperature``,
    ``max_output_tokens``, ``thinking_config`` ...), checked when the model is made; a
    run's ``ModelSettings`` override them (``reasoning_effort`` is the thinking level,
    ``extra`` holds more ``GenerateContentConfig`` fields).
    """

    provider = GEMINI
    include_thoughts: bool
    """Ask for thought summaries, streamed as reasoning (models that think only)."""
    vertexai: bool
    """Requests go to Vertex AI rather than the Gemini API."""

    def __init__(
        self,
        model: str = "gemini-2.5-flash",
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        vertexai: bool | None = None,
        include_thoughts: bool = False,
        retry: RetryPolicy | None = None,
        timeout: float = 120.0,
        client: Client | None = None,
        **settings: Any,
    ) -> None:
        super().__init__(
            model,
            modes=("native",),
            api_key=api_key,
            base_url=base_url,
            retry=retry,
            timeout=timeout,
            client=client,
            settings=settings,
        )
        self.include_thoughts = include_thoughts
        self.vertexai = _vertex_from_env() if vertexai is None else vertexai
        self._config = _checked_config(settings)

    def _key(self) -> str:
        key = self._api_key or next((os.environ[e] for e in KEY_ENVS if os.environ.get(e)), "")
        if key or self.vertexai:  # Vertex AI takes the SDK's credentials without a key
            return key
        raise MissingAPIKey(
            GEMINI.label, "GEMINI_API_KEY", type(self).__name__, also_env="GOOGLE_API_KEY"
        )

    def _make_client(self, api_key: str, base_url: str | None, timeout: float) -> Client:
        from google import genai
        from google.genai import types

        options = types.HttpOptions(base_url=base_url, timeout=int(timeout * 1000))
        if self.vertexai:  # the SDK reads the project, location and an env key itself
            return genai.Client(vertexai=True, api_key=self._api_key, http_options=options)
        return genai.Client(vertexai=False, api_key=api_key, http_options=options)

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return retrying(
            lambda: self._attempt(request), request.cancel, self.retry, classify_error=failure
        )

    async def _open(self, client: Client, request: ModelRequest) -> _Stream:
        system, contents = gemini_contents(request.messages, request.instructions)
        chunks = await client.aio.models.generate_content_stream(
            model=self.model, contents=contents, config=self.config(request, system)
        )
        return _Stream(chunks)

    def _decoder(self, request: ModelRequest) -> ChunkDecoder:
        return ChunkDecoder()

    def _tool(self, definition: ToolDefinition) -> FunctionDeclaration:
        from google.genai import types

        return types.FunctionDeclaration(
            name=definition.name,
            description=definition.description,
            parameters_json_schema=definition.parameters,
        )

    def _tool_choice(self, choice: ToolChoice) -> ToolConfig:
        from google.genai import types

        modes: dict[str, Literal["AUTO", "NONE", "ANY"]] = {
            "auto": "AUTO",
            "none": "NONE",
            "required": "ANY",
        }
        mode = modes.get(choice)
        calling = (
            types.FunctionCallingConfig(mode=types.FunctionCallingConfigMode(mode))
            if mode is not None
            else types.FunctionCallingConfig(
                mode=types.FunctionCallingConfigMode.ANY, allowed_function_names=[choice]
            )
        )
        return types.ToolConfig(function_calling_config=calling)

    setting_params = SETTING_PARAMS

    def check_settings(self, settings: ModelSettings) -> None:
        super().check_settings(settings)
        if settings.reasoning_effort is not None:
            _thinking_level(settings.reasoning_effort)

    def run_config(self, request: ModelRequest) -> GenerateContentConfig:
        """The adapter's config with the run's settings over it, checked by the SDK's
        types (a field of ``extra`` it does not have is a ``ConfigurationError``)."""
        values = self.setting_values(request)
        if not values:
            return self._config
        effort = values.pop("thinking_config", None)
        config = _checked_config(self.settings | values)
        if effort is not None:
            thinking = config.thinking_config or _thinking_config()
            level = _thinking_level(effort)
            config = config.model_copy(
                update={"thinking_config": thinking.model_copy(update={"thinking_level": level})}
            )
        return config

    def config(self, request: ModelRequest, system: str) -> GenerateContentConfig:
        """The request's ``GenerateContentConfig``: the settings, the system instruction,
        the tools and tool choice, and thought summaries when asked for."""
        from google.genai import types

        base = self.run_config(request)
        update: dict[str, Any] = {}
        if system:
            update["system_instruction"] = system
        if request.tools:
            declarations = [self._tool(ToolDefinition.of(t)) for t in request.tools]
            update["tools"] = [types.Tool(function_declarations=declarations)]
            update["tool_config"] = self._tool_choice(request.tool_choice)
        if self.include_thoughts:
            thinking = base.thinking_config or types.ThinkingConfig()
            update["thinking_config"] = thinking.model_copy(update={"include_thoughts": True})
        return base.model_copy(update=update)


def _vertex_from_env() -> bool:
    for name in VERTEX_ENVS:
        value = os.environ.get(name)
        if value is not None:
            return value.lower() in ("true", "1")
    return False


def _thinking_config() -> ThinkingConfig:
    from google.genai import types

    return types.ThinkingConfig()


def _thinking_level(effort: str) -> ThinkingLevel:
    """A reasoning effort as Gemini's thinking level, or an error naming the effort."""
    from google.genai import types

    level = effort.upper()
    if level not in types.ThinkingLevel.__members__ or level == "THINKING_LEVEL_UNSPECIFIED":
        raise ConfigurationError(
            f"GeminiModel cannot take the setting reasoning_effort={effort!r}: "
            "Gemini's thinking levels are "
            + ", ".join(
                m.lower()
                for m in types.ThinkingLevel.__members__
                if m != "THINKING_LEVEL_UNSPECIFIED"
            )
        )
    return types.ThinkingLevel[level]


def _checked_config(settings: dict[str, Any]) -> GenerateContentConfig:
    """The settings as the SDK's config, or a ``ConfigurationError`` naming the one it
    cannot take."""
    from google.genai import types
    from pydantic import ValidationError

    try:
        return types.GenerateContentConfig(**settings)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in error["loc"])
        message = f"GeminiModel cannot take the setting {where}: {error['msg']}"
        raise ConfigurationError(message) from None


@dataclass(slots=True)
class _Stream:
    """The SDK's stream of chunks, closed however the attempt ends."""

    chunks: AsyncIterator[GenerateContentResponse]

    def __aiter__(self) -> AsyncIterator[GenerateContentResponse]:
        return self.chunks

    async def close(self) -> None:
        if isinstance(self.chunks, AsyncGenerator):
            await self.chunks.aclose()


def failure(exc: BaseException) -> Failure:
    """What an exception from google-genai means for a retry: its ``APIError`` carries
    the HTTP status as ``code``; a stream it cannot parse is not retried."""
    from google.genai import errors

    if isinstance(exc, errors.APIError):
        status = exc.code
        headers = getattr(exc.response, "headers", None)
        detail = exc.message or exc.status or "no detail"
        return Failure(
            f"the model provider answered {status}: {detail}",
            "rate_limited" if status == 429 else f"http_{status}",
            status in RETRY_STATUS,
            retry_after_seconds(headers) if isinstance(headers, Mapping) else None,
        )
    if isinstance(exc, errors.UnknownApiResponseError):
        return Failure("the model provider sent a stream that is not JSON", "model_error", False)
    return classify(exc)


class ChunkDecoder:
    """Streamed ``GenerateContentResponse`` chunks -> model events.

    Only the first candidate counts (callwright asks for one). The signed parts are
    kept as ``{"part": "function_call", "id": ..., "thought_signature": ...}``,
    ``{"part": "text", ...}`` or ``{"part": "thought", "text": ..., ...}``, the signature
    in standard base64.
    """

    def __init__(self) -> None:
        self.usage = Usage(requests=1)
        self.finish_reason: str | None = None
        self.blocked = False
        self.calls = 0
        self.signed: list[dict[str, Any]] = []

    def feed(self, chunk: GenerateContentResponse) -> list[ModelEvent]:
        metadata: GenerateContentResponseUsageMetadata | None = chunk.usage_metadata
        if metadata is not None:
            self.usage = gemini_usage(metadata)
        feedback = chunk.prompt_feedback
        if feedback is not None and feedback.block_reason is not None:
            self.blocked = True
        if not chunk.candidates:
            return []
        candidate = chunk.candidates[0]
        if candidate.finish_reason is not None:
            self.finish_reason = candidate.finish_reason.value
        content: Content | None = candidate.content
        out: list[ModelEvent] = []
        for part in (content.parts if content is not None else None) or ():
            out += self._part(part)
        return out

    def _part(self, part: Part) -> list[ModelEvent]:
        signature = _encode(part.thought_signature)
        if part.function_call is not None:
            return self._call(part.function_call, signature)
        text = part.text or ""
        if part.thought:
            if signature:
                self.signed.append(
                    {"part": "thought", "text": text, "thought_signature": signature}
                )
            return [ReasoningPart(text)] if text else []
        if signature:
            self.signed.append({"part": "text", "thought_signature": signature})
        return [TextPart(text)] if text else []

    def _call(self, call: FunctionCall, signature: str | None) -> list[ModelEvent]:
        call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
        if signature:
            self.signed.append(
                {"part": "function_call", "id": call_id, "thought_signature": signature}
            )
        self.calls += 1
        arguments = json.dumps(call.args or {}, ensure_ascii=False)
        return [
            ToolCallStartPart(call_id, call.name or ""),
            ToolCallDeltaPart(call_id, arguments),
            ToolCallEndPart(call_id),
        ]

    def finish(self) -> list[ModelEvent]:
        blocks = {GEMINI.name: self.signed}
        if self.blocked:
            return [FinishPart("content-filter", self.usage, blocks)]
        if self.finish_reason is None:
            return [ErrorPart("the Gemini stream ended before its last chunk", "model_error")]
        reason = FINISH_REASONS.get(self.finish_reason, "other")
        if reason == "stop" and self.calls:
            reason = "tool-calls"
        return [FinishPart(reason, self.usage, blocks)]


def gemini_usage(metadata: GenerateContentResponseUsageMetadata) -> Usage:
    """Thoughts count as output (they are billed so); cached tokens are part of the prompt."""
    thoughts = metadata.thoughts_token_count or 0
    return Usage(
        input_tokens=(metadata.prompt_token_count or 0)
        + (metadata.tool_use_prompt_token_count or 0),
        output_tokens=(metadata.candidates_token_count or 0) + thoughts,
        requests=1,
        cached_input_tokens=metadata.cached_content_token_count or 0,
        reasoning_tokens=thoughts,
    )


def _encode(signature: bytes | None) -> str | None:
    return base64.b64encode(signature).decode("ascii") if signature else None


def _decode(signature: object) -> bytes | None:
    """A kept signature's bytes; None for anything a hand-edited history made of it."""
    if isinstance(signature, bytes):
        return signature
    if not isinstance(signature, str) or not signature:
        return None
    try:
        return base64.urlsafe_b64decode(signature.replace("+", "-").replace("/", "_"))
    except (binascii.Error, ValueError):
        return None


def gemini_contents(messages: list[Message], instructions: str | None) -> tuple[str, list[Content]]:
    """The system instruction and the ``user`` / ``model`` turns Gemini expects.

    Tool results are ``functionResponse`` parts of a user turn; consecutive turns of one
    role are merged, so the responses to parallel calls travel together.
    """
    from google.genai import types

    system = [instructions] if instructions else []
    turns: list[tuple[Literal["user", "model"], list[Part]]] = []

    for m in messages:
        if isinstance(m, SystemMessage):
            system.append(m.content)
        elif isinstance(m, UserMessage):
            add_turn(turns, "user", user_parts(m))
        elif isinstance(m, AssistantMessage):
            add_turn(turns, "model", model_parts(m))
        elif isinstance(m, ToolResultMessage):
            add_turn(turns, "user", [function_response(m)])
    contents = [types.Content(role=role, parts=parts) for role, parts in turns]
    return "\n\n".join(system), contents


def model_parts(message: AssistantMessage) -> list[Part]:
    """A model turn with its signatures back on their parts: signed thoughts, the text,
    then the calls (an empty signed text part, as a stream may end with, goes last)."""
    from google.genai import types

    signed = message.provider_blocks.get(GEMINI.name)
    if signed is None:  # not Gemini's turn: no signature to keep, the placeholder instead
        signed = [
            {"part": "function_call", "id": c.id, "thought_signature": SKIP_VALIDATOR}
            for c in message.tool_calls[:1]
        ]
    by_call = {
        b.get("id"): _decode(b.get("thought_signature"))
        for b in signed
        if b.get("part") == "function_call" and isinstance(b.get("id"), str)
    }
    text_signature = next(
        (_decode(b.get("thought_signature")) for b in reversed(signed) if b.get("part") == "text"),
        None,
    )
    parts = [
        types.Part(text=str(b.get("text") or ""), thought=True, thought_signature=sig)
        for b in signed
        if b.get("part") == "thought" and (sig := _decode(b.get("thought_signature")))
    ]
    if message.text:
        parts.append(types.Part(text=message.text, thought_signature=text_signature))
    for c in message.tool_calls:
        call = types.FunctionCall(id=c.id, name=c.name, args=c.arguments)
        parts.append(types.Part(function_call=call, thought_signature=by_call.get(c.id)))
    if text_signature is not None and not message.text:
        parts.append(types.Part(text="", thought_signature=text_signature))
    return parts


def function_response(result: ToolResultMessage) -> Part:
    """A tool's result for the model: ``{"output": ...}``, or ``{"error": ...}`` when the
    call failed or was denied; its images and PDFs go as the response's own ``parts``
    (any other file is a line of the output that says what it was)."""
    from google.genai import types

    parts = [p for p in map(response_part, result.files) if p is not None]
    missing = [f for f in result.files if response_part(f) is None]
    key = "error" if result.is_error else "output"
    response = types.FunctionResponse(
        id=result.call_id,
        name=result.tool_name,
        response={key: with_stand_ins(result.content, missing)},
        parts=parts or None,
    )
    return types.Part(function_response=response)


def response_part(part: FilePart) -> FunctionResponsePart | None:
    """One file of a tool's result as a function response part; None for a type Gemini
    does not take there."""
    from google.genai import types

    if part.top_type != "image" and part.media_type not in ("application/pdf", "text/plain"):
        return None
    if "/" not in part.media_type or part.url is not None:  # the Gemini API takes no URI here
        return None
    blob = types.FunctionResponseBlob(data=part.content(), mime_type=part.media_type)
    return types.FunctionResponsePart(inline_data=blob)


def user_parts(message: UserMessage) -> list[Part]:
    """A user message's parts: its files', then its text (alone when there are no files)."""
    from google.genai import types

    parts = [file_part(f) for f in message.files]
    if message.content or not parts:
        parts.append(types.Part(text=message.content))
    return parts


def file_part(part: FilePart) -> Part:
    """One file as an ``inline_data`` or ``file_data`` part, or a text part for plain
    text (an ``UnsupportedFile`` when Gemini has no part for it)."""
    from google.genai import types

    readable = part.top_type in INLINE_TYPES or part.media_type == "application/pdf"
    if part.url is not None and "/" in part.media_type:
        data = types.FileData(file_uri=part.url, mime_type=part.media_type)
        return types.Part(file_data=data)
    if part.data is not None and readable:
        try:
            blob = types.Blob(data=part.content(), mime_type=part.media_type)
        except ValueError as exc:  # a part built in code with bad base64
            raise UnsupportedFile(str(exc)) from None
        return types.Part(inline_data=blob)
    if part.data is not None and part.top_type == "text":
        return types.Part(text=file_text(part))
    how = "by URL without its full media type" if part.url is not None else "inline"
    raise UnsupportedFile(
        f"Gemini cannot take a {part.media_type or 'file'} {how} "
        "(it takes images, audio, video, PDFs and plain text)"
    )
