"""A loopback OpenAI Responses API (`POST .../responses`, streamed), built from the OpenAI SDK's types.

Every event the fake streams is an `openai.types.responses.*` event object, serialized the way the
API sends it (`event: <type>` + `data: <json>`, no `[DONE]`): what the agent parses is what the
real API streams, or the SDK would not have built it. Every request body is checked against the
SDK's `ResponseCreateParamsStreaming` (tests/support/sdk_wire.py); a body that does not validate is
answered 400, as the API would, and its problems are kept in `problems`.

    with FakeResponsesServer() as server:
        server.enqueue(ResponsesScript().reasoning("Let me look.").text("Hi", "!").stream(usage=(100, 9, 64)))
        ... point an `openai_responses` provider at server.base_url ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from openai import BaseModel as OpenAIModel
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseContentPartAddedEvent,
    ResponseContentPartDoneEvent,
    ResponseCreatedEvent,
    ResponseErrorEvent,
    ResponseFailedEvent,
    ResponseFunctionCallArgumentsDeltaEvent,
    ResponseFunctionCallArgumentsDoneEvent,
    ResponseFunctionToolCall,
    ResponseIncompleteEvent,
    ResponseInProgressEvent,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseReasoningItem,
    ResponseReasoningSummaryPartAddedEvent,
    ResponseReasoningSummaryPartDoneEvent,
    ResponseReasoningSummaryTextDeltaEvent,
    ResponseReasoningSummaryTextDoneEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
    ResponseUsage,
)
from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

from tests.support.sdk_wire import responses_request_problems

from .openai_server import ErrorReply, FakeLLMServer, RecordedRequest, Reply, Stream

ENCRYPTED = "gAAAAABfake-encrypted-reasoning"


def sse(event: OpenAIModel) -> bytes:
    """One event as the API streams it."""
    return f"event: {event.type}\ndata: {event.to_json(indent=None)}\n\n".encode()  # type: ignore[attr-defined]


class ResponsesScript:
    """One streamed response, output item by output item, each event an SDK object."""

    def __init__(self, *, response_id: str = "resp_fake", model: str = "gpt-fake") -> None:
        self.response_id = response_id
        self.model = model
        self.events: list[OpenAIModel] = []
        self.output: list[Any] = []
        self._seq = 0

    def _add(self, cls: type[OpenAIModel], **fields: Any) -> None:
        self.events.append(cls(sequence_number=0, **fields))

    def _response(self, status: str, output: list[Any], **extra: Any) -> Response:
        return Response(
            id=self.response_id,
            created_at=1_700_000_000.0,
            model=self.model,
            object="response",
            output=output,
            parallel_tool_calls=True,
            tool_choice="auto",
            tools=[],
            status=status,
            **extra,
        )

    def reasoning(self, *summaries: str, encrypted: str | None = ENCRYPTED, chunk: int = 6) -> ResponsesScript:
        """A reasoning item: each summary streamed in `chunk`-character deltas, then the encrypted content."""
        index = len(self.output)
        item_id = f"rs_{index}"
        added = ResponseReasoningItem(id=item_id, type="reasoning", summary=[])
        self._add(ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index, item=added)
        for number, text in enumerate(summaries):
            part = {"type": "summary_text", "text": ""}
            common = {"item_id": item_id, "output_index": index, "summary_index": number}
            self._add(ResponseReasoningSummaryPartAddedEvent, type="response.reasoning_summary_part.added", part=part, **common)
            for start in range(0, len(text), chunk):
                self._add(
                    ResponseReasoningSummaryTextDeltaEvent,
                    type="response.reasoning_summary_text.delta",
                    delta=text[start : start + chunk],
                    **common,
                )
            self._add(ResponseReasoningSummaryTextDoneEvent, type="response.reasoning_summary_text.done", text=text, **common)
            self._add(
                ResponseReasoningSummaryPartDoneEvent,
                type="response.reasoning_summary_part.done",
                part={"type": "summary_text", "text": text},
                **common,
            )
        done = ResponseReasoningItem(
            id=item_id,
            type="reasoning",
            summary=[{"type": "summary_text", "text": t} for t in summaries],
            encrypted_content=encrypted,
        )
        self._add(ResponseOutputItemDoneEvent, type="response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return self

    def text(self, *pieces: str) -> ResponsesScript:
        """An assistant message streamed as one delta per piece."""
        index = len(self.output)
        item_id = f"msg_{index}"
        common = {"item_id": item_id, "output_index": index, "content_index": 0}
        added = ResponseOutputMessage(id=item_id, type="message", role="assistant", status="in_progress", content=[])
        self._add(ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index, item=added)
        empty = ResponseOutputText(type="output_text", text="", annotations=[])
        self._add(ResponseContentPartAddedEvent, type="response.content_part.added", part=empty, **common)
        for piece in pieces:
            self._add(ResponseTextDeltaEvent, type="response.output_text.delta", delta=piece, logprobs=[], **common)
        full = "".join(pieces)
        self._add(ResponseTextDoneEvent, type="response.output_text.done", text=full, logprobs=[], **common)
        whole = ResponseOutputText(type="output_text", text=full, annotations=[])
        self._add(ResponseContentPartDoneEvent, type="response.content_part.done", part=whole, **common)
        done = ResponseOutputMessage(id=item_id, type="message", role="assistant", status="completed", content=[whole])
        self._add(ResponseOutputItemDoneEvent, type="response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return self

    def call(self, call_id: str, name: str, *fragments: str) -> ResponsesScript:
        """A function call whose arguments stream as `fragments`."""
        index = len(self.output)
        item_id = f"fc_{index}"
        added = ResponseFunctionToolCall(
            id=item_id, type="function_call", call_id=call_id, name=name, arguments="", status="in_progress"
        )
        self._add(ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index, item=added)
        for fragment in fragments:
            self._add(
                ResponseFunctionCallArgumentsDeltaEvent,
                type="response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=fragment,
            )
        arguments = "".join(fragments)
        self._add(
            ResponseFunctionCallArgumentsDoneEvent,
            type="response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
            name=name,
        )
        done = ResponseFunctionToolCall(
            id=item_id, type="function_call", call_id=call_id, name=name, arguments=arguments, status="completed"
        )
        self._add(ResponseOutputItemDoneEvent, type="response.output_item.done", output_index=index, item=done)
        self.output.append(done)
        return self

    def _numbered(self, events: Sequence[OpenAIModel]) -> list[bytes]:
        out = []
        for number, event in enumerate(events):
            event.sequence_number = number  # type: ignore[attr-defined]
            out.append(sse(event))
        return out

    def _opening(self) -> list[OpenAIModel]:
        return [
            ResponseCreatedEvent(type="response.created", sequence_number=0, response=self._response("in_progress", [])),
            ResponseInProgressEvent(type="response.in_progress", sequence_number=0, response=self._response("in_progress", [])),
        ]

    def stream(
        self, *, usage: tuple[int, ...] = (10, 5), incomplete: str | None = None, **options: Any
    ) -> Stream:
        """The whole stream: created, in_progress, the items' events, completed (or incomplete).
        `usage`: (input, output[, cached[, written to the cache]])."""
        input_tokens, output_tokens, *rest = usage
        cached = rest[0] if rest else 0
        written = rest[1] if len(rest) > 1 else 0
        usage_obj = ResponseUsage(
            input_tokens=input_tokens,
            input_tokens_details=InputTokensDetails(cached_tokens=cached, cache_write_tokens=written),
            output_tokens=output_tokens,
            output_tokens_details=OutputTokensDetails(reasoning_tokens=0),
            total_tokens=input_tokens + output_tokens,
        )
        if incomplete:
            final: OpenAIModel = ResponseIncompleteEvent(
                type="response.incomplete",
                sequence_number=0,
                response=self._response("incomplete", self.output, usage=usage_obj, incomplete_details={"reason": incomplete}),
            )
        else:
            final = ResponseCompletedEvent(
                type="response.completed", sequence_number=0, response=self._response("completed", self.output, usage=usage_obj)
            )
        return Stream(self._numbered([*self._opening(), *self.events, final]), done=False, **options)

    def failed(self, code: str, message: str) -> Stream:
        """The items so far, then `response.failed` with an error."""
        final = ResponseFailedEvent(
            type="response.failed",
            sequence_number=0,
            response=self._response("failed", self.output, error={"code": code, "message": message}),
        )
        return Stream(self._numbered([*self._opening(), *self.events, final]), done=False)

    def error_event(self, code: str, message: str) -> Stream:
        """The items so far, then an `error` event (what the API sends for a stream it gives up)."""
        final = ResponseErrorEvent(type="error", sequence_number=0, code=code, message=message, param=None)
        return Stream(self._numbered([*self._opening(), *self.events, final]), done=False)


def text_response(*pieces: str, usage: tuple[int, ...] = (10, 5)) -> Stream:
    return ResponsesScript().text(*pieces).stream(usage=usage)


def openai_error(status: int, message: str, *, code: str | None = None, retry_after: float | None = None) -> ErrorReply:
    """The API's error body: `{"error": {"message", "type", "param", "code"}}`."""
    kind = "invalid_request_error" if status < 500 else "server_error"
    if status == 429:
        kind = "rate_limit_exceeded"
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return ErrorReply(status, {"error": {"message": message, "type": kind, "param": None, "code": code}}, headers)


class FakeResponsesServer(FakeLLMServer):
    """FakeLLMServer answering `POST .../responses`, refusing bodies the SDK's types reject."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problems: list[str] = []

    def _take(self, request: RecordedRequest) -> Reply:
        path = request.path.split("?", 1)[0]
        problems = responses_request_problems(request.body) if path.endswith("/responses") else [f"no route POST {path}"]
        if not problems and self.api_keys is not None:
            auth = request.headers.get("authorization", "")
            if auth.removeprefix("Bearer ") not in self.api_keys:
                with self._request_seen:
                    self._requests.append(request)
                    self._request_seen.notify_all()
                return openai_error(401, "Incorrect API key provided.", code="invalid_api_key")
        if problems:
            with self._request_seen:
                self.problems.extend(problems)
                self._requests.append(request)
                self._request_seen.notify_all()
            return openai_error(400, "fake server: the request does not validate: " + "; ".join(problems[:5]))
        return super()._take(request)
