"""The Responses API's stream, built from the ``openai`` SDK's own types and sent as the API
sends it: ``event: <type>`` and ``data: <json>`` frames, with no ``[DONE]`` (shared by the
adapter's tests, its end-to-end tests with the npm clients, and the overhead bench)."""

from __future__ import annotations

from typing import Any

from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseReasoningItem,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningSummaryTextDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from pydantic import BaseModel


class Stream:
    """One response's events, numbered as the API numbers them."""

    def __init__(self, response_id: str = "resp_1") -> None:
        self.id = response_id
        self.events: list[dict[str, Any]] = []
        self.output: list[Any] = []

    def add(self, event: BaseModel) -> None:
        self.events.append(event.model_dump(mode="json", exclude_none=True))

    @property
    def seq(self) -> int:
        return len(self.events)

    def response(self, status: str, usage: ResponseUsage | None = None, **kw: Any) -> Response:
        return Response(
            id=self.id,
            created_at=1.0,
            model="gpt-test",
            object="response",
            output=self.output if status != "in_progress" else [],
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            status=status,
            usage=usage,
            **kw,
        )

    def created(self) -> Stream:
        self.add(
            ResponseCreatedEvent(
                type="response.created",
                sequence_number=self.seq,
                response=self.response("in_progress"),
            )
        )
        return self

    def _added(self, index: int, item: Any) -> None:
        self.add(
            ResponseOutputItemAddedEvent(
                type="response.output_item.added",
                sequence_number=self.seq,
                output_index=index,
                item=item,
            )
        )

    def _done(self, index: int, item: Any) -> None:
        self.output.append(item)
        self.add(
            ResponseOutputItemDoneEvent(
                type="response.output_item.done",
                sequence_number=self.seq,
                output_index=index,
                item=item,
            )
        )

    def reasoning(
        self, item_id: str, summary: list[str], encrypted: str | None = None
    ) -> ResponseReasoningItem:
        index = len(self.output)
        self._added(index, ResponseReasoningItem(id=item_id, type="reasoning", summary=[]))
        for n, text in enumerate(summary):
            part = {"type": "summary_text", "text": ""}
            common = {"item_id": item_id, "output_index": index, "summary_index": n}
            self.add(
                ResponseReasoningSummaryPartAddedEvent(
                    type="response.reasoning_summary_part.added",
                    sequence_number=self.seq,
                    part=part,
                    **common,
                )
            )
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                self.add(
                    ResponseReasoningSummaryTextDeltaEvent(
                        type="response.reasoning_summary_text.delta",
                        sequence_number=self.seq,
                        delta=piece,
                        **common,
                    )
                )
            self.add(
                ResponseReasoningSummaryTextDoneEvent(
                    type="response.reasoning_summary_text.done",
                    sequence_number=self.seq,
                    text=text,
                    **common,
                )
            )
            self.add(
                ResponseReasoningSummaryPartDoneEvent(
                    type="response.reasoning_summary_part.done",
                    sequence_number=self.seq,
                    part={"type": "summary_text", "text": text},
                    **common,
                )
            )
        item = ResponseReasoningItem(
            id=item_id,
            type="reasoning",
            summary=[{"type": "summary_text", "text": t} for t in summary],
            encrypted_content=encrypted,
        )
        self._done(index, item)
        return item

    def message(self, item_id: str, pieces: list[str]) -> ResponseOutputMessage:
        index = len(self.output)
        self._added(
            index,
            ResponseOutputMessage(
                id=item_id, type="message", role="assistant", status="in_progress", content=[]
            ),
        )
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        self.add(
            ResponseContentPartAddedEvent(
                type="response.content_part.added",
                sequence_number=self.seq,
                part={"type": "output_text", "text": "", "annotations": []},
                **common,
            )
        )
        for piece in pieces:
            self.add(
                ResponseTextDeltaEvent(
                    type="response.output_text.delta",
                    sequence_number=self.seq,
                    delta=piece,
                    logprobs=[],
                    **common,
                )
            )
        text = "".join(pieces)
        self.add(
            ResponseTextDoneEvent(
                type="response.output_text.done",
                sequence_number=self.seq,
                text=text,
                logprobs=[],
                **common,
            )
        )
        done_part = {"type": "output_text", "text": text, "annotations": []}
        self.add(
            ResponseContentPartDoneEvent(
                type="response.content_part.done",
                sequence_number=self.seq,
                part=done_part,
                **common,
            )
        )
        item = ResponseOutputMessage(
            id=item_id,
            type="message",
            role="assistant",
            status="completed",
            content=[done_part],
        )
        self._done(index, item)
        return item

    def call_added(self, item_id: str, call_id: str, name: str) -> int:
        index = len(self.output) + sum(1 for e in self.events if _open_call(e, self.output))
        self._added(
            index,
            ResponseFunctionToolCall(
                id=item_id,
                call_id=call_id,
                name=name,
                arguments="",
                type="function_call",
                status="in_progress",
            ),
        )
        return index

    def call_delta(self, index: int, item_id: str, piece: str) -> None:
        self.add(
            ResponseFunctionCallArgumentsDeltaEvent(
                type="response.function_call_arguments.delta",
                sequence_number=self.seq,
                item_id=item_id,
                output_index=index,
                delta=piece,
            )
        )

    def call_done(
        self, index: int, item_id: str, call_id: str, name: str, arguments: str
    ) -> ResponseFunctionToolCall:
        self.add(
            ResponseFunctionCallArgumentsDoneEvent(
                type="response.function_call_arguments.done",
                sequence_number=self.seq,
                item_id=item_id,
                output_index=index,
                arguments=arguments,
            )
        )
        item = ResponseFunctionToolCall(
            id=item_id,
            call_id=call_id,
            name=name,
            arguments=arguments,
            type="function_call",
            status="completed",
        )
        self._done(index, item)
        return item

    def call(self, item_id: str, call_id: str, name: str, pieces: list[str]) -> Any:
        index = self.call_added(item_id, call_id, name)
        for piece in pieces:
            self.call_delta(index, item_id, piece)
        return self.call_done(index, item_id, call_id, name, "".join(pieces))

    def completed(
        self, tokens: tuple[int, int] = (10, 5), cached: int = 0, reasoning: int = 0
    ) -> Stream:
        usage = ResponseUsage(
            input_tokens=tokens[0],
            input_tokens_details={"cached_tokens": cached, "cache_write_tokens": 0},
            output_tokens=tokens[1],
            output_tokens_details={"reasoning_tokens": reasoning},
            total_tokens=sum(tokens),
        )
        self.add(
            ResponseCompletedEvent(
                type="response.completed",
                sequence_number=self.seq,
                response=self.response("completed", usage),
            )
        )
        return self

    def send(self, replay: Any, **kw: Any) -> None:
        replay.sse(self.events, named=True, done=False, **kw)


def _open_call(event: dict[str, Any], output: list[Any]) -> bool:
    """An added call item not yet done (parallel calls interleave their deltas)."""
    if event["type"] != "response.output_item.added" or event["item"]["type"] != "function_call":
        return False
    return all(getattr(o, "id", None) != event["item"]["id"] for o in output)


def dumped(item: BaseModel) -> dict[str, Any]:
    """An output item exactly as the replay server sent it."""
    data: dict[str, Any] = item.model_dump(mode="json", exclude_none=True)
    return data
