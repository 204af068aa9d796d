"""Anthropic's Messages API, streamed through the official ``anthropic`` SDK.

Content blocks arrive by index: ``text`` (text deltas), ``thinking`` (reasoning
deltas, when ``thinking_budget`` turns extended thinking on) and ``tool_use``
(start with id and name, then ``input_json_delta`` pieces). ``message_start``
and ``message_delta`` carry the usage. Native tool calling only: Claude has it
everywhere, so the structured mode would add nothing.

With extended thinking and tools, Anthropic wants the turn's ``thinking`` blocks
(with their ``signature``) and ``redacted_thinking`` blocks back unchanged when the
conversation continues after a tool call: the decoder rebuilds each whole block
and hands them over on the ``FinishPart``, the run keeps it on the assistant
message (``provider_blocks["anthropic"]``, journal included), and the request
builder puts those blocks first in that assistant turn, as the API returned them.

A failed call's ``tool_result`` carries ``is_error: true``.

Files on a user message go before its text: an image as an ``image`` block (a
``base64`` source for PNG, JPEG, GIF and WebP bytes, a ``url`` source for an https
URL), a PDF as a ``document`` block (``base64`` or ``url``, titled with its filename),
plain text as a ``document`` with a ``text`` source. Anything else fails the step
(``unsupported_file``) rather than reach the model as nothing.

A tool's files go inside its ``tool_result`` as the same ``image`` and ``document``
blocks, after a text block; a file with no block is a line of that text.

The ``anthropic`` package is the optional extra ``callwright[anthropic]``: this module
imports it for the type checker only and inside ``_make_client`` (see ``_provider``),
so it imports without it; ``AnthropicModel()`` then raises an ``ImportError`` naming
the extra.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Literal

from .._errors import ConfigurationError
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
from ._provider import (
    Provider,
    ProviderModel,
    ToolDefinition,
    UnsupportedFile,
    add_turn,
    file_text,
    shown_filename,
)
from ._retry import RetryPolicy
from ._settings import ModelSettings
from .base import (
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
    from anthropic import AsyncAnthropic, AsyncStream
    from anthropic.types import (
        Base64ImageSourceParam,
        ContentBlock,
        ContentBlockParam,
        DocumentBlockParam,
        ImageBlockParam,
        MessageDeltaUsage,
        MessageParam,
        RawContentBlockDelta,
        RawMessageStreamEvent,
        ToolChoiceParam,
        ToolParam,
        ToolResultBlockParam,
    )
    from anthropic.types import Usage as MessageUsage
    from anthropic.types.tool_result_block_param import Content as ToolResultContent

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool-calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content-filter",
}

ANTHROPIC = Provider("anthropic", "Anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")


SETTING_PARAMS = {
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "top_p": "top_p",
    "parallel_tool_calls": "parallel_tool_calls",
    "reasoning_effort": "effort",
}
"""``ModelSettings`` fields and the request parameters they become."""

EFFORTS = ("low", "medium", "high", "xhigh", "max")
"""The efforts of ``output_config`` (the SDK's ``OutputConfigParam``)."""


class AnthropicModel(ProviderModel["AsyncAnthropic", "RawMessageStreamEvent"]):
    """A Claude model. The key comes from ``api_key`` or ``ANTHROPIC_API_KEY``.

    ``settings`` go into every request body as they are (``temperature``, ``top_k``,
    ``metadata`` ...), under a run's ``ModelSettings``.
    """

    provider = ANTHROPIC
    max_tokens: int
    """The answer's token limit, which the Messages API requires."""
    thinking_budget: int | None
    """Tokens for extended thinking; ``None`` leaves it off."""

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
        client: AsyncAnthropic | None = None,
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
        self.max_tokens = max_tokens
        self.thinking_budget = thinking_budget

    def _make_client(self, api_key: str, base_url: str | None, timeout: float) -> AsyncAnthropic:
        from anthropic import AsyncAnthropic

        return AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout)

    async def _open(
        self, client: AsyncAnthropic, request: ModelRequest
    ) -> AsyncStream[RawMessageStreamEvent]:
        # the body is a dict (it carries the user's settings), so the SDK's overloads cannot
        # tell from it that ``stream`` is on; the annotation states what ``stream=True`` returns
        response: AsyncStream[RawMessageStreamEvent] = await client.messages.create(
            **self.params(request)
        )
        return response

    def _decoder(self, request: ModelRequest) -> EventDecoder:
        return EventDecoder()

    def _tool(self, definition: ToolDefinition) -> ToolParam:
        return {
            "name": definition.name,
            "description": definition.description,
            "input_schema": definition.parameters,
        }

    def _tool_choice(self, choice: ToolChoice) -> ToolChoiceParam:
        match choice:
            case "auto":
                return {"type": "auto"}
            case "none":
                return {"type": "none"}
            case "required":
                return {"type": "any"}
            case name:
                return {"type": "tool", "name": name}

    setting_params = SETTING_PARAMS

    def check_settings(self, settings: ModelSettings) -> None:
        super().check_settings(settings)
        effort = settings.reasoning_effort
        if effort is not None and effort not in EFFORTS:
            raise ConfigurationError(
                f"AnthropicModel cannot take the setting reasoning_effort={effort!r}: "
                f"Anthropic's efforts are {', '.join(EFFORTS)}"
            )

    def setting_values(self, request: ModelRequest) -> dict[str, Any]:
        """The run's settings as ``create`` arguments. Parallel calls are a flag of the
        tool choice and the effort is ``output_config``'s; sampling fields and ``extra``
        travel in ``extra_body``, since the SDK's ``create`` no longer names
        ``temperature`` or ``top_p`` (the API decides per model whether it takes them)."""
        values = super().setting_values(request)
        params: dict[str, Any] = {}
        parallel = values.pop("parallel_tool_calls", None)
        if parallel is not None:
            choice = self._tool_choice(request.tool_choice)
            params["tool_choice"] = {**choice, "disable_parallel_tool_use": not parallel}
        effort = values.pop("effort", None)
        if effort is not None:
            params["output_config"] = {"effort": effort}
        if "max_tokens" in values:
            params["max_tokens"] = values.pop("max_tokens")
        if values:
            params["extra_body"] = values
        return params

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API request body for one step."""
        system, messages = anthropic_messages(request.messages, request.instructions)
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
            "stream": True,
        }
        if system:
            body["system"] = system
        if self.thinking_budget:
            body["thinking"] = {"type": "enabled", "budget_tokens": self.thinking_budget}
        body.update(self.tool_params(request))
        run = self.setting_values(request)
        # the adapter's own keyword settings travel as the run's sampling fields do: the
        # SDK's create() names neither temperature nor most other extras any more
        extra = {**self.settings, **run.pop("extra_body", {})}
        body.update(run)
        if extra:
            body["extra_body"] = extra
        return body


class EventDecoder:
    """Messages API stream events -> model events.

    Events, content blocks and deltas are told apart by their ``type`` literals, the
    discriminator the SDK's unions declare, so each branch reads one typed variant.
    """

    def __init__(self) -> None:
        self.calls: dict[int, str] = {}
        """Block index -> tool-use id, for the ``tool_use`` blocks."""
        self.open_calls: list[str] = []
        self.thinking: dict[int, dict[str, Any]] = {}
        """Block index -> a ``thinking`` or ``redacted_thinking`` block, rebuilt whole."""
        self.usage = Usage(requests=1)
        self.stop_reason: str | None = None

    def feed(self, event: RawMessageStreamEvent) -> list[ModelEvent]:
        match event.type:
            case "message_start":
                usage: MessageUsage | None = event.message.usage
                if usage is not None:
                    self.usage.input_tokens = _input_tokens(usage)
                    self.usage.cached_input_tokens = usage.cache_read_input_tokens or 0
                    self.usage.output_tokens = usage.output_tokens or 0
            case "content_block_start":
                return self._block_start(event.index, event.content_block)
            case "content_block_delta":
                return self._delta(event.index, event.delta)
            case "content_block_stop":
                call_id = self.calls.get(event.index)
                if call_id is not None and call_id in self.open_calls:
                    self.open_calls.remove(call_id)
                    return [ToolCallEndPart(call_id)]
            case "message_delta":
                if event.delta.stop_reason:
                    self.stop_reason = event.delta.stop_reason
                delta_usage: MessageDeltaUsage | None = event.usage
                if delta_usage is not None:
                    self.usage.output_tokens = delta_usage.output_tokens or 0
                    if delta_usage.input_tokens:
                        self.usage.input_tokens = _input_tokens(delta_usage)
                        self.usage.cached_input_tokens = delta_usage.cache_read_input_tokens or 0
        return []

    def _block_start(self, index: int, block: ContentBlock) -> list[ModelEvent]:
        match block.type:
            case "tool_use":
                self.calls[index] = block.id
                self.open_calls.append(block.id)
                out: list[ModelEvent] = [ToolCallStartPart(block.id, block.name)]
                if block.input:  # some recordings carry the whole input up front
                    out.append(ToolCallDeltaPart(block.id, json.dumps(block.input)))
                return out
            case "text" if block.text:
                return [TextPart(block.text)]
            case "thinking":
                self.thinking[index] = {
                    "type": "thinking",
                    "thinking": block.thinking or "",
                    "signature": block.signature or "",
                }
                return [ReasoningPart(block.thinking)] if block.thinking else []
            case "redacted_thinking":
                self.thinking[index] = {"type": "redacted_thinking", "data": block.data}
        return []

    def _delta(self, index: int, delta: RawContentBlockDelta) -> list[ModelEvent]:
        match delta.type:
            case "text_delta" if delta.text:
                return [TextPart(delta.text)]
            case "thinking_delta" if delta.thinking:
                if index in self.thinking:
                    self.thinking[index]["thinking"] += delta.thinking
                return [ReasoningPart(delta.thinking)]
            case "signature_delta" if index in self.thinking:
                self.thinking[index]["signature"] += delta.signature
            case "input_json_delta":
                call_id = self.calls.get(index)
                if call_id is not None and delta.partial_json:
                    return [ToolCallDeltaPart(call_id, delta.partial_json)]
        return []  # citation deltas have no place in the event stream

    def finish(self) -> list[ModelEvent]:
        out: list[ModelEvent] = [ToolCallEndPart(call_id) for call_id in self.open_calls]
        self.open_calls.clear()
        reason = STOP_REASONS.get(self.stop_reason or "end_turn", "other")
        blocks = [self.thinking[i] for i in sorted(self.thinking)]
        out.append(FinishPart(reason, self.usage, {ANTHROPIC.name: blocks} if blocks else {}))
        return out


def _input_tokens(usage: MessageUsage | MessageDeltaUsage) -> int:
    """Input tokens including the cached ones, which Anthropic counts apart."""
    return (
        (usage.input_tokens or 0)
        + (usage.cache_creation_input_tokens or 0)
        + (usage.cache_read_input_tokens or 0)
    )


def anthropic_messages(
    messages: list[Message], instructions: str | None
) -> tuple[str, list[MessageParam]]:
    """The system text and the alternating user/assistant turns Anthropic expects.

    Tool results become ``tool_result`` blocks of a user turn; consecutive turns
    of one role are merged into one.
    """
    system = [instructions] if instructions else []
    turns: list[tuple[Literal["user", "assistant"], list[ContentBlockParam]]] = []

    for m in messages:
        if isinstance(m, SystemMessage):
            system.append(m.content)
        elif isinstance(m, UserMessage):
            add_turn(turns, "user", user_blocks(m))
        elif isinstance(m, AssistantMessage):
            blocks: list[ContentBlockParam] = _provider_blocks(m)
            if m.text:
                blocks.append({"type": "text", "text": m.text})
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in m.tool_calls
            ]
            add_turn(turns, "assistant", blocks)
        elif isinstance(m, ToolResultMessage):
            result: ToolResultBlockParam = {
                "type": "tool_result",
                "tool_use_id": m.call_id,
                "content": tool_result_content(m),
            }
            if m.is_error:
                result["is_error"] = True
            result_blocks: list[ContentBlockParam] = [result]
            add_turn(turns, "user", result_blocks)
    return "\n\n".join(system), [_turn(role, blocks) for role, blocks in turns]


def tool_result_content(result: ToolResultMessage) -> str | list[ToolResultContent]:
    """A ``tool_result``'s content: its text alone, or its text then its files' image and
    document blocks (a file with no block is told as a line of the text)."""
    if not result.files:
        return result.content
    blocks: list[ToolResultContent] = []
    missing: list[FilePart] = []
    for f in result.files:
        try:
            blocks.append(file_block(f))
        except UnsupportedFile:
            missing.append(f)
    text: ToolResultContent = {"type": "text", "text": with_stand_ins(result.content, missing)}
    return [text, *blocks]


ImageType = Literal["image/jpeg", "image/png", "image/gif", "image/webp"]
IMAGE_TYPES: dict[str, ImageType] = {
    "image/jpeg": "image/jpeg",
    "image/png": "image/png",
    "image/gif": "image/gif",
    "image/webp": "image/webp",
}
"""The image types the Messages API takes as base64 (as the literals the SDK types)."""


def user_blocks(message: UserMessage) -> list[ContentBlockParam]:
    """A user message's blocks: its files', then its text (alone when there are no files)."""
    blocks: list[ContentBlockParam] = [file_block(f) for f in message.files]
    if message.content or not blocks:
        blocks.append({"type": "text", "text": message.content})
    return blocks


def file_block(part: FilePart) -> ImageBlockParam | DocumentBlockParam:
    """One file as an ``image`` or ``document`` block (an ``UnsupportedFile`` when the
    Messages API has no block for it)."""
    if part.top_type == "image":
        if part.url is not None:
            return {"type": "image", "source": {"type": "url", "url": part.url}}
        media_type = IMAGE_TYPES.get(part.media_type)
        if part.data is not None and media_type is not None:
            source: Base64ImageSourceParam = {
                "type": "base64",
                "media_type": media_type,
                "data": part.data,
            }
            return {"type": "image", "source": source}
    document: DocumentBlockParam | None = None
    if part.media_type == "application/pdf" and part.url is not None:
        document = {"type": "document", "source": {"type": "url", "url": part.url}}
    elif part.media_type == "application/pdf" and part.data is not None:
        document = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": part.data},
        }
    elif part.top_type == "text" and part.data is not None:
        text = file_text(part).partition("\n")[2]
        document = {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": text},
        }
    if document is None:
        how = "by URL" if part.url is not None else "inline"
        raise UnsupportedFile(
            f"Anthropic's Messages API cannot take a {part.media_type or 'file'} {how} "
            "(it takes PNG, JPEG, GIF and WebP images, PDFs and plain text)"
        )
    title = shown_filename(part)
    if title:
        document["title"] = title
    return document


def _provider_blocks(message: AssistantMessage) -> list[ContentBlockParam]:
    """The turn's thinking blocks as Anthropic sent them; the API checks their signatures,
    so they go back as they were (the SDK's request types describe the same shapes)."""
    blocks: list[Any] = [dict(b) for b in message.provider_blocks.get(ANTHROPIC.name, ())]
    return blocks


def _turn(role: Literal["user", "assistant"], blocks: list[ContentBlockParam]) -> MessageParam:
    if role == "user":
        return {"role": "user", "content": blocks}
    return {"role": "assistant", "content": blocks}
