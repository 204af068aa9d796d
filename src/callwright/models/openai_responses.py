"""OpenAI's Responses API, streamed through the official ``openai`` SDK.

The default for ``openai:<model>`` on OpenAI's own API (``openai-responses:<model>``
forces it on another server; ``openai-chat:<model>`` picks Chat Completions). It is the
API through which a reasoning model keeps its reasoning across tool calls.

The stream is typed events told apart by their ``type``: output items are added and
done by ``output_index``; text, reasoning-summary and function-call-argument deltas
name their item. A ``function_call`` item starts a call (``call_id`` is the id its
result answers; the item's own ``id`` names it in the stream), its argument deltas
follow, and the item's ``done`` ends it. ``response.completed`` (or
``response.incomplete``) carries the usage, cached and reasoning tokens included.
A stream that ends without one of them was cut: the step fails rather than act on a
half-written call.

Reasoning is carried, not just shown. Every output item of the turn (``reasoning``
items whole, with ``encrypted_content`` when the request asked for it, and the
``message`` and ``function_call`` items beside them) is kept as the API sent it, from
its ``response.output_item.done``, on the ``FinishPart``; the run keeps it on the
assistant message (``provider_blocks["openai-responses"]``, journal included), and the
next request puts those items back in the input, in their order. Reasoning models
need a reasoning item followed by the item it led to, so the message and call items
go back with their ids too. Where the assistant message no longer says what the kept
items say (its text edited or cut, say, or a call's arguments changed), the message
goes back as a new item and the call with its id and its new arguments; a message from
another provider has no kept items and goes back as new items. With ``store=False``
(nothing kept on OpenAI's side) the adapter adds
``include=["reasoning.encrypted_content"]``, so the reasoning comes back in the items
themselves.

Reasoning summaries (``reasoning={"summary": "auto"}`` in the settings) and raw
reasoning text (open models served through Responses) stream as reasoning
(``ReasoningPart``); encrypted reasoning is only carried, never shown.

A failed call's ``function_call_output`` starts with ``ERROR_PREFIX`` (``Error: ``),
as on Chat Completions: the item has no error flag.

Files on a user message go before its text: an image as ``input_image`` (its URL or a
``data:`` URL), a PDF as ``input_file`` (``file_data`` with its filename, or
``file_url``), plain text as ``input_text`` headed by the file's name. Anything else
fails the step (``unsupported_file``).

A tool's files go in its ``function_call_output``, whose output is then a list: the
result's text as ``input_text``, then each image as ``input_image`` and each PDF as
``input_file``; any other file is a line of the text that says what it was.

Structured mode sends the combined solution schema as ``text.format`` (a JSON schema)
and decodes the answer with ``SolutionStream``, as the Chat Completions adapter does.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from ._provider import ToolDefinition, UnsupportedFile, file_text, sdk_arguments, shown_filename
from ._solution import SolutionStream, bound_schema, fit_schema, system_prompt
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
from .openai import (
    OpenAIClientModel,
    structured_conversation,
    tool_text,
)

if TYPE_CHECKING:
    from openai import AsyncOpenAI, AsyncStream
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseFunctionCallOutputItemParam,
        ResponseFunctionToolCallParam,
        ResponseInputContentParam,
        ResponseInputItemParam,
        ResponseOutputItem,
        ResponseStreamEvent,
        ToolChoiceFunctionParam,
    )
    from openai.types.responses.tool_choice_options import ToolChoiceOptions

BLOCKS = "openai-responses"
"""The key of the kept output items in ``AssistantMessage.provider_blocks``."""

INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content-filter"}


SETTING_PARAMS = {
    "temperature": "temperature",
    "max_tokens": "max_output_tokens",
    "top_p": "top_p",
    "parallel_tool_calls": "parallel_tool_calls",
    "reasoning_effort": "reasoning_effort",
}
"""``ModelSettings`` fields and the request parameters they become."""


class OpenAIResponsesModel(OpenAIClientModel["ResponseStreamEvent"]):
    """An OpenAI model through the Responses API.

    The key comes from ``api_key`` or ``OPENAI_API_KEY``; ``base_url`` (or
    ``OPENAI_BASE_URL``) points at another server that has ``/v1/responses``.
    ``settings`` go into every request as they are: ``reasoning={"effort": "low",
    "summary": "auto"}``, ``max_output_tokens``, ``store=False``, ``parallel_tool_calls``
    ... ``max_string`` bounds the structured-mode schema, as on ``OpenAIModel``.
    """

    async def _open(
        self, client: AsyncOpenAI, request: ModelRequest
    ) -> AsyncStream[ResponseStreamEvent]:
        # the body is a dict (it carries the user's settings), so the SDK's overloads cannot
        # tell from it that ``stream`` is on; the annotation states what ``stream=True`` returns
        response: AsyncStream[ResponseStreamEvent] = await client.responses.create(
            **sdk_arguments(client.responses.create, self.params(request))
        )
        return response

    def _decoder(self, request: ModelRequest) -> ResponsesDecoder:
        return ResponsesDecoder(request)

    def _tool(self, definition: ToolDefinition) -> FunctionToolParam:
        return {
            "type": "function",
            "name": definition.name,
            "description": definition.description,
            "parameters": definition.parameters,
            "strict": False,
        }

    def _tool_choice(self, choice: ToolChoice) -> ToolChoiceOptions | ToolChoiceFunctionParam:
        match choice:
            case "auto" | "none" | "required":
                return choice
            case name:
                return {"type": "function", "name": name}

    setting_params = SETTING_PARAMS

    def setting_values(self, request: ModelRequest) -> dict[str, Any]:
        """The run's settings; the effort goes inside ``reasoning``, beside a summary
        the adapter's own settings ask for."""
        values = super().setting_values(request)
        effort = values.pop("reasoning_effort", None)
        if effort is not None:
            reasoning = self.settings.get("reasoning")
            base = dict(reasoning) if isinstance(reasoning, dict) else {}
            values["reasoning"] = base | {"effort": effort} | dict(values.get("reasoning") or {})
        return values

    def params(self, request: ModelRequest) -> dict[str, Any]:
        """The Responses API request body for one step."""
        body: dict[str, Any] = {"model": self.model, "stream": True, **self.settings}
        body.update(self.setting_values(request))
        if body.get("store") is False:
            include = list(body.get("include") or [])
            if "reasoning.encrypted_content" not in include:
                include.append("reasoning.encrypted_content")
            body["include"] = include
        if request.mode == "structured":
            schema = fit_schema(request.solution_schema or {}, request.tool_choice)
            if self.max_string is not None:
                schema = bound_schema(
                    schema, max_calls=1, max_string=self.max_string, max_output=self.max_string * 4
                )
            body["instructions"] = system_prompt(request.instructions, schema)
            body["input"] = structured_conversation(request.messages, input_content)
            body["text"] = {
                "format": {"type": "json_schema", "name": "solution", "schema": schema}
                | {"strict": False}
            }
        else:
            if request.instructions:
                body["instructions"] = request.instructions
            body["input"] = input_items(request.messages)
            body.update(self.tool_params(request))
        for name in self.provider.rejects:
            body.pop(name, None)
        return body


@dataclass(slots=True)
class _Call:
    call_id: str
    streamed: bool = False
    """Argument deltas came; else the whole arguments are sent when the item is done."""
    ended: bool = False


class ResponsesDecoder:
    """Responses stream events -> model events.

    Events and output items are told apart by their ``type`` literals, the discriminator
    the SDK's unions declare, so each branch reads one typed variant.
    """

    def __init__(self, request: ModelRequest) -> None:
        self.structured = request.mode == "structured"
        self.solution = SolutionStream(structured_output=request.output_schema is not None)
        self.calls: dict[str, _Call] = {}
        """Item id (or call id, for a server that sends no item id) -> the call."""
        self.order: list[str] = []
        self.items: dict[int, dict[str, Any]] = {}
        """Output index -> the item as its ``done`` event carried it, to send back."""
        self.usage = Usage(requests=1)
        self.reason: str | None = None
        self.refused = False
        self.failed = False

    def feed(self, event: ResponseStreamEvent) -> list[ModelEvent]:
        if self.failed:
            return []
        match event.type:
            case "response.output_text.delta" if event.delta:
                if self.structured:
                    return self.solution.feed(event.delta)
                return [TextPart(event.delta)]
            case "response.refusal.delta" if event.delta:
                self.refused = True
                return [TextPart(event.delta)]
            case "response.reasoning_summary_text.delta" | "response.reasoning_text.delta":
                return [ReasoningPart(event.delta)] if event.delta else []
            case "response.reasoning_summary_part.added" if event.summary_index > 0:
                return [ReasoningPart("\n\n")]  # summary parts are paragraphs
            case "response.output_item.added":
                return self._item_added(event.item)
            case "response.function_call_arguments.delta":
                call = self.calls.get(event.item_id)
                if call is not None and event.delta:
                    call.streamed = True
                    return [ToolCallDeltaPart(call.call_id, event.delta)]
            case "response.output_item.done":
                self.items[event.output_index] = _kept(event.item)
                return self._item_done(event.item)
            case "response.completed" | "response.incomplete":
                self._completed(event.response)
            case "response.failed":
                self.failed = True
                error = event.response.error
                message = error.message if error is not None else "the response failed"
                code = error.code if error is not None else "model_error"
                return [ErrorPart(f"the model provider failed the response: {message}", code)]
            case "error":
                self.failed = True
                detail = f"the model provider sent an error: {event.message}"
                return [ErrorPart(detail, event.code or "model_error")]
        return []

    def _item_added(self, item: ResponseOutputItem) -> list[ModelEvent]:
        if item.type != "function_call":
            return []
        key = item.id or item.call_id
        if key in self.calls:
            return []
        call = self.calls[key] = _Call(item.call_id)
        self.order.append(key)
        out: list[ModelEvent] = [ToolCallStartPart(item.call_id, item.name)]
        if item.arguments:  # a server that sends the whole arguments up front
            call.streamed = True
            out.append(ToolCallDeltaPart(item.call_id, item.arguments))
        return out

    def _item_done(self, item: ResponseOutputItem) -> list[ModelEvent]:
        if item.type != "function_call":
            return []
        key = item.id or item.call_id
        out: list[ModelEvent] = [] if key in self.calls else self._item_added(item)
        call = self.calls[key]
        if not call.streamed and item.arguments:
            call.streamed = True
            out.append(ToolCallDeltaPart(call.call_id, item.arguments))
        if not call.ended:
            call.ended = True
            out.append(ToolCallEndPart(call.call_id))
        return out

    def _completed(self, response: Response) -> None:
        details = response.incomplete_details
        if response.status == "incomplete" or details is not None:
            reason = details.reason if details is not None else None
            self.reason = INCOMPLETE_REASONS.get(reason or "", "other")
        else:
            self.reason = "content-filter" if self.refused else "stop"
        usage = response.usage
        if usage is not None:
            self.usage.input_tokens = usage.input_tokens or 0
            self.usage.output_tokens = usage.output_tokens or 0
            cached = usage.input_tokens_details
            self.usage.cached_input_tokens = (cached.cached_tokens or 0) if cached else 0
            reasoning = usage.output_tokens_details
            self.usage.reasoning_tokens = (reasoning.reasoning_tokens or 0) if reasoning else 0

    def finish(self) -> list[ModelEvent]:
        if self.failed:
            return []
        if self.reason is None:
            return [
                ErrorPart(
                    "the model provider's stream ended before the response completed",
                    "incomplete_stream",
                )
            ]
        out: list[ModelEvent] = []
        if self.structured:
            out += self.solution.close()
        for key in self.order:
            call = self.calls[key]
            if not call.ended:
                call.ended = True
                out.append(ToolCallEndPart(call.call_id))
        reason = self.reason
        if reason == "stop" and (self.solution.calls_made if self.structured else bool(self.calls)):
            reason = "tool-calls"
        items = [self.items[i] for i in sorted(self.items)]
        out.append(FinishPart(reason, self.usage, {BLOCKS: items} if items else {}))
        return out


def _kept(item: ResponseOutputItem) -> dict[str, Any]:
    """The item as the server sent it: only the fields it set, so it goes back the same."""
    data: dict[str, Any] = item.model_dump(mode="json", exclude_unset=True, by_alias=True)
    return data


# --- the request's input ----------------------------------------------------------------


def input_items(messages: list[Message]) -> list[ResponseInputItemParam]:
    """The run's messages as Responses input items (native mode)."""
    out: list[ResponseInputItemParam] = []
    for m in messages:
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": m.content})
        elif isinstance(m, UserMessage):
            out.append({"role": "user", "content": input_content(m)})
        elif isinstance(m, AssistantMessage):
            out += assistant_items(m)
        elif isinstance(m, ToolResultMessage):
            out.append(
                {"type": "function_call_output", "call_id": m.call_id, "output": tool_output(m)}
            )
    return out


def tool_output(result: ToolResultMessage) -> str | list[ResponseFunctionCallOutputItemParam]:
    """A call's output: its text alone, or its text then its files' parts (a file the
    API has no part for is told as a line of the text)."""
    if not result.files:
        return tool_text(result)
    parts: list[ResponseFunctionCallOutputItemParam] = []
    missing: list[FilePart] = []
    for f in result.files:
        part = output_part(f)
        if part is None:
            missing.append(f)
        else:
            parts.append(part)
    text: ResponseFunctionCallOutputItemParam = {
        "type": "input_text",
        "text": with_stand_ins(tool_text(result), missing),
    }
    return [text, *parts]


def output_part(part: FilePart) -> ResponseFunctionCallOutputItemParam | None:
    """One file of a tool's output as ``input_image`` or ``input_file``; None for a type
    the API does not take there."""
    if part.top_type == "image":
        return {"type": "input_image", "image_url": part.data_url(), "detail": "auto"}
    if part.media_type != "application/pdf":
        return None
    if part.url is not None:
        return {"type": "input_file", "file_url": part.url}
    filename = shown_filename(part) or "document.pdf"
    return {"type": "input_file", "filename": filename, "file_data": part.data_url()}


def assistant_items(message: AssistantMessage) -> list[ResponseInputItemParam]:
    """One assistant turn: the items the API sent for it, where they still say what the
    message says, and new items for the rest (a turn from another provider, or edited)."""
    kept = [item for item in message.provider_blocks.get(BLOCKS, ()) if isinstance(item, dict)]
    calls = {c.id: c for c in message.tool_calls}
    kept_text = "".join(_message_text(i) for i in kept if i.get("type") == "message")
    keep_messages = bool(message.text) and kept_text == message.text
    out: list[ResponseInputItemParam] = []
    sent_calls: set[str] = set()
    for item in kept:
        kind = item.get("type")
        if kind == "reasoning" or (kind == "message" and keep_messages):
            out.append(_as_input(item))
        elif kind == "function_call":
            call = calls.get(str(item.get("call_id")))
            if call is not None and call.name == item.get("name"):
                if _same_arguments(item.get("arguments"), call.arguments):
                    out.append(_as_input(item))
                else:
                    out.append(_call_item(call.id, call.name, call.arguments, item.get("id")))
                sent_calls.add(call.id)
    if message.text and not keep_messages:
        text: ResponseInputItemParam = {"role": "assistant", "content": message.text}
        at = next((i for i, it in enumerate(out) if it.get("type") == "function_call"), len(out))
        out.insert(at, text)
    out += [
        _call_item(c.id, c.name, c.arguments, None)
        for c in message.tool_calls
        if c.id not in sent_calls
    ]
    return out


def _as_input(item: dict[str, Any]) -> ResponseInputItemParam:
    """A kept output item, as the API takes it back in ``input``: the output item types
    and the input item params describe the same shapes."""
    same: Any = dict(item)
    return same  # type: ignore[no-any-return]


def _message_text(item: dict[str, Any]) -> str:
    parts = [p for p in item.get("content") or () if isinstance(p, dict)]
    return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "output_text")


def _same_arguments(raw: object, arguments: dict[str, Any]) -> bool:
    if not isinstance(raw, str):
        return False
    try:
        return bool(json.loads(raw) == arguments)
    except ValueError:
        return False


def _call_item(
    call_id: str, name: str, arguments: dict[str, Any], item_id: object
) -> ResponseInputItemParam:
    item: ResponseFunctionToolCallParam = {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(arguments, ensure_ascii=False),
    }
    if isinstance(item_id, str):
        item["id"] = item_id
    return item


def input_content(message: UserMessage) -> str | list[ResponseInputContentParam]:
    """A user message's content: its text alone, or its files' parts and then its text."""
    if not message.files:
        return message.content
    parts = [input_part(f) for f in message.files]
    if message.content:
        parts.append({"type": "input_text", "text": message.content})
    return parts


def input_part(part: FilePart) -> ResponseInputContentParam:
    """One file as a Responses input part (an ``UnsupportedFile`` when there is none)."""
    if part.top_type == "image":
        return {"type": "input_image", "image_url": part.data_url(), "detail": "auto"}
    if part.media_type == "application/pdf":
        if part.url is not None:
            return {"type": "input_file", "file_url": part.url}
        filename = shown_filename(part) or "document.pdf"
        return {"type": "input_file", "filename": filename, "file_data": part.data_url()}
    if part.data is not None and part.top_type == "text":
        return {"type": "input_text", "text": file_text(part)}
    how = "by URL" if part.url is not None else "inline"
    raise UnsupportedFile(
        f"OpenAI's Responses API cannot take a {part.media_type or 'file'} {how} "
        "(it takes images, PDFs and plain text)"
    )
